"""Counts of work that the load does not move (allocations per directory operation): how they are
read from the counters' snapshots and how a run decides on them. Logic only: the counts are
written here, nothing is measured (scripts/bench_validate.py measures how often and how fast the
real runs decide)."""

from __future__ import annotations

import math
import random
from pathlib import Path

from advisor.bench import counters, stats, verdicts
from advisor.models.bench import MetricResult, SideConfig
from advisor.models.rule import MechanismClaim
from advisor.render import verdict as summary

ALLOCS = "extent_allocs_per_1k_dirops"
#: -n size='s claim, as rules/mkfs/dir-block-size.toml makes it.
CLAIM = ("dir-block-size", MechanismClaim(option="-n size=", counter=ALLOCS, expect="less"))
A = SideConfig(label="A")
B = SideConfig(label="B", mkfs_options=["-n", "size=64k"])


def _judge(a: list[float], b: list[float]) -> MetricResult:
    [m] = verdicts._judge_mechanisms({ALLOCS: {"A": a, "B": b}}, {ALLOCS: ["-n size=64k"]})
    return m


def test_allocations_span_the_directory_phases_per_directory_operation(tmp_path: Path) -> None:
    def snap(phase: str, allocs: int) -> None:
        (tmp_path / f"counters.{phase}").write_text(f"extent_alloc {allocs} 0 0 0\n"
                                                    "log 0 0 0 0 0\n")

    for phase, allocs in (("create", 3), ("delete", 520), ("refill", 520), ("stat", 551)):
        snap(phase, allocs)
    values = counters.mechanism_values(str(tmp_path), ["create", "delete", "refill", "stat"],
                                       {"create": 20_000, "delete": 2_000, "refill": 2_000})
    # 548 allocations (the directory's blocks and the inode chunks) over 24,000 operations.
    assert values[ALLOCS] == 548 * 1000 / 24_000


def test_the_same_count_in_every_round_decides_at_the_first_look() -> None:
    # Measured on a loop device at load 14: 13.894 against 24.136 in each of 4 pairs.
    m = _judge([24.136] * 4, [13.894] * 4)
    assert (m.verdict, m.decided_after) == ("better", 3)
    assert m.ci[0] < m.ratio < m.ci[1] < 0.6  # an interval, not a point
    [check] = counters.check_claims([CLAIM], A, B, [m])
    assert check.seen == "seen"
    assert summary.headline_verdict([], [m], [check]) == "better"
    # The same counts the other way round are the claim's opposite, and the word is worse.
    m = _judge([13.894] * 4, [24.136] * 4)
    [check] = counters.check_claims([CLAIM], A, B, [m])
    assert (m.verdict, check.seen) == ("worse", "opposite")
    assert summary.headline_verdict([], [m], [check]) == "worse"


def test_a_few_percent_in_exact_counts_still_decides_at_four_pairs() -> None:
    assert _judge([100.0] * 4, [97.0] * 4).verdict == "better"


def test_counts_that_agree_exactly_are_equivalent_within_an_interval_of_some_width() -> None:
    m = _judge([24.136] * 4, [24.136] * 4)
    assert m.verdict == "equivalent"
    assert m.ci[0] < 1.0 < m.ci[1]


def test_a_one_count_difference_repeated_by_chance_decides_nothing() -> None:
    # 680 allocations against 681 in every pair: without a least spread the pairs agree
    # exactly, the interval has width 0 and would call a direction.
    d = math.log(681 / 680)
    assert stats.cs_radius(4, 0.0, 0.05) == 0.0
    lo, hi = stats.running_interval([d] * 4, 0.05)
    assert lo < 0.0 < hi
    assert _judge([680.0] * 4, [681.0] * 4).verdict in ("equivalent", "inconclusive")


def test_whole_counts_of_an_aa_run_call_a_direction_at_most_alpha_over_every_look() -> None:
    # A/A with whole counts that vary by a count or two (both sides alike), looked at after
    # every block from 4 to 20 pairs: false directions stay under the primary's alpha.
    rng = random.Random(7)
    runs, false = 1000, 0
    for _ in range(runs):
        a: list[float] = []
        b: list[float] = []
        for _pair in range(20):
            a.append(680 + rng.choice((-1, 0, 0, 1)))
            b.append(680 + rng.choice((-1, 0, 0, 1)))
            if len(a) >= 4 and len(a) % 2 == 0 and _judge(a, b).verdict in ("better", "worse"):
                false += 1
                break
    assert false / runs <= verdicts.ALPHA, false
