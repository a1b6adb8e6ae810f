"""The TUI's audit view: `a` on the device screen shows what `xfs-advisor audit DEV`
finds on the highlighted device, read-only."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from advisor.tui.audit import AuditScreen
from tests.bench.test_guard import checksum
from tests.conftest import loop_device, require_root_tools, sh
from tests.tui.live import key_on_device


async def test_a_shows_the_audit_of_the_highlighted_device(tmp_path: Path) -> None:
    require_root_tools("losetup", "mkfs.xfs", "xfs_db")
    backing = tmp_path / "v4.img"
    with loop_device(backing, 1 << 30) as dev:
        sh("mkfs.xfs", "-q", "-f", "-K", "-m", "crc=0", dev)
        sh("blockdev", "--flushbufs", dev)
        before = checksum(backing)
        async with key_on_device(dev, "a", (120, 40)) as (app, pilot):
            assert isinstance(app.screen, AuditScreen)
            await app.screen.workers.wait_for_complete()
            await pilot.pause()
            body = str(app.screen.query_one("#audit-body", Static).render())
            assert f"{dev} on - (not mounted, read with xfs_db -r)" in body
            assert "audit-v4" in body and "the advisor today: mkfs.xfs" in body
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, AuditScreen)
        assert checksum(backing) == before
