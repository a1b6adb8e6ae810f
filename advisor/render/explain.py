"""The proposal and the rules as text for people: the command, the fstab line, then each
decision with its reason; a rule with what it changes, why, when not to, and references."""

from __future__ import annotations

import textwrap

from advisor.models.proposal import ProposalDocument
from advisor.models.rule import Rule
from advisor.models.units import human_size
from advisor.render.fstab import UUID_PLACEHOLDER
from advisor.render.inert import terminal

WIDTH = 100


def _wrap(text: str, indent: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent) or [indent]


def proposal_text(doc: ProposalDocument) -> str:
    p, d = doc.proposal, doc.device
    size = human_size(d.size_bytes.value) if d.size_bytes.value else "size unknown"
    lines = [f"Proposal for {d.path} ({size})", "", "  " + p.mkfs_command, "",
             "  fstab: " + p.fstab,
             f"  ({UUID_PLACEHOLDER} stands for the UUID mkfs.xfs prints; "
             "`blkid -s UUID -o value DEV` shows it later)", "", "Decisions:"]
    for dec in p.decisions:
        if dec.changed:
            head = f"  {dec.setting}: {dec.value} (default {dec.default})"
        else:
            head = f"  {dec.setting}: keep the default ({dec.default})"
        lines.append(head)
        lines += _wrap(dec.reason, "      ")
        if dec.resolution:
            lines += _wrap("resolved: " + dec.resolution, "      ")
        lines.append(f"      [{dec.rule}, {dec.source}; changeable later: {dec.changeable_later}]")
    if p.disabled_rules:
        lines += ["", "Rules this site switched off:"]
        for rule_id, why in p.disabled_rules.items():
            lines += _wrap(f"- {rule_id}: {why}", "  ")
    if p.warnings:
        lines += ["", "Warnings:"]
        for w in p.warnings:
            lines += _wrap(f"! {w.message} [{w.rule}]", "  ")
    if p.check:
        lines += ["", f"Checked with `{' '.join(p.check.argv)}` ({p.check.method} of the device's "
                  "size, never the device)"]
    # Each line one line, whatever the device or the workload file put in a path or a reason.
    return "\n".join(terminal(line) for line in lines) + "\n"


def rule_text(rule: Rule) -> str:
    lines = [f"{rule.id}: {rule.title}", f"  kind: {rule.kind}   source: {rule.source}"]
    if rule.setting:
        lines.append(f"  setting: {rule.setting}   priority: {rule.priority}")
    if rule.obsolete:
        lines += ["", "  OBSOLETE: never proposed.",
                  f"  matches: {', '.join(rule.obsolete.matches)}",
                  f"  obsolete since: {rule.obsolete.since}"]
        lines += _wrap("today: " + rule.obsolete.today, "  ")
    for title, text in (("changes", rule.changes), ("why", rule.why), ("when not", rule.when_not),
                        ("example", rule.example)):
        if text:
            lines += ["", f"  {title}:", *_wrap(text, "    ")]
    if rule.examples:
        lines += ["", "  examples (each one is run by the test suite as written):"]
        for ex in rule.examples:
            lines += _wrap("- " + ex.says, "    ")
    if rule.params:
        lines += ["", "  parameters (thresholds and tables, from the rule file):"]
        lines += [f"    {k} = {v}" for k, v in rule.params.items()]
    if rule.references:
        lines += ["", "  references:"] + [f"    - {r}" for r in rule.references]
    return "\n".join(lines) + "\n"
