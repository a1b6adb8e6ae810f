"""Step 4: the plan and the guard on the screen; a real run on the loop default, cancelled
midway, leaves nothing mounted or attached."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

import pytest
from textual.widgets import Input, Select, Static

from advisor.models.device import Inventory
from advisor.models.proposal import Proposal
from advisor.models.workload import Workload
from tests.conftest import require_root_tools
from tests.tui.conftest import AppFactory


def _text(app: object, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())  # type: ignore[attr-defined]


async def test_plan_shows_both_sides_on_the_loop_default(make_app: AppFactory,
                                                         frozen_proposal: Proposal) -> None:
    app = make_app(device="vg0-data", start="validate")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        # B is the proposal shown on F4 for vg0-data, as far as the loop device can take it.
        assert "the proposal for vg0-data shown on F4" in _text(app, "#sides")
        plan = _text(app, "#plan")
        assert "losetup" in plan and "mkfs.xfs -f -K /dev/loopN" in plan
        shown = app.state.proposal
        assert shown is not None
        assert f"mkfs.xfs -f -K {' '.join(shown.mkfs_options)} /dev/loopN" in plan
        # A capture's devices belong to another machine: only the loop default is offered.
        assert app.screen.query_one("#target", Select)._options[1:] == []
        assert not app.screen.query_one("#confirm", Input).display


async def test_guard_refuses_and_confirmation_is_typed(make_app: AppFactory,
                                                       frozen_proposal: Proposal) -> None:
    app = make_app(device="vg0-data", start="validate")
    inventory = app.state.inventory
    inventory.live = True  # pretend, to be offered real devices; nothing is run in this test
    free = inventory.get("nvme0n1")
    assert free is not None
    free.usage.probed = True
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        target = app.screen.query_one("#target", Select)
        target.value = "sda1"
        await pilot.pause()
        assert "refused: " in _text(app, "#guard") and "mounted on /" in _text(app, "#guard")
        assert not app.screen.query_one("#confirm", Input).display
        target.value = "nvme0n1"
        await pilot.pause()
        assert "Type its name below" in _text(app, "#guard")
        confirm = app.screen.query_one("#confirm", Input)
        assert confirm.display
        assert "mkfs.xfs -f -K -n size=64k /dev/nvme0n1" in _text(app, "#plan")
        assert "(the proposal for nvme0n1)" in _text(app, "#sides")
        confirm.value = "nvme0n"  # not quite: the run must not start
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert not app.screen.running  # type: ignore[attr-defined]

        # Confirmed, but mounted meanwhile: the guard runs again on fresh facts and refuses.
        def now_mounted() -> Inventory:
            fresh = inventory.model_copy(deep=True)
            nvme = fresh.get("nvme0n1")
            assert nvme is not None
            nvme.usage.mountpoints = ["/mnt"]
            return fresh

        app._reload_inventory = now_mounted
        confirm.value = "nvme0n1"
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert not app.screen.running  # type: ignore[attr-defined]
        assert "mounted on /mnt" in _text(app, "#guard")


def _ours(tmp_path: Path) -> list[str]:
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    mounts = Path("/proc/mounts").read_text()
    return [line for line in (loops + mounts).splitlines() if str(tmp_path) in line]


async def test_cancelled_run_leaves_nothing_behind(make_app: AppFactory, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    require_root_tools("losetup", "mkfs.xfs", "fio", "mount")
    require_root_tools("xfs_info")
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    app = make_app(device="loop0", workload=Workload(largest_directory_entries=20000),
                   start="validate")
    app.state.validation_bytes = 1 << 30
    app.state.validation_budget = 60.0
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.state.proposal is not None, app.state.proposal_problem
        await pilot.press("ctrl+r")
        deadline = time.monotonic() + 60
        # Midway: the first side is made and mounted, fio is running.
        while "side" not in _text(app, "#step") or not _ours(tmp_path):
            assert time.monotonic() < deadline, _text(app, "#step")
            await asyncio.sleep(0.1)
        assert any("xfs" in line for line in _ours(tmp_path)), _ours(tmp_path)
        await asyncio.sleep(1.0)
        started = time.monotonic()
        await pilot.press("escape")
        while app.screen.running:  # type: ignore[attr-defined]
            assert time.monotonic() - started < 60, "cancel took over a minute"
            await asyncio.sleep(0.1)
        await pilot.pause()
        assert "cancelled" in _text(app, "#step")
    assert _ours(tmp_path) == []


async def test_report_shows_verdicts_and_a_plot_per_metric(make_app: AppFactory,
                                                           frozen_proposal: Proposal,
                                                           tmp_path: Path) -> None:
    from textual.widgets import DataTable
    from textual_plotext import PlotextPlot

    from advisor.models.bench import ValidationReport

    metric = {"name": "creates_per_s", "title": "file creates", "unit": "files/s",
              "higher_is_better": True, "a": [100.0, 102.0, 98.0], "b": [80.0, 79.0, 82.0],
              "ratio": 0.8, "ci": [0.75, 0.85], "margin": 0.05, "noise": 0.02,
              "verdict": "worse"}
    report = ValidationReport.model_validate({
        "a": {"label": "A"}, "b": {"label": "B", "mkfs_options": ["-n", "size=64k"],
                                   "source": "proposal"},
        "rounds": 6, "order": ["A", "B"], "metrics": [metric, {**metric, "name": "stats",
                                                              "title": "stats", "verdict":
                                                              "equivalent"}],
        "verdict": "worse", "summary": "B is worse on creates_per_s",
        "timing": {"wall_seconds": 1, "measuring_seconds": 1, "measuring_share": 1},
        "environment": {"device": "/dev/loop9", "device_size_bytes": 1 << 30}})
    app = make_app(device="vg0-data", start="validate")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.screen.show_report(report)  # type: ignore[attr-defined]
        await pilot.pause()
        assert "Verdict: worse" in _text(app, "#verdict")
        assert "B = mkfs.xfs -n size=64k, mount -o defaults" in _text(app, "#sides")
        table = app.screen.query_one("#metrics", DataTable)
        first = [str(c) for c in table.get_row_at(0)]
        assert first == ["file creates", "100", "80.3", "0.800", "0.750..0.850", "worse"]
        assert len(app.screen.query(PlotextPlot)) == 2
        # ctrl+e (more rounds) continues loop-device runs only: this one ran on /dev/loop9
        # given as a scratch device, so it is refused before anything is made.
        await pilot.press("ctrl+e")
        await pilot.pause()
        notices = [n.message for n in app._notifications]
        assert any("more rounds continue a run on the loop device" in n for n in notices)
        assert not app.screen.running  # type: ignore[attr-defined]
        # ctrl+s saves it: Markdown (and JSON for a .json name); an existing file is kept.
        for name in ("report.md", "report.json", "report.md"):
            await pilot.press("ctrl+s")
            await pilot.pause()
            app.screen.query_one("#prompt-path", Input).value = str(tmp_path / name)
            await pilot.press("enter")
            await pilot.pause()
    markdown = (tmp_path / "report.md").read_text()
    assert markdown.startswith("# xfs-advisor: A/B validation\n")
    assert "| file creates (files/s) | 100.0 | 80.3 | 0.800 | [0.750, 0.850] | ±5% | worse |" \
        in markdown
    assert ValidationReport.model_validate_json((tmp_path / "report.json").read_text()) == report
