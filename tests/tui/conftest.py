"""One app factory for every TUI test: the production build_app() over a Session whose devices are
the fixed host of tests/tui/inventory.py; no clock. And the key sequences several tests press: a
path typed into the prompt, a command chosen from the palette, a validation run cancelled."""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from advisor.models.proposal import Proposal
from advisor.models.workload import Workload
from advisor.session import Session
from advisor.tui.app import AdvisorApp, build_app
from tests.tui.inventory import build_inventory

AppFactory = Callable[..., AdvisorApp]
FROZEN = Path(__file__).parent / "data" / "proposal-vg0-data.json"


@pytest.fixture
def frozen_proposal(monkeypatch: pytest.MonkeyPatch) -> Proposal:
    """The engine replaced by one proposal, frozen when these tests were written: for tests of
    the screens, not of the engine (and no mkfs.xfs dry run per key press)."""
    proposal = Proposal.model_validate(json.loads(FROZEN.read_text()))
    monkeypatch.setattr(Session, "propose", lambda *args, **kwargs: proposal)
    return proposal


@pytest.fixture
def make_app() -> AppFactory:
    def factory(*, device: str | None = None, workload: Workload | None = None,
                start: str = "devices") -> AdvisorApp:
        # The production factory, over a session whose devices are the fixed host.
        return build_app(Session(inventory=build_inventory()), device=device,
                         workload=workload or Workload(), start=start)

    return factory


async def answer_prompt(app: AdvisorApp, pilot: Pilot[Any], key: str, path: str) -> None:
    """Press `key` (ctrl+s, ctrl+o, s...), type `path` into the path prompt it opens, and press
    Enter."""
    await pilot.press(key)
    await pilot.pause()
    app.screen.query_one("#prompt-path", Input).value = path
    await pilot.press("enter")
    await pilot.pause()


async def from_palette(pilot: Pilot[Any], words: str) -> None:
    """Open the command palette, type `words` and run the first command they find."""
    await pilot.press("ctrl+p")
    await pilot.pause()
    await pilot.press(*words)
    await pilot.pause(0.3)
    await pilot.press("enter")
    await pilot.pause()


async def cancel_run(app: AdvisorApp, pilot: Pilot[Any], within: float) -> None:
    """Escape on the validation step while its run goes: the run ends within `within` seconds
    and the step says it was cancelled."""
    started = time.monotonic()
    await pilot.press("escape")
    while app.screen.running:  # type: ignore[attr-defined]
        assert time.monotonic() - started < within, f"cancel took over {within:.0f} s"
        await asyncio.sleep(0.1)
    await pilot.pause()
    assert "cancelled" in str(app.screen.query_one("#step").render())  # type: ignore[attr-defined]


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run `async def` tests in a fresh event loop (no async plugin is installed)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    asyncio.run(pyfuncitem.obj(**{n: pyfuncitem.funcargs[n] for n in names}))
    return True
