"""Step 1: the block devices as a stacking tree with the facts that matter at a glance, badges for
what stands in the way, and every fact with its provenance in the details pane."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Vertical
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Footer, Header, Static
from textual.widgets.data_table import RowKey

from advisor.render.inert import terminal
from advisor.tui.dialogs import Confirm
from advisor.tui.messages import DevicesChanged
from advisor.tui.step import StepScreen


class ListTable(DataTable[Any]):
    """A table that moves with `j`/`k` too (the htop, ncdu, lazygit habit)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
    ]

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """Textual widens the columns for new rows when idle, but keeps the rows it drew before
        that at the old widths: a list filled in on a screen already shown (the first scan, a
        hotplug) stayed cut to the headers' widths. Widths that changed make those drawings
        stale."""
        before = [column.get_render_width(self) for column in self.ordered_columns]
        super()._update_dimensions(new_rows)
        if [column.get_render_width(self) for column in self.ordered_columns] != before:
            self._update_count += 1  # the key of every cached drawing of a cell, row and line
            self.refresh()


class DeviceTable(ListTable):
    """The device list; Enter chooses the row (said in the footer)."""

    # The table's own binding, not a priority one on the screen: those run before keys already
    # queued for the table, so a quick "Down Enter" would choose the row above.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Choose", key_display="enter")]


class DevicesScreen(StepScreen):
    """Pick the device to format."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "reload", "Reload", show=False),  # off the footer: the step keys fit at 80
        Binding("a", "audit", "Audit", show=False),
        Binding("o", "observe", "Observe", show=False),
    ]
    # The details pane goes below the list when the terminal is too narrow for both side by side.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]  # noqa: RUF012 (Textual's own type)

    def __init__(self) -> None:
        super().__init__()
        self._names: dict[str, str] = {}
        self._shown: object = None
        """The inventory on screen: a newer one (hotplug while another step showed) is drawn
        when this screen comes back."""

    def compose(self) -> ComposeResult:
        yield Header()
        with Container(id="devices-body"):
            yield DeviceTable(id="device-table", cursor_type="row")
            with Vertical(id="device-details"):
                yield Static(id="details-title")
                yield ListTable(id="facts", cursor_type="row", show_cursor=False)
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.title = "xfs-advisor: devices"
        table = self.query_one("#device-table", DataTable)
        table.add_column("NAME", key="name")
        for label in ("SIZE", "MEDIA", "CACHE", "FUA", "STRIPE", "STATE"):
            table.add_column(label, key=label.lower())
        facts = self.query_one("#facts", DataTable)
        # The source before the value: a long value (a note) must not push it off screen.
        facts.add_columns("fact", "source", "value", "from")
        self.show_inventory()
        table.focus()

    def show_inventory(self) -> None:
        """(Re)fill the tree from the app's inventory, keeping the cursor on the same device."""
        table = self.query_one("#device-table", DataTable)
        state = self.advisor.state
        if state.reading_devices:
            # The first frame: drawn before the device models (and pydantic) are loaded, which
            # the scan then loads in its thread; the state's inventory is not asked for.
            table.clear()
            self._names = {}
            self._shown = None
            where = _where(state.session.live, state.session.root.root)
            table.border_title = f"reading the devices... ({where})"
            self.query_one("#details-title", Static).update("reading the devices...")
            self.query_one("#facts", DataTable).clear()
            return
        # The device models are loaded by now (the devices were read).
        from advisor.render.devices import badges, columns, tree_rows
        from advisor.tui.device_view import badge_style

        keep = state.device_name
        if table.row_count and table.cursor_row >= 0:
            keep = self._name_at(table.cursor_row) or keep
        table.clear()
        self._names = {}
        self._shown = state.inventory
        cursor = 0
        for i, row in enumerate(tree_rows(state.inventory)):
            device = row.device
            name = Text(row.prefix, style="dim") + Text(terminal(device.display_name))
            no_color = self.app.no_color
            state_text = Text(" ").join(Text(b.text, style=badge_style(b, no_color=no_color))
                                        for b in badges(device))
            table.add_row(name, *columns(device), state_text, key=row.key)
            self._names[row.key] = device.name
            if device.name == keep and not cursor:
                cursor = i
        where = _where(state.inventory.live, state.inventory.sysroot)
        count = len(state.inventory.devices)
        table.border_title = f"{count} device{'' if count == 1 else 's'} ({where})"
        if table.row_count:
            table.move_cursor(row=cursor)
            self._show_details(self._name_at(cursor))
        else:
            self._show_details(None)

    def on_screen_resume(self) -> None:
        state = self.advisor.state
        if not state.reading_devices and self._shown is not state.inventory:
            self.show_inventory()

    def on_devices_changed(self, _message: DevicesChanged) -> None:
        self.show_inventory()

    def _name_at(self, row: int) -> str | None:
        table = self.query_one("#device-table", DataTable)
        try:
            key = table.coordinate_to_cell_key(Coordinate(row, 0)).row_key.value
        except Exception:
            return None
        return self._names.get(key or "")

    def _show_details(self, name: str | None) -> None:
        title = self.query_one("#details-title", Static)
        facts = self.query_one("#facts", DataTable)
        facts.clear()
        device = self.advisor.state.inventory.get(name) if name else None
        if device is None:
            title.update("no device")
            return
        from advisor.tui.device_view import fact_lines

        kind = device.kind + (f" ({device.dm_kind})" if device.dm_kind else "")
        title.update(Text.assemble((terminal(device.path), "bold"), f"  {terminal(kind)}"))
        live = self.advisor.state.inventory.live
        for line in fact_lines(device, live=live, as_root=os.geteuid() == 0):
            value = Text(terminal(line.value), style="dim" if line.value == "unknown" else "")
            facts.add_row(line.name, line.source, value, Text(terminal(line.origin)))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "device-table":
            self._show_details(self._names.get(event.row_key.value or ""))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "device-table":
            name = self._names.get(event.row_key.value or "")
            if name:
                self.choose(name)

    def choose(self, name: str) -> None:
        """On to the questions; for a device in use (mounted, held, holding data), only after
        saying so and asking: its proposal is for a reformat that would destroy what is there."""
        from advisor.render.devices import in_use

        device = self.advisor.state.inventory.get(name)
        reasons = in_use(device) if device is not None else []
        if not reasons:
            self.advisor.choose_device(name)
            return
        question = (f"{name} is in use ({'; '.join(reasons)}). A filesystem made with the "
                    "proposal would replace what is on it (the advisor itself writes nothing "
                    "here). Go on to the questions for it?")
        self.app.push_screen(Confirm(question, "Go on", "Choose another"),
                             lambda yes: self.advisor.choose_device(name) if yes else None)

    def action_audit(self) -> None:
        """The audit of the highlighted device's XFS filesystem (read-only)."""
        table = self.query_one("#device-table", DataTable)
        name = self._name_at(table.cursor_row)
        if name:
            self.advisor.audit_device(name)

    def action_observe(self) -> None:
        """A live view of the highlighted device's mounted XFS filesystem (read-only)."""
        table = self.query_one("#device-table", DataTable)
        name = self._name_at(table.cursor_row)
        if name:
            self.advisor.observe_device(name)

    def action_reload(self) -> None:
        self.advisor.reload_devices()


def _where(live: bool, sysroot: object) -> str:
    """What the list is read from, for its title."""
    return "live system" if live else f"capture {terminal(str(sysroot))}"
