"""Step 4 while it runs: each side's values reach the per-metric plots as soon as they are
measured, and a cancel after the first sample still leaves nothing mounted or attached."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from advisor.models.workload import Workload
from advisor.tui.validate import MetricPlot
from tests.conftest import leftovers, own_tmpdir, require_root_tools
from tests.tui.conftest import AppFactory, cancel_run


def _plots(app: object) -> dict[str, MetricPlot]:
    return {p.metric: p for p in app.screen.query(MetricPlot)}  # type: ignore[attr-defined]


async def test_plots_fill_in_while_the_run_goes(make_app: AppFactory, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    require_root_tools("losetup", "mkfs.xfs", "fio", "mount", "xfs_info")
    own_tmpdir(tmp_path, monkeypatch)
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
        assert set(_plots(app)) == {"creates_per_s", "creates_per_cpu_s", "dirops_per_cpu_s",
                                    "deletes_per_s", "refill_creates_per_s", "stats_per_s"}
        await cancel_run(app, pilot, within=30)
    assert leftovers(tmp_path) == []


async def test_a_loop_bound_after_the_list_was_drawn_is_refused_before_formatting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, frozen_proposal: object) -> None:
    """The list says a fresh loop device is usable; another program then binds a second loop
    device to the same file: the check right before the run refuses it in the guard's words, the
    list says so too, and the file is untouched."""
    from textual.widgets import Input, Select

    from advisor.session import Session
    from advisor.tui.app import build_app
    from tests.conftest import loop_device, sh

    require_root_tools("losetup", "mkfs.xfs", "fio", "mount", "mkfs.ext4")
    monkeypatch.setenv("XFS_ADVISOR_STATE_DIR", str(tmp_path / "state"))
    image = tmp_path / "scratch.img"
    with loop_device(image, 1 << 30) as dev, loop_device(tmp_path / "ext4.img", 1 << 30) as ext:
        sh("mkfs.ext4", "-q", ext)
        name, ext_name = Path(dev).name, Path(ext).name
        app = build_app(Session(), start="validate")
        async with app.run_test(size=(120, 40)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            target = app.screen.query_one("#target", Select)
            labels = {value: str(label) for label, value in target._options}
            assert labels[name].endswith("usable scratch device, ERASED by the run"), labels[name]
            assert "refused, it holds data: ext4" in labels[ext_name]
            assert "ERASED" not in labels[ext_name]
            target.value = name
            await pilot.pause()
            app.screen.query_one("#confirm", Input).value = name
            other = sh("losetup", "--find", "--show", str(image)).stdout.strip()
            try:
                await pilot.press("ctrl+r")
                await pilot.pause()
                assert not app.screen.running  # type: ignore[attr-defined]
                said = [n.message for n in app._notifications]
                why = f"{Path(other).name} is bound to the same backing file"
                assert any(line.startswith(f"refusing {name}: ") and why in line
                           for line in said), said
                assert why in str(app.screen.query_one("#guard").render())
                labels = {value: str(label) for label, value in target._options}
                assert labels[name].startswith(f"{name} (1 GiB): refused, ")
                assert "ERASED" not in labels[name]
            finally:
                sh("losetup", "-d", other, check=False)
    with open(image, "rb") as f:
        assert f.read(1 << 20) == bytes(1 << 20)  # nothing was written where mkfs writes first
