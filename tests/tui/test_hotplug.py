"""On a live system the device list follows hotplug: a loop device attached while the advisor
runs appears, and disappears when detached."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual.widgets import DataTable

from advisor.session import Session
from advisor.tui.app import AdvisorApp, build_app
from tests.conftest import loop_device, require_root_tools


def _names(app: AdvisorApp) -> set[str]:
    table = app.screen.query_one("#device-table", DataTable)
    names = set()
    for row in range(table.row_count):
        cell = table.get_row_at(row)[0]
        names.add((cell.plain if isinstance(cell, Text) else str(cell)).split(" ")[-1])
    return names


def _known(app: AdvisorApp) -> set[str]:
    return {d.name for d in app.state.inventory.devices}


async def _wait(app: AdvisorApp, present: bool, name: str,
                where: Callable[[AdvisorApp], set[str]] = _names) -> None:
    """Until `name` is in (or gone from) `where`: the list on screen, or the kept inventory."""
    deadline = time.monotonic() + 15
    while (name in where(app)) != present:
        assert time.monotonic() < deadline, f"{name} {'never came' if present else 'stayed'}"
        await asyncio.sleep(0.1)


async def test_loop_device_comes_and_goes(tmp_path: Path) -> None:
    require_root_tools("losetup")
    app = build_app(Session())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert app._observer is not None, "no hotplug monitor"
        with loop_device(tmp_path / "hot.img", 64 << 20) as dev:
            name = dev.removeprefix("/dev/")
            await _wait(app, True, name)
        await _wait(app, False, name)


async def test_the_list_catches_up_after_hotplug_on_another_step(tmp_path: Path) -> None:
    """Attached while the questions are shown: listed when F2 brings the list back; detached
    while they are shown: gone from it."""
    require_root_tools("losetup")
    app = build_app(Session())
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("f3")
        with loop_device(tmp_path / "hot.img", 64 << 20) as dev:
            name = dev.removeprefix("/dev/")
            await _wait(app, True, name, _known)
            await pilot.press("f2")
            await pilot.pause()
            assert name in _names(app)
            await pilot.press("f3")
            await pilot.pause()
        await _wait(app, False, name, _known)
        await pilot.press("f2")
        await pilot.pause()
        assert name not in _names(app)


async def test_an_event_while_the_app_closes_is_dropped_quietly() -> None:
    """pyudev's thread may deliver an event after the app stopped (CI saw a CancelledError
    traceback from that thread): it is dropped, nothing raised, nothing printed."""
    import threading

    app = build_app(Session())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
    raised: list[BaseException] = []

    def deliver() -> None:
        try:
            app._udev_event(None)
        except BaseException as err:  # what the old callback let escape
            raised.append(err)

    thread = threading.Thread(target=deliver)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive() and raised == []
