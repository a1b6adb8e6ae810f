"""The TUI over this host's own devices, for the tests of a device's views (audit, observe) on a
loop device the test made."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from textual.pilot import Pilot
from textual.widgets import DataTable

from advisor.session import Session
from advisor.tui.app import AdvisorApp, build_app
from advisor.tui.devices import DevicesScreen


@asynccontextmanager
async def key_on_device(dev: str, key: str,
                        size: tuple[int, int]) -> AsyncIterator[tuple[AdvisorApp, Pilot[int]]]:
    """The live TUI at `size`, the device list's cursor on `dev` (/dev/NAME), then `key`
    pressed: the app and its pilot, the view that key opens on screen."""
    app = build_app(Session())
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DevicesScreen)
        table = screen.query_one("#device-table", DataTable)
        name = dev.removeprefix("/dev/")
        table.move_cursor(row=next(i for i in range(table.row_count)
                                   if screen._name_at(i) == name))
        await pilot.press(key)
        await pilot.pause()
        yield app, pilot
