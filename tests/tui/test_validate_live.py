"""Step 4 while it runs: each side's values reach the per-metric plots as soon as they are
measured, and a cancel after the first sample still leaves nothing mounted or attached."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

import pytest

from advisor.models.workload import Workload
from advisor.tui.validate import MetricPlot
from tests.conftest import require_root_tools
from tests.tui.conftest import AppFactory


def _ours(tmp_path: Path) -> list[str]:
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    mounts = Path("/proc/mounts").read_text()
    return [line for line in (loops + mounts).splitlines() if str(tmp_path) in line]


def _plots(app: object) -> dict[str, MetricPlot]:
    return {p.metric: p for p in app.screen.query(MetricPlot)}  # type: ignore[attr-defined]


async def test_plots_fill_in_while_the_run_goes(make_app: AppFactory, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    require_root_tools("losetup", "mkfs.xfs", "fio", "mount", "xfs_info")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("XFS_ADVISOR_CALIBRATION", str(tmp_path / "calibration.json"))
    monkeypatch.setenv("XFS_ADVISOR_STATE_DIR", str(tmp_path / "state"))
    # The cheapest shape: a small directory, no fsync or sequential phases.
    workload = Workload(largest_directory_entries=5000, fsyncs_per_second=0,
                        median_file_size=4096)
    app = make_app(device="loop0", workload=workload, start="validate")
    app.state.validation_bytes = 1 << 30
    app.state.validation_budget = 30.0
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert _plots(app) == {}  # nothing measured yet, nothing plotted
        await pilot.press("ctrl+r")
        deadline = time.monotonic() + 30
        while "creates_per_s" not in _plots(app):
            assert time.monotonic() < deadline, "no sample within 30 s"
            assert app.screen.running, "the run ended before a sample arrived"  # type: ignore[attr-defined]
            await asyncio.sleep(0.1)
        await pilot.pause()
        assert app.screen.report is None  # type: ignore[attr-defined]  # live, not the report
        creates = _plots(app)["creates_per_s"]
        assert creates.is_mounted
        assert len(creates.values["A"]) >= 1 and creates.values["A"][0] > 0  # ABBA: A first
        assert set(_plots(app)) == {"creates_per_s", "creates_per_cpu_s", "deletes_per_s",
                                    "refill_creates_per_s", "stats_per_s"}
        started = time.monotonic()
        await pilot.press("escape")
        while app.screen.running:  # type: ignore[attr-defined]
            assert time.monotonic() - started < 30, "cancel took over 30 s"
            await asyncio.sleep(0.1)
        await pilot.pause()
        assert "cancelled" in str(app.screen.query_one("#step").render())
    assert _ours(tmp_path) == []
