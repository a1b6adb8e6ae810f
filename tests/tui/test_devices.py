"""Step 1 by keys: the stacking tree, the at-a-glance columns, badges and provenance."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable, Static

from advisor.models.device import natural_key
from advisor.render.devices import badges, tree_rows
from tests.tui.conftest import AppFactory, from_palette
from tests.tui.inventory import build_inventory


def _cells(table: DataTable, row: int) -> list[str]:
    return [str(c.plain if isinstance(c, Text) else c) for c in table.get_row_at(row)]


def test_tree_rows_show_stacking_like_lsblk() -> None:
    rows = tree_rows(build_inventory())
    names = [r.prefix + r.device.display_name for r in rows]
    assert names[:5] == ["loop0", "nvme0n1", "sda", "├─ sda1", "└─ sda2"]
    # md0 sits on four disks: shown under each, with the LVM volume under it, keys unique.
    assert names.count("└─ md0") == 4
    assert "   └─ vg0-data" in names
    assert len({r.key for r in rows}) == len(rows)


def test_names_sort_naturally() -> None:
    names = ["loop10", "sdb", "loop2", "loop1", "nvme1n1", "nvme0n1p10", "nvme0n1p2"]
    assert sorted(names, key=natural_key) == [
        "loop1", "loop2", "loop10", "nvme0n1p2", "nvme0n1p10", "nvme1n1", "sdb"]


def test_badges_name_what_stands_in_the_way() -> None:
    inv = build_inventory()
    text = {d.name: [b.text for b in badges(d)] for d in inv.devices}
    assert text["sda1"] == ["mounted /"]
    assert text["sda2"] == ["misaligned +3072B"]
    assert text["nvme0n1"] == ["free"]
    assert text["sdb"] == ["held by md0", "holds linux_raid_member"]


async def test_device_list_and_details_by_keys(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        table = app.screen.query_one("#device-table", DataTable)
        # rotational=1 and nothing else known: ROT, never HDD (RAID LUNs and loops say 1 too)
        assert _cells(table, 2)[:6] == ["sda", "4 TiB", "ROT", "wback", "no", "-"]
        assert _cells(table, 1)[:5] == ["nvme0n1", "1 TiB", "SSD", "wthru", "yes"]
        assert _cells(table, 6)[-2:] == ["512KiBx2", "held by dm-0"]
        await pilot.press("j", "j", "j", "k", "down", "down")  # sda2: j/k move as arrows do
        title = app.screen.query_one("#details-title", Static)
        assert "/dev/sda2" in str(title.render())
        facts = app.screen.query_one("#facts", DataTable)
        lines = {_cells(facts, i)[0]: _cells(facts, i) for i in range(facts.row_count)}
        assert lines["alignment_offset"][1:] == ["sysfs", "3 KiB (3072)",
                                                 "sys/block/sda2/alignment_offset"]
        assert lines["size_bytes"][3] == "sys/block/sda2/size; raw '6442450944'"
        await pilot.press("enter")
        await pilot.pause()
        assert app.current_mode == "workload"
        assert app.state.device_name == "sda2"


async def test_reload_keeps_the_cursor_on_the_same_device(make_app: AppFactory) -> None:
    app = make_app()
    reads = []

    def reread():  # type: ignore[no-untyped-def]
        reads.append(1)
        inv = build_inventory()
        inv.devices = [d for d in inv.devices if d.name != "sda2"] + [
            inv.devices[2].model_copy(update={"name": "sdz", "display_name": "sdz",
                                              "parents": []})]
        return inv

    app._reload_inventory = reread
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("down")  # nvme0n1 (loop0, nvme0n1, ...)
        await pilot.press("r")
        await pilot.pause()
        table = app.screen.query_one("#device-table", DataTable)
        assert reads == [1]
        assert _cells(table, table.cursor_row)[0] == "nvme0n1"
        assert _cells(table, table.row_count - 1)[0] == "sdz"


async def test_help_opens_and_closes(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ == "DevicesScreen"
        await pilot.press("ctrl+t")
        assert app.theme == "textual-light"
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_command_palette_reaches_the_steps(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await from_palette(pilot, "Go to workload")
        assert app.current_mode == "workload"


async def test_the_list_paints_before_the_scan_ends_and_fills_in_after() -> None:
    # A scan held until the first screen is up: the command line's app must paint without
    # waiting for it (a host with thousands of devices takes seconds), then show what it read.
    import threading

    from advisor.session import Session
    from advisor.tui.app import build_app

    release = threading.Event()
    session = Session(inventory=build_inventory())
    fixed = session.inventory()

    def held_scan(**_kwargs: object) -> object:
        release.wait(30)
        return fixed

    session.inventory = held_scan  # type: ignore[assignment,method-assign]
    app = build_app(session, scan_after_paint=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        table = app.screen.query_one("#device-table", DataTable)
        assert app.state.reading_devices
        assert table.row_count == 0
        assert str(table.border_title).startswith("reading the devices...")
        screen = app.screen
        fill = screen.show_inventory

        def fill_and_draw() -> None:  # a paint between the rows and Textual's idle width pass
            fill()
            table.render_line(1)

        screen.show_inventory = fill_and_draw  # type: ignore[method-assign]
        await pilot.press("r")  # a reload while the first scan runs waits for it, no second scan
        release.set()
        for _ in range(200):
            if table.row_count:
                break
            await pilot.pause(0.05)
        assert not app.state.reading_devices
        assert table.row_count == len(tree_rows(fixed))
        assert str(table.border_title).startswith(f"{len(fixed.devices)} devices")
        assert _cells(table, 0)[0] == tree_rows(fixed)[0].device.display_name
        await pilot.pause()
        # Drawn at the widths of the rows, not of the headers the empty list had.
        drawn = "".join(s.text for s in table.render_line(1))
        assert tree_rows(fixed)[0].device.display_name in drawn, drawn
        assert any(b.text in drawn for b in badges(tree_rows(fixed)[0].device)), drawn


async def test_the_first_scan_starts_once_the_screen_is_drawn() -> None:
    """The scan's thread would share the interpreter with the first layout and paint: it is
    started after the first refresh, when the list has been laid out (and drawn)."""
    from advisor.session import Session
    from advisor.tui.app import build_app

    session = Session(inventory=build_inventory())
    fixed = session.inventory()
    seen: list[tuple[int, int]] = []

    def scan(**_kwargs: object) -> object:
        try:
            region = app.screen.query_one("#device-table", DataTable).region
            seen.append((region.width, region.height))
        except Exception:  # no screen or no list yet
            seen.append((0, 0))
        return fixed

    session.inventory = scan  # type: ignore[assignment,method-assign]
    app = build_app(session, scan_after_paint=True)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(200):
            if not app.state.reading_devices:
                break
            await pilot.pause(0.05)
        await pilot.pause()
        assert len(seen) == 1
        width, height = seen[0]
        assert width > 0 and height > 0, "the scan started before the list was laid out"
        assert app.screen.query_one("#device-table", DataTable).row_count


async def test_a_failed_first_scan_is_said_on_screen() -> None:
    from advisor.errors import DeviceProblem
    from advisor.session import Session
    from advisor.tui.app import build_app

    session = Session(inventory=build_inventory())

    def vanished(**_kwargs: object) -> object:
        raise DeviceProblem("device sdb disappeared while it was being inspected")

    session.inventory = vanished  # type: ignore[assignment,method-assign]
    app = build_app(session, scan_after_paint=True)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(200):
            if not app.state.reading_devices:
                break
            await pilot.pause(0.05)
        await pilot.pause()
        table = app.screen.query_one("#device-table", DataTable)
        assert table.row_count == 0
        assert str(table.border_title).startswith("0 devices")
        assert any("sdb disappeared" in str(n.message) for n in app._notifications)
