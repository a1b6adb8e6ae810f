"""One app factory for every TUI test: the production build_app() over a Session whose devices are
the fixed host of tests/tui/inventory.py; no clock."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from pathlib import Path

import pytest

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


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run `async def` tests in a fresh event loop (no async plugin is installed)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    asyncio.run(pyfuncitem.obj(**{n: pyfuncitem.funcargs[n] for n in names}))
    return True
