"""Step 4: the plan and the guard on the screen; a real run on the loop default, cancelled
midway, leaves nothing mounted or attached."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Select, Static

from advisor.models.bench import ValidationReport
from advisor.models.device import Inventory
from advisor.models.proposal import Proposal
from advisor.models.workload import Workload
from tests.conftest import leftovers, own_tmpdir, require_root_tools
from tests.tui.conftest import AppFactory, answer_prompt, cancel_run


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
                                                       frozen_proposal: Proposal,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app(device="vg0-data", start="validate")
    inventory = app.state.inventory
    inventory.live = True  # pretend, to be offered real devices; nothing is run in this test
    # The captured nvme0n1 is not on this machine: there are no bytes of it to read.
    monkeypatch.setattr("advisor.bench.guard.leftover_data", lambda path, size: None)
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


async def test_cancelled_run_leaves_nothing_behind(make_app: AppFactory, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    require_root_tools("losetup", "mkfs.xfs", "fio", "mount")
    require_root_tools("xfs_info")
    own_tmpdir(tmp_path, monkeypatch)
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
        while "side" not in _text(app, "#step") or not leftovers(tmp_path):
            assert time.monotonic() < deadline, _text(app, "#step")
            await asyncio.sleep(0.1)
        assert any("xfs" in line for line in leftovers(tmp_path)), leftovers(tmp_path)
        await asyncio.sleep(1.0)
        await cancel_run(app, pilot, within=60)
    assert leftovers(tmp_path) == []


async def test_a_finished_run_shows_its_verdict_first(make_app: AppFactory,
                                                     frozen_proposal: Proposal) -> None:
    """A run's end (nothing left on a device): the verdict at the top of the screen, not under
    the command plan shown before the run (at 80x24 it was below the screen's bottom)."""
    app = make_app(device="vg0-data", start="validate")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen: Any = app.screen
        body, verdict = screen.query_one("#validate-body"), screen.query_one("#verdict")
        screen.show_report(report_with_rounds(3))
        await pilot.pause()
        assert not body.region.contains_region(verdict.region)  # under the plan
        screen._show_outcome()
        await pilot.pause()
        assert verdict.region.y == body.region.y, (verdict.region, body.region)


async def test_report_shows_verdicts_and_a_plot_per_metric(make_app: AppFactory,
                                                           frozen_proposal: Proposal,
                                                           tmp_path: Path) -> None:
    from textual.widgets import DataTable
    from textual_plotext import PlotextPlot

    report = report_with_rounds(3)
    app = make_app(device="vg0-data", start="validate")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.screen.show_report(report)  # type: ignore[attr-defined]
        await pilot.pause()
        assert _text(app, "#verdict") == "Verdict: worse. B is worse on creates_per_s\n" \
            "Ran on /dev/loop9 (1 GiB)"
        assert "B = mkfs.xfs -n size=64k, mount -o defaults" in _text(app, "#sides")
        table = app.screen.query_one("#metrics", DataTable)
        first = [str(c) for c in table.get_row_at(0)]
        assert first == ["file creates", "100", "80.3", "0.800", "0.75-0.85", "worse",
                         "±5% default"]
        # The margin and where it came from; what would settle an inconclusive metric.
        margins = [str(table.get_row_at(i)[6]) for i in range(4)]
        assert margins == ["±5% default", "±8% calibrated", "±5% default (floor 2%)",
                           "±50% capped (floor 70%)"]
        steps = _text(app, "#next")
        assert "deletes: inconclusive after 3 pairs (noise 12% per pair); ~40 pairs would " \
            "likely resolve it." in steps
        assert "refill: inconclusive after 3 pairs (noise 2% per pair); more than 200 pairs, " \
            "or the difference sits on the margin." in steps
        assert "ctrl+s saves this report" in steps
        assert len(app.screen.query(PlotextPlot)) == 4
        # Whole rounds under each plot: 1, 2, 3 and nothing between.
        plot = app.screen.query(PlotextPlot).first()
        plot.plt.plotsize(60, 12)
        drawn = re.sub(r"\x1b\[[0-9;]*m", "", plot.plt.build())
        axis = drawn.splitlines()[-2].split()
        assert axis == ["1", "2", "3"], drawn
        # ctrl+e (more rounds) continues loop-device runs only: this one ran on /dev/loop9
        # given as a scratch device, so it is refused before anything is made.
        await pilot.press("ctrl+e")
        await pilot.pause()
        notices = [n.message for n in app._notifications]
        assert any("more rounds continue a run on the loop device" in n for n in notices)
        assert not app.screen.running  # type: ignore[attr-defined]
        # ctrl+s saves it: Markdown (and JSON for a .json name); an existing file is kept.
        for name in ("report.md", "report.json", "report.md"):
            await answer_prompt(app, pilot, "ctrl+s", str(tmp_path / name))
    markdown = (tmp_path / "report.md").read_text()
    assert markdown.startswith("# xfs-advisor: A/B validation\n")
    assert "| file creates (files/s) | 100.0 | 80.3 | 0.800 | [0.750, 0.850] | ±5% | worse |" \
        in markdown
    assert ValidationReport.model_validate_json((tmp_path / "report.json").read_text()) == report


async def test_targets_carry_the_guard_verdict_and_refused_ones_cannot_start(
        make_app: AppFactory, frozen_proposal: Proposal) -> None:
    app = make_app(device="vg0-data", start="validate")
    inventory = app.state.inventory
    inventory.live = True  # pretend, to be offered real devices; nothing is run in this test
    for device in inventory.devices:
        device.usage.probed = True
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        target = app.screen.query_one("#target", Select)
        labels = {value: str(label) for label, value in target._options}
        # Each device with the guard's own words; "ERASED" only where the guard would format.
        assert labels["nvme0n1"] == "nvme0n1 (1 TiB): usable scratch device, ERASED by the run"
        assert labels["sda1"].startswith("sda1 (100 GiB): refused, it is the device under /")
        assert "mounted on /" in labels["sda1"] or "+1 more" in labels["sda1"]
        assert labels["sdb"].startswith("sdb (2 TiB): refused, it is held by md0")
        assert labels["md0"].startswith("md0 (4 TiB): refused, it is held by dm-0")
        assert labels["sda"] == "sda (4 TiB): refused, it is the device under / (+2 more)"
        erased = [v for v, label in labels.items() if "ERASED" in label]
        assert all("refused" not in labels[v] for v in erased) and "nvme0n1" in erased
        # Natural order after the loop default.
        assert list(labels)[:2] == ["loop", "dm-0"]
        # The line under the list gives every reason.
        target.value = "sda"
        await pilot.pause()
        shown = _text(app, "#guard")
        assert "sda1 on it is mounted on /" in shown and "it has partitions (sda" in shown, shown
        # A refused target: no box, and the refusal does not ask for a box.
        target.value = "sdb"
        await pilot.pause()
        guard = _text(app, "#guard")
        assert guard.startswith("refused: sdb cannot be used for the run: it is held by")
        assert not app.screen.query_one("#confirm", Input).display
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert not app.screen.running  # type: ignore[attr-defined]
        said = [n.message for n in app._notifications]
        # Checked again on the devices as they are now, and refused in the guard's words.
        assert said and said[-1].startswith("refusing sdb: it is held by md0"), said
        assert not any("box" in line or "run as root" in line for line in said), said


def report_with_rounds(rounds: int) -> ValidationReport:
    """A judged report (no run): one metric of each verdict and margin origin."""
    metric = {"name": "creates_per_s", "title": "file creates", "unit": "files/s",
              "higher_is_better": True, "a": [(100.0, 102.0, 98.0)[i % 3] for i in range(rounds)],
              "b": [(80.0, 79.0, 82.0)[i % 3] for i in range(rounds)],
              "ratio": 0.8, "ci": [0.75, 0.85], "margin": 0.05, "noise": 0.02,
              "verdict": "worse"}
    return ValidationReport.model_validate({
        "a": {"label": "A"}, "b": {"label": "B", "mkfs_options": ["-n", "size=64k"],
                                   "source": "proposal"},
        "rounds": rounds, "order": ["A", "B"], "metrics": [
            metric, {**metric, "name": "stats", "title": "stats", "verdict": "equivalent",
                     "margin": 0.08, "calibrated_floor": 0.08},
            {**metric, "name": "deletes", "title": "deletes", "verdict": "inconclusive",
             "rounds_to_resolve": 40, "noise": 0.12, "calibrated_floor": 0.02},
            {**metric, "name": "refill", "title": "refill", "verdict": "inconclusive",
             "margin": 0.5, "calibrated_floor": 0.7, "margin_capped": True}],
        "verdict": "worse", "summary": "B is worse on creates_per_s",
        "timing": {"wall_seconds": 1, "measuring_seconds": 1, "measuring_share": 1},
        "environment": {"device": "/dev/loop9", "device_size_bytes": 1 << 30}})


async def test_attribution_is_offered_after_a_verdict_and_shown(make_app: AppFactory,
                                                                frozen_proposal: Proposal
                                                                ) -> None:
    """After a verdict on a B of two options the screen offers ctrl+b with the estimate; with
    one option it says why not; an attribution, once there, is shown under the verdict."""
    from advisor.bench import attribute as attribution
    from advisor.bench.plan import Plan
    from advisor.models import differences
    from advisor.models.bench import SideConfig, ValidationReport
    from advisor.models.workload import Workload

    metric = {"name": "log_writes_per_1k_dirops", "title": "log writes per 1k directory ops",
              "unit": "writes", "higher_is_better": False, "a": [9.0] * 6, "b": [1.3] * 6,
              "ratio": 0.14, "ci": [0.13, 0.15], "margin": 0.05, "noise": 0.02,
              "verdict": "better"}
    b = SideConfig(label="B", mount_options=["logbsize=256k", "noatime"], source="given options")
    report = ValidationReport.model_validate({
        "a": {"label": "A"}, "b": b.model_dump(), "rounds": 6, "order": ["A", "B"],
        "metrics": [], "mechanisms": [metric], "verdict": "equivalent", "summary": "-",
        "timing": {"wall_seconds": 90, "measuring_seconds": 1, "measuring_share": 1},
        "environment": {"device": "/dev/loop9", "device_size_bytes": 1 << 30}})
    app = make_app(device="vg0-data", start="validate")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        screen = app.screen
        screen._ran = Plan(a=SideConfig(label="A"), b=b, workload=Workload())  # type: ignore[attr-defined]
        screen.show_report(report)  # type: ignore[attr-defined]
        await pilot.pause()
        assert ("ctrl+b: which option moved what: 2 more A/B runs (logbsize=256k, noatime), "
                "about 3 min") in _text(app, "#verdict")
        one = SideConfig(label="B", mount_options=["noatime"])
        screen._ran = Plan(a=SideConfig(label="A"), b=one, workload=Workload())  # type: ignore[attr-defined]
        screen.show_report(report)  # type: ignore[attr-defined]
        await pilot.pause()
        assert "Attribution: not offered: B differs from A in 1 option" in _text(app, "#verdict")
        alone = [report, report.model_copy(update={"mechanisms": [
            report.mechanisms[0].model_copy(update={"ratio": 1.0, "ci": [0.9, 1.1],
                                                    "verdict": "inconclusive"})]})]
        chosen = differences.options(SideConfig(label="A"), b)
        screen.show_report(report.model_copy(update={  # type: ignore[attr-defined]
            "attribution": attribution.combine(chosen, alone, report)}))
        await pilot.pause()
        assert ("log writes per 1k directory ops (all options: less work): moved by "
                "logbsize=256k: less work (B/A 0.140, [0.130, 0.150]); cannot tell for noatime"
                ) in _text(app, "#verdict")


def test_intervals_are_compact() -> None:
    """At most 4 characters a bound, so the 95% CI column never cuts a figure at 80 columns."""
    from advisor.tui.validate import METRIC_COLUMNS, interval_text

    width = dict(METRIC_COLUMNS)["95% CI"]
    cases = {(0.6741, 0.9127): "0.67-0.91", (0.0, float("inf")): "0.00-inf",
             (8.5, 12.34): "8.50-12.3", (95.2, 1234.0): "95.2-1234"}
    for (lo, hi), text in cases.items():
        assert interval_text(lo, hi) == text
        assert len(text) <= width
    assert sum(w for _, w in METRIC_COLUMNS) + 2 * len(METRIC_COLUMNS) <= 76
