"""Every worked example in the rule book, run as written: the device, answers and host it
describes go through the real proposal (with its `mkfs.xfs -N` gate), and the rule's decision must
be what the example says. RULES.md and `xfs-advisor explain` show these same examples."""

from __future__ import annotations

import pytest

from advisor.advice import propose
from advisor.engine.examples import example_device, example_env, example_workload, mismatches
from advisor.engine.rulebook import RuleBook, load_rulebook
from advisor.models.rule import Rule, RuleExample
from advisor.system.versions import lts_configs

BOOK = load_rulebook()
CASES = [(rule, i, ex) for rule in BOOK.all() for i, ex in enumerate(rule.examples)]


def test_every_deciding_rule_has_an_example() -> None:
    deciding = {r.id for r in BOOK.all() if r.decide or r.kind == "policy"}
    with_examples = {r.id for r, _, _ in CASES}
    assert deciding - {"mkfs-check"} <= with_examples, deciding - with_examples
    assert not [r.id for r in BOOK.all() if r.example], "built-in rules use [[examples]]"


@pytest.mark.parametrize(("rule", "index", "example"), CASES,
                         ids=[f"{r.id}-{i}" for r, i, _ in CASES])
def test_example(rule: Rule, index: int, example: RuleExample, book: RuleBook) -> None:
    proposal = propose(example_device(example), example_workload(example),
                       env=example_env(example, lts_configs()), rulebook=book)
    assert mismatches(rule, example, proposal) == [], example.says


def test_a_wrong_expectation_is_caught(book: RuleBook) -> None:
    rule = BOOK.rules["ag-concurrency"].rule
    example = rule.examples[0].model_copy(deep=True)
    example.expect.options = ["-d", "agcount=64"]
    proposal = propose(example_device(example), example_workload(example),
                       env=example_env(example, lts_configs()), rulebook=book)
    assert mismatches(rule, example, proposal) == [
        "-d agcount/agsize: options ['-d', 'agcount=32'], expected ['-d', 'agcount=64'] ("
        + next(d.reason for d in proposal.decisions if d.setting == rule.setting) + ")"]
