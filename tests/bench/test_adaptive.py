"""The adaptive rounds' stopping rule, the report's record of it, and "more rounds": pure parts on
made-up samples, and one short real continuation on a loop device."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.bench.plan import Plan, continuation, primaries, suggested_more
from advisor.bench.verdicts import judge, reason_to_stop
from advisor.errors import BadInput
from advisor.models.bench import BenchEnvironment, SideConfig, Timing, ValidationReport
from advisor.models.limits import MAX_PAIRS
from advisor.models.workload import Workload
from advisor.render.validation import render_text
from tests.conftest import REPO, require_root_tools, sh

SMALL = Workload(largest_directory_entries=5000, concurrent_writers=1, fsyncs_per_second=0,
                 median_file_size=4096)


def _plan(**kw: object) -> Plan:
    return Plan(a=SideConfig(label="A"), b=SideConfig(label="B", mount_options=["noatime"]),
                workload=SMALL, device_bytes=1 << 30, **kw)  # type: ignore[arg-type]


def _samples(plan: Plan, pairs: int, ratio: float, noise: float,
             seed: int = 1) -> dict[str, dict[str, list[float]]]:
    rng = random.Random(seed)
    out = {}
    for m in plan.shape.metrics:
        a = [1000 * math.exp(rng.gauss(0, noise)) for _ in range(pairs)]
        out[m.name] = {"A": a, "B": [x * ratio * math.exp(rng.gauss(0, noise)) for x in a]}
    return out


def _look(plan: Plan, samples: dict[str, dict[str, list[float]]], done: int, *,
          elapsed: float = 1.0, block: float = 10.0, stop: bool = False) -> str | None:
    return reason_to_stop(plan, done, 0, [], samples, {}, primaries(plan), elapsed, block,
                        lambda: stop)


def test_plan_rounds_to_whole_abba_blocks_and_calibration_is_fixed() -> None:
    plan = _plan(pairs=7, max_pairs=9)
    assert (plan.pairs, plan.most_pairs, plan.fixed) == (8, 10, False)
    assert plan.planned_pairs == 10  # the minimum in half the budget, within the cap
    assert _plan(calibrate=True, max_pairs=50).fixed
    assert _plan(pairs=6, max_pairs=6).fixed
    assert _plan().most_pairs == MAX_PAIRS
    # the workload is scaled for twice the minimum: each side gets half a fixed design's time
    assert _plan().measure_seconds_per_side < _plan(max_pairs=4).measure_seconds_per_side


def test_stopping_rule() -> None:
    plan = _plan(budget_seconds=100)
    # No rule claims a counter for noatime in this plan: its primary metric is the fallback.
    assert [(p.option, p.name) for p in primaries(plan)] == [("noatime", "dirops_per_cpu_s")]
    clear = _samples(plan, 8, 0.5, 0.01)
    noisy = _samples(plan, 8, 1.0, 0.3)
    assert _look(plan, clear, 2) is None  # no look before the minimum
    assert _look(plan, clear, 4) == "resolved"
    assert _look(plan, noisy, 6) is None
    # The pairs the budget was sized for are the most it runs: the progress total said them.
    assert plan.run_limit == 8 and _look(plan, noisy, 8) == "budget"
    # The budget counts everything: a block as slow as the slowest (10 s) and the clean-up
    # would overrun it.
    assert _look(plan, noisy, 6, elapsed=88.0) == "budget"
    assert _look(plan, noisy, 6, elapsed=80.0) is None
    assert _look(plan, noisy, 6, stop=True) == "cancelled"
    capped = _plan(max_pairs=8)
    assert _look(capped, noisy, 8) == "max rounds"
    fixed = _plan(pairs=6, max_pairs=6)
    assert _look(fixed, _samples(fixed, 6, 0.5, 0.01), 6) == "max rounds"  # no early "resolved"


def test_the_run_stops_when_the_primary_metric_is_decided_whatever_the_others() -> None:
    plan = _plan(budget_seconds=1000)
    samples = _samples(plan, 6, 1.0, 0.4, seed=5)  # every secondary metric hopelessly noisy
    rng = random.Random(9)
    a = [1000 * math.exp(rng.gauss(0, 0.01)) for _ in range(6)]
    samples["dirops_per_cpu_s"] = {"A": a, "B": [x * 0.75 for x in a]}
    assert _look(plan, samples, 6) == "resolved"


def test_the_budget_counts_the_slowest_block_and_the_clean_up() -> None:
    plan = _plan(budget_seconds=60)
    noisy = _samples(plan, 4, 1.0, 0.3)
    # 30 s in: a block of 20 s fits the rest once, one of 28 s (and the clean-up) does not.
    assert _look(plan, noisy, 4, elapsed=30.0, block=20.0) is None
    assert _look(plan, noisy, 4, elapsed=30.0, block=28.0) == "budget"


def test_the_budget_is_a_cap_before_the_minimum_pairs_too() -> None:
    """2 pairs of the minimum 4 ran in 40 s of a 60 s budget with 18 s blocks: the second block
    would end at 61 s, so the run stops there (it used to run the minimum whatever it cost); a
    run stopped short can still be continued."""
    plan = _plan(budget_seconds=60)
    noisy = _samples(plan, 2, 1.0, 0.3)
    looks: list[int] = []
    assert reason_to_stop(plan, 2, 0, looks, noisy, {}, primaries(plan), 40.0, 18.0,
                        None) == "budget"
    assert looks == []  # no look at the verdicts before the minimum
    assert _look(plan, noisy, 2, elapsed=20.0, block=18.0) is None
    env = BenchEnvironment(device="/dev/loop7", device_size_bytes=1 << 30,
                           loop_backing_file="/var/tmp/xfs-advisor-x/scratch.img")
    short = judge(plan, noisy, infos={}, env=env, shape=plan.shape, age=None,
                  timing=Timing(wall_seconds=58.0, measuring_seconds=20.0,
                                measuring_share=0.34),
                  recovered=[], store=None, stopping=("budget", [], 0))
    assert short.rounds == 2 and short.verdict == "inconclusive"
    more = continuation(short, 2)
    assert more.prior is not None and (more.prior.pairs, more.pairs) == (2, 4)


def _report(pairs: int = 6, ratio: float = 0.9, noise: float = 0.1) -> ValidationReport:
    plan = _plan()
    env = BenchEnvironment(device="/dev/loop7", device_size_bytes=1 << 30,
                           loop_backing_file="/var/tmp/xfs-advisor-x/scratch.img")
    return judge(plan, _samples(plan, pairs, ratio, noise), infos={}, env=env, shape=plan.shape,
                 age=None, timing=Timing(wall_seconds=30.0, measuring_seconds=20.0,
                                         measuring_share=0.667),
                 recovered=[], store=None, stopping=("budget", [pairs], 0))


def test_report_says_why_it_stopped_and_what_is_open() -> None:
    report = _report()
    st = report.stopping
    assert st is not None and st.reason == "budget" and st.looks == [6]
    assert report.schema_version == 2 and report.rounds == 6 and len(report.order) == 12
    open_ = [m for m in report.metrics if m.verdict == "inconclusive"]
    assert open_ and len(st.open) >= len(open_)
    for m in open_:
        assert len(m.still_possible) >= 2  # it straddles a boundary: two verdicts are open
    text = render_text(report, with_plot=False, saved="/var/tmp/report.json")
    assert "6 pairs" in text and "stopped: the budget ran out after 6 pairs" in text
    assert "Still open:" in text and "validate --continue /var/tmp/report.json" in text
    assert "confidence sequences" in text


def test_continuation_keeps_the_samples_and_goes_on() -> None:
    report = _report()
    plan = continuation(report, 3)
    assert plan.prior is not None and plan.prior.pairs == 6
    assert (plan.pairs, plan.most_pairs) == (6, 10)  # 3 more pairs: two ABBA blocks
    first = report.metrics[0]
    assert plan.prior.samples[first.name] == {"A": first.a, "B": first.b}
    assert plan.prior.margins[first.name] == first.margin
    assert plan.shape.as_dict() == report.workload
    assert plan.b.mount_options == ["noatime"] and plan.b.xfs_info is None
    assert suggested_more(report) % 2 == 0 and suggested_more(report) >= 2


def test_continuation_refuses_what_cannot_go_on() -> None:
    with pytest.raises(BadInput, match="fixed design"):
        continuation(_report().model_copy(update={"calibrate": True}))
    scratch = _report()
    scratch.environment.loop_backing_file = None
    with pytest.raises(BadInput, match="loop device"):
        continuation(scratch)
    with pytest.raises(BadInput, match="not this version's"):
        continuation(_report().model_copy(update={"workload": {"entries": 5}}))


def test_continue_on_a_loop_device(tmp_path: Path) -> None:
    """`validate --continue`: two more pairs on a fresh loop device, the six given kept."""
    require_root_tools("losetup", "mkfs.xfs", "fio", "xfs_info", "mount")
    earlier = tmp_path / "earlier.json"
    earlier.write_text(_report().model_dump_json(), encoding="utf-8")
    env = {"XFS_ADVISOR_STATE_DIR": str(tmp_path / "state"),
           "XFS_ADVISOR_CALIBRATION": str(tmp_path / "calibration.json")}
    proc = subprocess.run(
        [sys.executable, "-m", "advisor", "validate", "--json", "--continue", str(earlier),
         "--max-rounds", "8", "--budget", "10", "--loop-dir", str(tmp_path / "work")],
        capture_output=True, text=True, cwd=REPO, timeout=300,
        env={**os.environ, **env})
    assert proc.returncode in (0, 5), proc.stderr
    report = json.loads(proc.stdout)
    given = json.loads(earlier.read_text())
    assert report["rounds"] == 8 and report["stopping"]["continued_from"] == 6
    assert report["stopping"]["looks"] == [6, 8]
    assert report["stopping"]["reason"] in ("max rounds", "resolved")
    for m, old in zip(report["metrics"], given["metrics"], strict=True):
        assert m["a"][:6] == old["a"] and m["b"][:6] == old["b"] and len(m["a"]) == 8
        assert m["margin"] == old["margin"]
    assert report["b"]["mount_options"] == ["noatime"]
    assert report["b"]["xfs_info"]  # B's filesystem was made again here
    assert [line for line in sh("losetup", "-a").stdout.splitlines()
            if str(tmp_path) in line] == []
