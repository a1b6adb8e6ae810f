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
#: Files only this repository has: a user reading a rule cannot look them up.
REPO_ONLY = re.compile(r"\b(?:scripts|tests|advisor)/[\w/.-]+|\b\w+\.py\b")


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


def test_the_repository_pattern_finds_what_it_looks_for() -> None:
    for text in ("scripts/bench_rules_beyond.py swalloc", "tests/engine/test_flush_cost.py",
                 "advisor/engine/load.py", "by fsync_cost.py"):
        assert REPO_ONLY.search(text), text
    for text in ("xfsprogs mkfs/dax_x86_64.conf", "fs/xfs/xfs_log.c", "mkfs.xfs(8) -K",
                 "Documentation/admin-guide/xfs.rst", "lts_5.4.conf"):
        assert not REPO_ONLY.search(text), text


@pytest.mark.parametrize("rule", BOOK.all(), ids=lambda r: r.id)
def test_rule_text_cites_no_repository_file(rule: object) -> None:
    assert not REPO_ONLY.findall(json.dumps(rule.model_dump(mode="json")))  # type: ignore[attr-defined]


def test_rules_md_cites_no_repository_file() -> None:
    assert not REPO_ONLY.findall((REPO / "rules" / "RULES.md").read_text())


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
                text = d.source + " " + d.reason
                assert not PROCESS.findall(text), (rule.id, d.setting)
                assert not REPO_ONLY.findall(text), (rule.id, d.setting, text)
                seen.add(d.source)
            for w in p.warnings:
                assert not REPO_ONLY.findall(w.message), (rule.id, w.message)
    assert len(seen) > 20


def test_block_size_reason_reads_right_when_nothing_is_known() -> None:
    """No kernel and no page size known: one sentence that says so, not "the kernel is unknown
    with an unknown page size mounts no block..."."""
    from advisor.advice import propose
    from advisor.models.environment import Environment
    from advisor.models.workload import Workload
    from tests.engine.helpers import TiB, device

    dev = device(8 * TiB, rotational=False)
    dev = dev.model_copy(update={
        "logical_sector": dev.logical_sector.model_copy(update={"value": 4096}),
        "physical_sector": dev.physical_sector.model_copy(update={"value": 16384})})
    p = propose(dev, Workload(), env=Environment(xfsprogs_version="6.1.0"), check=False)
    reason = next(d.reason for d in p.decisions if d.setting == "-b size")
    assert "the kernel that will mount it is not known (page size not known)" in reason, reason
    assert "is unknown with" not in reason
