"""execute(on_sample=...): each side's values reach the caller as soon as fio has been read, with
every metric of advisor.bench.jobs.METRICS, on a real (shortened) loop-device run."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.bench.jobs import METRICS
from advisor.bench.plan import Plan
from advisor.bench.run import execute
from advisor.models.bench import SideConfig
from advisor.models.workload import Workload
from tests.conftest import leftovers, require_root_tools


class _Enough(Exception):
    """Raised by the callback once both sides were seen: ends the run early (and tests that an
    exception from the callback is cleaned up like any failure)."""


def test_on_sample_gets_every_metric_for_each_side(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    require_root_tools("losetup", "mkfs.xfs", "fio", "xfs_info", "mount")
    monkeypatch.setenv("XFS_ADVISOR_STATE_DIR", str(tmp_path / "state"))
    # Unknown fsync rate and file size: every phase runs, so every metric is measured.
    plan = Plan(a=SideConfig(label="A"), b=SideConfig(label="B"),
                workload=Workload(largest_directory_entries=5000), device_bytes=1 << 30,
                loop_dir=str(tmp_path / "work"), budget_seconds=20)
    assert {m.name for m in plan.shape.metrics} == {m.name for m in METRICS}
    seen: list[tuple[str, int, dict[str, float]]] = []
    steps: list[str] = []

    def on_sample(side: str, round_index: int, values: dict[str, float]) -> None:
        seen.append((side, round_index, values))
        if {s for s, _, _ in seen} == {"A", "B"}:
            raise _Enough

    with pytest.raises(_Enough):
        execute(plan, progress=lambda done, total, what: steps.append(what),
                on_sample=on_sample)
    # ABBA: the first pair is A then B; each sample follows its own side's step.
    assert [(side, index) for side, index, _ in seen] == [("A", 0), ("B", 0)]
    # The untimed pilot first (it measures this machine's rate; it gives no sample), then the
    # pair's sides.
    assert steps == ["pilot: this machine's rate", "pair 1 of at most 8, side A",
                     "pair 1 of at most 8, side B"]
    for _, _, values in seen:
        assert list(values) == [m.name for m in METRICS]
        assert all(v > 0 for v in values.values())
    assert leftovers(tmp_path) == []
