"""The TUI's live view: `o` on the device screen watches the highlighted device's mounted XFS,
refreshing the rates every second and showing findings as they appear; escape stops it."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

from textual.widgets import DataTable, Static

from advisor.session import Session
from advisor.tui.app import build_app
from advisor.tui.observe import ObserveScreen
from tests.conftest import loop_device, mounted, require_root_tools, sh
from tests.observe.test_observe import APPENDS


async def test_o_shows_a_live_view_with_findings_as_they_appear(tmp_path: Path) -> None:
    require_root_tools("losetup", "mkfs.xfs", "mount")
    with loop_device(tmp_path / "fs.img", 512 << 20) as dev:
        sh("mkfs.xfs", "-q", "-f", dev)
        with mounted(dev, tmp_path / "mnt") as mnt:
            app = build_app(Session())
            async with app.run_test(size=(140, 50)) as pilot:
                await pilot.pause()
                table = app.screen.query_one("#device-table", DataTable)
                name = dev.removeprefix("/dev/")
                row = next(i for i in range(table.row_count)
                           if app.screen._name_at(i) == name)  # type: ignore[attr-defined]
                table.move_cursor(row=row)
                await pilot.press("o")
                await pilot.pause()
                screen = app.screen
                assert isinstance(screen, ObserveScreen)
                writer = subprocess.Popen([sys.executable, "-c", APPENDS, "interleaved",
                                           str(mnt / "files")])
                try:
                    body = ""
                    deadline = time.monotonic() + 60
                    # the finding can show on the first reading: wait for it and a second one
                    while (("[allocsize]" not in body or screen.refreshes < 2)
                           and time.monotonic() < deadline):
                        await asyncio.sleep(0.5)
                        body = str(screen.query_one("#observe-body", Static).render())
                finally:
                    writer.kill()
                    writer.wait()
                assert "counters only, refreshed every second" in body, body
                assert "fsync" in body or "log forces" in body, body
                assert "[allocsize]" in body, body
                assert screen.refreshes >= 2
                await pilot.press("escape")
                await pilot.pause()
                assert not isinstance(app.screen, ObserveScreen)
                seen = screen.refreshes  # a reading may land while escape is on its way
                await asyncio.sleep(1.5)
                assert screen.refreshes == seen  # the reading stopped with the view
                assert not [w for w in screen.workers if w.is_running]
