"""The proposal and the rules as text for people: the command, the fstab line, the warnings and
the changes, then each default kept with its reason; a rule with what it changes, why, when not
to, and references."""

from __future__ import annotations

import textwrap

from advisor.models.proposal import Decision, ProposalDocument, Question
from advisor.models.rule import Rule
from advisor.models.units import human_size
from advisor.render.fstab import UUID_PLACEHOLDER
from advisor.render.inert import terminal

WIDTH = 100


def _wrap(text: str, indent: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent) or [indent]


def _decision_lines(dec: Decision) -> list[str]:
    if dec.changed:
        lines = [f"  {dec.setting}: {dec.value} (default {dec.default})"]
    else:
        lines = [f"  {dec.setting}: keep the default ({dec.default})"]
    lines += _wrap(dec.reason, "      ")
    if dec.resolution:
        lines += _wrap("resolved: " + dec.resolution, "      ")
    lines.append(f"      [{dec.rule}, {dec.source}; changeable later: {dec.changeable_later}]")
    return lines


def _wrap_items(head: str, items: list[str]) -> list[str]:
    """`head` then the items, comma-separated, wrapped between items (never inside `-m rmapbt`)."""
    lines, line = [], head
    for i, item in enumerate(items):
        piece = item + ("," if i < len(items) - 1 else "")
        if len(line) + 1 + len(piece) > WIDTH:
            lines.append(line)
            line = "  " + piece
        else:
            line += " " + piece
    return [*lines, line]


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def question_summary(questions: list[Question]) -> str:
    """`1 answer would change this: access` ("" when none would)."""
    names = list(dict.fromkeys(q.answer for q in questions))
    if not names:
        return ""
    return f"{_count(len(names), 'answer')} would change this: {', '.join(names)}"


def proposal_text(doc: ProposalDocument, *, brief: bool = False) -> str:
    """What a person reads first comes first: the command, the fstab line, the warnings and the
    changed settings; then every setting kept at mkfs.xfs's default with its reason (`brief`:
    only their names)."""
    p, d = doc.proposal, doc.device
    size = human_size(d.size_bytes.value) if d.size_bytes.value else "size unknown"
    changed = [dec for dec in p.decisions if dec.changed]
    kept = [dec for dec in p.decisions if not dec.changed]
    summary = f"{_count(len(changed), 'change')}, {_count(len(p.warnings), 'warning')}"
    asked = question_summary(p.questions)
    if asked:
        summary += f"; {asked}"
    lines = [f"Proposal for {d.path} ({size}): {summary}", "", "  " + p.mkfs_command, "",
             "  fstab: " + p.fstab,
             f"  ({UUID_PLACEHOLDER} stands for the UUID mkfs.xfs prints; "
             "`blkid -s UUID -o value DEV` shows it later)"]
    if p.warnings:
        lines += ["", "Warnings:"]
        for w in p.warnings:
            lines += _wrap(f"! {w.message} [{w.rule}]", "  ")
    if p.questions:
        lines += ["", "Questions (the answer decides: give it as the flag or the answers file's "
                  "key):"]
        for q in p.questions:
            flag = "--" + q.answer.replace("_", "-")
            lines += _wrap(f"? {q.answer} ({flag}): {q.message}; {q.setting} kept until "
                           f"answered [{q.rule}]", "  ")
    lines += ["", "Changes from mkfs.xfs's defaults:" if changed
              else "Changes from mkfs.xfs's defaults: none"]
    for dec in changed:
        lines += _decision_lines(dec)
    if brief:
        if kept:
            lines += ["", *_wrap_items(f"Kept at the default ({len(kept)}):",
                                       [dec.setting for dec in kept]),
                      "  (without --brief: each with its reason)"]
    else:
        if kept:
            lines += ["", f"Kept at the default ({len(kept)}):"]
        for dec in kept:
            lines += _decision_lines(dec)
        if p.disabled_rules:
            lines += ["", "Rules this site switched off:"]
            for rule_id, why in p.disabled_rules.items():
                lines += _wrap(f"- {rule_id}: {why}", "  ")
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
