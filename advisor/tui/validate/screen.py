"""The validate step's screen: its widgets, keys and footer; what it shows and does is its parts'
(targets, run, report)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal, VerticalScroll
from textual.widgets import DataTable, Footer, Header, Input, Label, ProgressBar, Select, Static

from advisor.tui.messages import DevicesChanged
from advisor.tui.validate.run import RunView
from advisor.tui.validate.targets import LOOP


class ValidateScreen(RunView):
    """Choose where to run, read the plan, run, watch, read the verdicts, or cancel."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "run", "Run"),
        Binding("escape", "cancel", "Cancel run"),
        Binding("ctrl+s", "save_report", "Save report", show=False),  # help and palette say it
        Binding("ctrl+b", "attribute", "Attribute", show=False),  # offered after a verdict
        Binding("ctrl+e", "more_rounds", "More rounds", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="validate-body"):
            yield Static(id="sides")
            with Horizontal(classes="question-row"):
                yield Label("run on", classes="question-name")
                self._shown_targets = self._targets()
                yield Select(self._shown_targets, value=LOOP, allow_blank=False, id="target",
                             compact=True)
            yield Static(id="guard")
            yield Input(id="confirm", compact=True)
            # The run's state right under the target: after ctrl+r it is on screen at 80x24,
            # not below a command plan taller than the terminal.
            yield ProgressBar(id="progress", show_eta=False)
            yield Static(id="step")
            yield Static("Command plan", classes="section-title")
            yield Static(id="plan", classes="note")
            yield Static(id="verdict", classes="section-title")
            yield DataTable(id="metrics", cursor_type="row", show_cursor=False)
            yield Static(id="next", classes="note")
            yield Grid(id="plots")
        yield Footer(compact=True, show_command_palette=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """ctrl+r in the footer while nothing runs, escape while something does: both never fit
        in 80 columns beside the steps' keys."""
        if action == "run":
            return not self.running
        if action == "cancel":
            return self.running
        return True

    def on_mount(self) -> None:
        self.title = "xfs-advisor: validate"
        self._prepare_report()
        self.query_one("#progress").display = False
        self.query_one("#step").display = False  # shown with the first run

    def on_screen_resume(self) -> None:
        self.advisor.request_proposal()
        if self.advisor.state.inventory.live and not self.running:
            # The devices as they are now (a wipefs, a mount since the list was read): read
            # again off the event loop; the list follows when the read ends (DevicesChanged).
            self.advisor.recheck_devices()
        self.refresh_targets()
        self.show_proposal()

    def on_devices_changed(self, _message: DevicesChanged) -> None:
        self.refresh_targets()
        if self._outcome_to_show:
            self._outcome_to_show = False
            self.call_after_refresh(self._show_outcome)
