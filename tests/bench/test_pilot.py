"""Phases sized from the pilot's measurement of this machine, not from a constant: the sizing
logic on written figures (nothing timed here)."""

from __future__ import annotations

import json

from advisor.bench import jobs
from advisor.bench.plan import (
    METADATA_OVERHEAD,
    MIN_MEASURE_SECONDS,
    MIN_PAIRS_SHARE,
    TEARDOWN_SECONDS,
    Pilot,
    Plan,
    sized_for,
)
from advisor.models.bench import SideConfig
from advisor.models.workload import Workload

WORK = Workload(concurrent_writers=1, fsyncs_per_second=100, median_file_size=4096)


def _plan(budget: float, pilot: Pilot | None, **kw: object) -> Plan:
    kw.setdefault("workload", WORK)
    return Plan(a=SideConfig(label="A"), b=SideConfig(label="B", mount_options=["noatime"]),
                    budget_seconds=budget, pilot=pilot, **kw)  # type: ignore[arg-type]


def test_a_quiet_machine_gets_the_planned_pairs_and_a_bigger_directory() -> None:
    quiet = Pilot(ops_rate=40_000.0, side_overhead=3.0, spent=5.0)
    measure, pairs = sized_for(80.0, quiet, 8, 4)
    # (80 - 5 - 3) / 16 sides = 4.5 s a side, 3 s of it overhead: 1.15 s of fio
    assert pairs == 8 and abs(measure - 1.5 / 1.3) < 1e-9
    # A large directory asked for, and a budget that lets it grow past the 30,000 floor: the
    # pilot's rate decides how large.
    slow_rate = Pilot(ops_rate=10_000.0, side_overhead=3.0, spent=5.0)
    big = Workload(largest_directory_entries=10**6, fsyncs_per_second=0)
    fast_dir = _plan(600.0, quiet, workload=big).shape.directory_entries
    slow_dir = _plan(600.0, slow_rate, workload=big).shape.directory_entries
    assert fast_dir > slow_dir > jobs.LARGE_DIRECTORY_FLOOR
    assert abs(fast_dir / slow_dir - 4.0) < 0.01


def test_the_minimum_pairs_leave_room_for_a_block_slower_than_the_pilot_said() -> None:
    """Twice the minimum does not fit: the minimum pairs are sized to 3/4 of what is left, so a
    block a third slower than foretold still lets the run reach its first look."""
    busy = Pilot(ops_rate=15_000.0, side_overhead=3.0, spent=10.0)
    measure, pairs = sized_for(80.0, busy, 8, 4)
    left = 80.0 - busy.spent - TEARDOWN_SECONDS
    assert pairs == 4 and measure > MIN_MEASURE_SECONDS
    sides = 8 * (busy.side_overhead + measure * (1 + METADATA_OVERHEAD))
    assert abs(sides - MIN_PAIRS_SHARE * left) < 1e-9
    assert sides / MIN_PAIRS_SHARE <= left + 1e-9


def test_a_busy_machine_shrinks_to_the_minimum_pairs_rather_than_overrun() -> None:
    """At load the pilot's steps took 5 s: a side costs 10 s besides fio. 16 sides do not fit
    80 s; the 8 sides of the minimum 4 pairs do, with shorter phases."""
    busy = Pilot(ops_rate=15_000.0, side_overhead=6.0, spent=10.0)
    measure, pairs = sized_for(80.0, busy, 8, 4)
    assert pairs == 4 and measure >= MIN_MEASURE_SECONDS
    assert 8 * (busy.side_overhead + measure * (1 + METADATA_OVERHEAD)) \
        <= 80.0 - busy.spent - TEARDOWN_SECONDS + 1e-9
    stalled = Pilot(ops_rate=15_000.0, side_overhead=12.0, spent=10.0)
    assert sized_for(80.0, stalled, 8, 4) == (MIN_MEASURE_SECONDS, 4)


def test_calibration_is_sized_for_its_fixed_pairs() -> None:
    """--calibrate is a fixed design: sized for its pairs within the budget, not for twice."""
    busy = Pilot(ops_rate=15_000.0, side_overhead=4.0, spent=8.0)
    plan = _plan(120.0, busy, calibrate=True, pairs=4)
    assert plan.planned_pairs == 4
    measure = plan.measure_seconds_per_side
    assert 8 * (busy.side_overhead + measure * (1 + METADATA_OVERHEAD)) \
        <= 120.0 - busy.spent - TEARDOWN_SECONDS + 1e-9


def test_the_rate_used_is_the_pilots_within_bounds() -> None:
    def entries(rate: float) -> int:
        return jobs.shape_for(Workload(largest_directory_entries=10**7), measure_seconds=20.0,
                              fs_bytes=4 << 30, ops_rate=rate).directory_entries

    assert entries(20_000.0) == 2 * entries(10_000.0)
    assert entries(1.0) == entries(jobs.PILOT_RATES[0])  # a stalled pilot: not a dozen files
    assert entries(1e9) == entries(jobs.PILOT_RATES[1])


def test_the_pilot_job_and_its_rate() -> None:
    text = jobs.pilot_jobfile("mnt")
    assert "directory=mnt/big" in text and f"nrfiles={jobs.PILOT_ENTRIES}" in text
    doc = {"jobs": [{"jobname": "create", "error": 0,
                     "write": {"iops": 12345.6, "runtime": 162, "total_ios": 2000},
                     "read": {"iops": 0.0, "runtime": 0, "total_ios": 0}}]}
    assert jobs.pilot_rate(json.dumps(doc)) == (12345.6, 0.162)


def test_the_plan_says_the_pilot() -> None:
    assert any("pilot" in line for line in _plan(80.0, None).commands())


def test_a_large_directory_gives_way_to_the_cap_once_measured() -> None:
    """Asked for 200,000 entries on a slow machine: before the pilot the plan shows the 30,000
    floor; once measured, the cap wins and the directory is what fits."""
    big = Workload(largest_directory_entries=200_000, fsyncs_per_second=0)
    slow = Pilot(ops_rate=10_000.0, side_overhead=6.0, spent=10.0)
    assert _plan(80.0, None, workload=big).shape.directory_entries == jobs.LARGE_DIRECTORY_FLOOR
    measured = _plan(80.0, slow, workload=big).shape
    assert jobs.MIN_DIRECTORY_ENTRIES <= measured.directory_entries < jobs.LARGE_DIRECTORY_FLOOR
    # The minimum pairs in 3/4 of what is left: (80 - 10 - 3) * 0.75 / 8 sides - 6 s = 0.28 s
    # a side, under the least fio time: 1 s of fio, 70% of it the directory's, at 10,000
    # creates/s and 1.4 operations per entry: 5,000 entries
    assert measured.directory_entries == 5000
