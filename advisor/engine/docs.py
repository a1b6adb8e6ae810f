"""The rule reference (rules/RULES.md), generated from the rule files; a test keeps it current."""

from __future__ import annotations

from advisor.engine.rulebook import RuleBook
from advisor.models.rule import Rule

HEADER = """# Rule reference

Generated from the files in this folder by `xfs-advisor rules --markdown > rules/RULES.md`;
do not edit by hand (a test fails when it is stale). See README.md here for the file format.
"""

KIND_TITLES = (("policy", "Policy"), ("mkfs", "mkfs.xfs options"), ("mount", "Mount options"),
               ("device", "Device warnings"), ("obsolete", "Obsolete advice (never emitted)"))


def _rule_section(rule: Rule) -> list[str]:
    out = [f"### `{rule.id}`: {rule.title}", ""]
    facts = [f"source: {rule.source}"]
    if rule.setting:
        facts.append(f"setting: `{rule.setting}`")
    if rule.decide:
        facts.append(f"function: `{rule.decide}`")
        facts.append(f"priority: {rule.priority}")
    out += ["- " + "; ".join(facts), ""]
    if rule.obsolete:
        out += [f"**Obsolete** since {rule.obsolete.since}: "
                + ", ".join(f"`{m}`" for m in rule.obsolete.matches) + ". "
                + rule.obsolete.today, ""]
    for title, text in (("Changes", rule.changes), ("Why", rule.why),
                        ("When not", rule.when_not), ("Example", rule.example)):
        if text:
            out += [f"**{title}.** {text}", ""]
    if rule.examples:
        out += ["**Examples** (each is run by the test suite as written):", "",
                *[f"- {ex.says}" for ex in rule.examples], ""]
    if rule.params:
        out += ["Parameters: " + ", ".join(f"`{k}`" for k in rule.params), ""]
    if rule.references:
        out += ["References:", *[f"- {r}" for r in rule.references], ""]
    return out


def rules_markdown(book: RuleBook) -> str:
    lines = [HEADER]
    for kind, title in KIND_TITLES:
        rules = book.of_kind(kind)
        if not rules:
            continue
        lines += [f"## {title}", ""]
        for rule in rules:
            lines += _rule_section(rule)
    return "\n".join(lines).rstrip() + "\n"
