"""Each screen at 80x24 and 120x40, pinned (regenerate with --snapshot-update after a deliberate
change and look at the report). Deterministic: the fixed host, a frozen proposal, no clock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual.pilot import Pilot

from advisor.models.proposal import Proposal
from advisor.models.workload import Workload
from advisor.session import ObsoleteAdvice, Session
from tests.tui.conftest import AppFactory

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]
EXAMPLE = Workload(largest_directory_entries=200000, access="mixed", fsyncs_per_second=50,
                   concurrent_writers=8, median_file_size=65536, mount_point="/srv/data")


@pytest.fixture(autouse=True)
def frozen_core(monkeypatch: pytest.MonkeyPatch, frozen_proposal: Proposal) -> None:
    """The proposal and the obsolete advice as they were when the snapshots were taken, so a new
    rule changes the engine's golden files, not these pictures of the screens."""
    monkeypatch.delenv("TMPDIR", raising=False)  # the validation plan names the loop's folder
    monkeypatch.setattr(Session, "obsolete_advice", lambda self: [
        ObsoleteAdvice("nobarrier", "nobarrier, barrier", "Linux 4.19",
                            "Removed: flushes are the kernel's job; a non-volatile cache reports "
                            "write through, so no flush is sent."),
        ObsoleteAdvice("unwritten", "-d unwritten=0", "xfsprogs 2007",
                            "The option is gone; mkfs.xfs rejects it."),
    ])


async def _settle(pilot: Pilot[Any]) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


SnapCompare = Callable[..., bool]


async def _laid_out(pilot: Pilot[Any]) -> None:
    """Until every plot has its size and the screen stops moving, then the verdict scrolled to
    the top: the plots mount one by one, and a scroll made earlier stops wherever layout was."""
    from textual_plotext import PlotextPlot

    screen = pilot.app.screen
    body = screen.query_one("#validate-body")

    async def settled() -> None:
        last = None
        for _ in range(100):
            await pilot.pause()
            plots = list(screen.query(PlotextPlot))
            now = (body.virtual_size, body.scroll_y, [p.size for p in plots])
            if plots and all(p.size.height > 0 for p in plots) and now == last:
                return
            last = now

    await settled()
    screen.query_one("#verdict").scroll_visible(top=True, animate=False, immediate=True)
    await settled()


@pytest.mark.parametrize("size", SIZES)
def test_devices(snap_compare: SnapCompare, make_app: AppFactory, size: tuple[int, int]) -> None:
    # The cursor on the misaligned partition: its badge and its facts show.
    assert snap_compare(make_app(), press=["down"] * 4, terminal_size=size)


@pytest.mark.parametrize("size", SIZES)
def test_workload_with_an_error(snap_compare: SnapCompare, make_app: AppFactory,
                                size: tuple[int, int]) -> None:
    app = make_app(device="vg0-data", workload=EXAMPLE, start="workload")
    # Replace 200000 with a negative count: the error shows beside the field.
    keys = ["end", *["backspace"] * 6, "minus", "3"]
    assert snap_compare(app, press=keys, terminal_size=size, run_before=_settle)


@pytest.mark.parametrize("size", SIZES)
def test_proposal(snap_compare: SnapCompare, make_app: AppFactory, size: tuple[int, int]) -> None:
    app = make_app(device="vg0-data", workload=EXAMPLE, start="proposal")
    assert snap_compare(app, terminal_size=size, run_before=_settle)


@pytest.mark.parametrize("size", SIZES)
def test_validate(snap_compare: SnapCompare, make_app: AppFactory, size: tuple[int, int]) -> None:
    app = make_app(device="vg0-data", workload=EXAMPLE, start="validate")
    assert snap_compare(app, terminal_size=size, run_before=_settle)


def test_help_in_the_light_theme(snap_compare: SnapCompare, make_app: AppFactory) -> None:
    assert snap_compare(make_app(), press=["ctrl+t", "question_mark"], terminal_size=(80, 24))


@pytest.mark.parametrize("size", SIZES)
def test_choosing_a_device_in_use(snap_compare: SnapCompare, make_app: AppFactory,
                                  size: tuple[int, int]) -> None:
    # Enter on sda1 (mounted on /): the question names what is on it, y/n.
    assert snap_compare(make_app(), press=["down"] * 3 + ["enter"], terminal_size=size)


def test_workload_out_of_the_fields(snap_compare: SnapCompare, make_app: AppFactory) -> None:
    # escape: no field has focus, so the footer offers ? and q again, and enter to go back.
    app = make_app(device="vg0-data", workload=EXAMPLE, start="workload")
    assert snap_compare(app, press=["escape"], terminal_size=(80, 24), run_before=_settle)


@pytest.mark.parametrize("size", SIZES)
def test_validate_targets_with_their_verdicts(snap_compare: SnapCompare, make_app: AppFactory,
                                              size: tuple[int, int],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # The fixture host as if live, the kernel not asked about loop bindings (deterministic):
    # the target list open, each device with the guard's verdict.
    from advisor.bench import guard

    monkeypatch.setattr(guard, "live_links", lambda inventory: guard.Links())
    app = make_app(device="vg0-data", workload=EXAMPLE, start="validate")
    app.state.inventory.live = True
    for device in app.state.inventory.devices:
        device.usage.probed = True

    async def open_targets(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        pilot.app.screen.query_one("#target").focus()
        await pilot.press("enter")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=open_targets)


@pytest.mark.parametrize("size", SIZES)
def test_validate_report(snap_compare: SnapCompare, make_app: AppFactory,
                         size: tuple[int, int]) -> None:
    # A judged report: margins with their origin, pairs that would resolve the inconclusive
    # metrics, the device named, plots over whole rounds; values as a real run gives them
    # (thousands of operations per second, intervals of three decimals, a long title), every
    # column within 80 columns.
    app = make_app(device="vg0-data", workload=EXAMPLE, start="validate")

    async def show(pilot: Pilot[Any]) -> None:
        await _settle(pilot)
        screen: Any = pilot.app.screen
        screen.show_report(realistic_report(6))
        await _laid_out(pilot)

    assert snap_compare(app, terminal_size=size, run_before=show)


def realistic_report(rounds: int) -> Any:
    """report_with_rounds with figures of the size a run on a loop device measures."""
    from tests.tui.test_validate import report_with_rounds

    report = report_with_rounds(rounds)
    scaled = []
    for i, m in enumerate(report.metrics):
        a, b = [v * 34.12 for v in m.a], [v * 34.12 for v in m.b]
        scaled.append(m.model_copy(update={
            "a": a, "b": b, "geo_mean_a": None, "geo_mean_b": None, "ratio": 0.8173,
            "ci": [0.6741, 0.9127] if i else [0.7562, 0.8831],
            "title": "log writes per 1k directory ops" if i == 1 else m.title}))
    return report.model_copy(update={"metrics": scaled})
