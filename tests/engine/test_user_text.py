"""What a storage engineer reads names what they can look up (the guide's sections, man pages,
kernel documentation, xfsprogs files, commits), never how the tool was made: no tracker numbers,
no internal notes, in the rule book, RULES.md, the schemas, `explain` and every `--json`
source."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.advice import propose
from advisor.engine.examples import example_device, example_env, example_workload
from advisor.engine.rulebook import RuleBook, load_rulebook
from advisor.system.versions import lts_configs

REPO = Path(__file__).resolve().parents[2]
PROCESS = re.compile(r"\bissue \d|\bitem \d+\.\d|xfs-facts|\bround \d|\breviewer|\bhelper\b"
                     r"|\bthe lead\b", re.IGNORECASE)
BOOK = load_rulebook()


def test_the_pattern_finds_what_it_looks_for() -> None:
    for text in ("issue 15 (beyond the 2014 guide)", "xfs-facts", "Item 17.9", "round 3"):
        assert PROCESS.search(text), text
    assert not PROCESS.search("guide 2.1.4; xfs(5): sunit; leads to")


@pytest.mark.parametrize("rule", BOOK.all(), ids=lambda r: r.id)
def test_rule_text_names_what_a_reader_can_look_up(rule: object) -> None:
    assert not PROCESS.findall(json.dumps(rule.model_dump(mode="json")))  # type: ignore[attr-defined]


@pytest.mark.parametrize("path", ["rules/RULES.md", *sorted(
    str(p.relative_to(REPO)) for p in (REPO / "advisor" / "data" / "schemas").glob("*.json"))])
def test_generated_text_has_no_process_words(path: str) -> None:
    assert not PROCESS.findall((REPO / path).read_text()), path


def test_explain_swalloc() -> None:
    out = subprocess.run([sys.executable, "-m", "advisor", "explain", "swalloc"],
                         capture_output=True, text=True, check=True).stdout
    assert "swalloc" in out and not PROCESS.findall(out), out


def test_every_decision_source_of_every_example(book: RuleBook) -> None:
    """Every example's proposal (as --json prints it): its decisions' sources and reasons."""
    seen = set()
    for rule in BOOK.all():
        for example in rule.examples:
            p = propose(example_device(example), example_workload(example),
                        env=example_env(example, lts_configs()), rulebook=book)
            for d in p.decisions:
                assert not PROCESS.findall(d.source + " " + d.reason), (rule.id, d.setting)
                seen.add(d.source)
    assert len(seen) > 20
