"""One app factory for every TUI test: the fixed host of tests/tui/inventory.py, no clock."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable
from pathlib import Path

import pytest

import advisor.tui.core as core
from advisor.models.proposal import Proposal
from advisor.models.workload import Workload
from advisor.tui.app import AdvisorApp, AdvisorState
from tests.tui.inventory import build_inventory

AppFactory = Callable[..., AdvisorApp]
FROZEN = Path(__file__).parent / "data" / "proposal-vg0-data.json"


@pytest.fixture
def frozen_proposal(monkeypatch: pytest.MonkeyPatch) -> Proposal:
    """The engine replaced by one proposal, frozen when these tests were written: for tests of
    the screens, not of the engine (and no mkfs.xfs dry run per key press)."""
    proposal = Proposal.model_validate(json.loads(FROZEN.read_text()))
    monkeypatch.setattr(core, "propose", lambda *args: proposal)
    return proposal


@pytest.fixture
def make_app() -> AppFactory:
    def factory(*, device: str | None = None, workload: Workload | None = None,
                start: str = "devices") -> AdvisorApp:
        state = AdvisorState(inventory=build_inventory(), device_name=device,
                             workload=workload or Workload())
        return AdvisorApp(state, start=start)

    return factory


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run `async def` tests in a fresh event loop (no async plugin is installed)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    asyncio.run(pyfuncitem.obj(**{n: pyfuncitem.funcargs[n] for n in names}))
    return True
