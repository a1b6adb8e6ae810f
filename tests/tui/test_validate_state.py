"""F5 says what matters about a run without scrolling, at 80x24: the run's state right after
ctrl+r and what a finished run left on the device (the devices read again); F4 shows a new
proposal from its top.
The run itself is a judged report handed back at once (tests/tui/test_validate.py and
test_terminal_validate.py run real ones)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from textual.widgets import Static

from advisor.bench.cleanup import Recovery
from advisor.models.device import Inventory
from advisor.models.proposal import Proposal
from tests.tui.conftest import AppFactory
from tests.tui.test_validate import report_with_rounds

LEFT = "/dev/loop7 now holds the test filesystem of the last round: `wipefs -a /dev/loop7`"


def _text(app: Any, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def _on_screen(app: Any, selector: str) -> bool:
    """The widget is displayed and inside the visible part of the scrolled body."""
    widget = app.screen.query_one(selector)
    body = app.screen.query_one("#validate-body")
    top = widget.region.y
    return bool(widget.display) and body.region.y <= top < body.region.bottom


async def test_the_run_state_is_on_screen_and_what_was_left_is_said(
        make_app: AppFactory, frozen_proposal: Proposal, monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app(device="vg0-data", start="validate")
    session = app.state.session
    release = threading.Event()
    report = report_with_rounds(6).model_copy(update={"device_left": LEFT})

    def run_validation(plan: Any, **kwargs: Any) -> Any:
        release.wait(30)
        return report

    monkeypatch.setattr(session, "recover", lambda *a, **k: Recovery())
    monkeypatch.setattr(session, "run_validation", run_validation)
    reloads: list[Inventory] = []
    monkeypatch.setattr(app, "reload_devices", lambda: reloads.append(app.state.inventory))
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not app.screen.query_one("#step").display  # nothing to say before a run
        await pilot.press("ctrl+r")
        await pilot.pause()
        await pilot.pause()
        assert app.screen.running
        assert "starting" in _text(app, "#step")
        assert _on_screen(app, "#step") and _on_screen(app, "#progress")
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert f"done on {report.environment.device}; {LEFT}" in _text(app, "#step")
        assert any(LEFT in str(n.message) for n in app._notifications)
        assert reloads, "the target list was not read again after the run"


async def test_a_new_proposal_is_shown_from_its_top(make_app: AppFactory,
                                                    frozen_proposal: Proposal) -> None:
    from textual.containers import VerticalScroll

    from tests.tui.test_snapshots import EXAMPLE

    app = make_app(device="vg0-data", workload=EXAMPLE, start="proposal")
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.state.proposal is not None, app.state.proposal_problem
        await pilot.pause()
        body = app.screen.query_one("#proposal-body", VerticalScroll)
        body.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        assert body.scroll_y > 0, "nothing to scroll: the test would prove nothing"
        app.state.proposal = app.state.proposal.model_copy()  # what new answers give
        app.screen.show_proposal()
        await pilot.pause()
        assert body.scroll_y == 0
