"""A live view of one device's mounted XFS filesystem, from the device screen (`o`): the rates
of the last second, refreshed every second, and the findings as they appear over the time the
view has been open. Read-only, counters only (through the session); a worker reads them and
posts the text, the screen alone touches its widgets."""

from __future__ import annotations

import time
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Label, Static
from textual.worker import Worker, WorkerState, get_current_worker

from advisor.errors import AdvisorError
from advisor.models.device import Device
from advisor.session import Session

#: Seconds between two refreshes.
REFRESH = 1.0


class Refreshed(Message):
    """A new reading of the live view, as text."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class ObserveScreen(ModalScreen[None]):
    """The live view of `device`'s filesystem (escape, q or o close it, and stop the reading)."""

    DEFAULT_CSS = "ObserveScreen { align: center middle; }"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,o", "dismiss", "Close"),
    ]

    def __init__(self, session: Session, device: Device) -> None:
        super().__init__()
        self.session, self.device = session, device
        self.refreshes = 0

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Label(f"Live view of {self.device.name} (read-only; escape closes)",
                        id="observe-title")
            yield Static(f"reading {self.device.name}...", id="observe-body")

    def on_mount(self) -> None:
        self.run_worker(self._watch, name="observe", thread=True, exit_on_error=False)

    def _watch(self) -> None:
        worker = get_current_worker()
        live = self.session.live_observation(self.device)
        due = time.monotonic() + REFRESH
        while not worker.is_cancelled:
            time.sleep(min(0.05, max(due - time.monotonic(), 0)))
            if time.monotonic() >= due:
                due += REFRESH
                self.post_message(Refreshed(self.session.live_text(live)))

    def on_refreshed(self, message: Refreshed) -> None:
        self.refreshes += 1
        self.query_one("#observe-body", Static).update(Text(message.text))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            self.query_one("#observe-body", Static).update(Text(
                error.message if isinstance(error, AdvisorError)
                else f"internal error: {type(error).__name__}: {error}", style="bold red"))

    async def action_dismiss(self, result: None = None) -> None:
        self.workers.cancel_all()
        self.dismiss(result)
