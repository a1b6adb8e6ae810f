"""A live view of one device's mounted XFS filesystem, from the device screen (`o`): the rates
of the last second, refreshed every second, a plot of the key rates over the last minutes, and
the findings as they appear over the time the view has been open. `r` starts recording and,
pressed again, stops and asks where to save the recording (`xfs-advisor observe --replay FILE`
reports it); closing the view while recording asks first: save it, discard it or keep watching.
Read-only, counters only (through the session); a worker reads them and posts what
it read, the screen alone touches its widgets."""

from __future__ import annotations

import datetime
import queue
import time
from collections import deque
from pathlib import Path
from typing import ClassVar, Literal

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static
from textual.worker import Worker, WorkerState, get_current_worker
from textual_plotext import PlotextPlot

from advisor.errors import AdvisorError
from advisor.models.device import Device
from advisor.render.inert import terminal
from advisor.session import Session

#: Seconds between two refreshes.
REFRESH = 1.0
#: Readings the plot keeps (one a second).
PLOTTED = 120
#: Each series' glyph without colour or braille (the key rates in the order the session gives
#: them: transactions, log forces, log writes, creates, removes, attribute sets).
PLAIN_MARKERS = "TFLCRX"
IDLE_STATUS = "r records what the counters show from now on, to a file (observe --replay reads it)"


class Refreshed(Message):
    """A new reading of the live view: its text and the key rates (per second, by label)."""

    def __init__(self, text: str, rates: dict[str, float]) -> None:
        super().__init__()
        self.text, self.rates = text, rates


class RecordingStarted(Message):
    """The worker read the counters a recording starts from."""


class RecordingStopped(Message):
    """The worker read the counters again: the recording, as `observe --record` writes it."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


#: What closing the view while recording can do with the recording.
CloseChoice = Literal["save", "discard", "keep"]


class CloseWhileRecording(ModalScreen[CloseChoice]):
    """Closing the live view while it records: `s` saves the recording (then closes), `d`
    discards it (and closes), `k` or escape keeps watching. Enter on the focused button keeps
    watching: nothing is lost by a stray key."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "choose('save')", "Save"), Binding("d", "choose('discard')", "Discard"),
        Binding("k,escape", "choose('keep')", "Keep watching")]
    AUTO_FOCUS = "#close-keep"

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt-box"):
            yield Label("The view is recording. Save the recording before closing?",
                        id="close-question")
            yield Button("Save it, then close (s)", id="close-save", variant="primary")
            yield Button("Discard it and close (d)", id="close-discard", variant="warning")
            yield Button("Keep watching (k)", id="close-keep")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        choice: CloseChoice = ("save" if event.button.id == "close-save" else "discard"
                               if event.button.id == "close-discard" else "keep")
        self.dismiss(choice)

    def action_choose(self, choice: CloseChoice) -> None:
        self.dismiss(choice)


class RatesPlot(PlotextPlot):
    """The key rates over the last PLOTTED readings, one line each; a rate that never moved is
    left out. Without colour or braille (NO_COLOR, the Linux console) each series is drawn as
    its own letter."""

    def __init__(self, *, plain: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.plain = plain
        self.series: dict[str, deque[float]] = {}
        self.readings = 0

    def add(self, rates: dict[str, float]) -> None:
        self.readings += 1
        for label, value in rates.items():
            points = self.series.setdefault(label, deque([0.0] * (self.readings - 1),
                                                         maxlen=PLOTTED))
            points.append(value)
        self.redraw()

    @property
    def shown(self) -> list[str]:
        """The series drawn: those that moved in the readings kept."""
        return [label for label, points in self.series.items() if any(points)]

    def redraw(self) -> None:
        plt = self.plt
        plt.clear_data()
        for i, label in enumerate(self.series):
            points = list(self.series[label])
            if not any(points):
                continue
            xs = list(range(self.readings - len(points) + 1, self.readings + 1))
            if self.plain:
                marker = PLAIN_MARKERS[i % len(PLAIN_MARKERS)]
                plt.scatter(xs, points, label=f"{marker} {label}", marker=marker)
            else:
                plt.plot(xs, points, label=label, marker="braille")
        first = max(self.readings - PLOTTED + 1, 1)
        step = max(1, -(-(self.readings - first) // 8))
        ticks = list(range(first, self.readings + 1, step))
        if ticks:  # whole seconds: nothing is read between two readings
            plt.xticks([float(t) for t in ticks], [str(t) for t in ticks])
            if len(ticks) == 1:
                plt.xlim(first - 0.5, first + 0.5)
        plt.title("per second" if self.shown else "per second (idle: no key rate moved)")
        plt.xlabel("seconds since the view opened")
        self.refresh()


class ObserveScreen(ModalScreen[None]):
    """The live view of `device`'s filesystem (escape, q or o close it, and stop the reading;
    r starts and stops a recording)."""

    DEFAULT_CSS = """
    ObserveScreen { align: center middle; }
    #observe-box { width: 100%; height: 100%; border: thick $primary; background: $surface;
                   padding: 0 1; }
    #observe-plot { height: 14; }
    #observe-record { color: $text-muted; }
    #observe-record.recording { color: $warning; text-style: bold; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,o", "dismiss", "Close"),
        Binding("r", "record", "Record"),
    ]

    def __init__(self, session: Session, device: Device) -> None:
        super().__init__()
        self.session, self.device = session, device
        self.refreshes = 0
        self.recording = False
        """A recording runs (from the worker's reading after `r`)."""
        self._asked: queue.SimpleQueue[Literal["start", "stop"]] = queue.SimpleQueue()
        """What `r` asked of the worker: it reads the counters, the screen does not."""
        self._pending = False
        """`r` was pressed and the worker has not answered yet."""
        self._close_once_saved = False
        """Closing was asked while recording, to save first: the view closes once saved."""

    def compose(self) -> ComposeResult:
        with Vertical(id="observe-box"):
            yield Label(f"Live view of {self.device.name} (read-only; r records, escape closes)",
                        id="observe-title")
            yield Label(IDLE_STATUS, id="observe-record")
            yield RatesPlot(plain=getattr(self.app, "plain_glyphs", False), id="observe-plot")
            with VerticalScroll():
                yield Static(f"reading {self.device.name}...", id="observe-body")

    def on_mount(self) -> None:
        self.run_worker(self._watch, name="observe", thread=True, exit_on_error=False)

    def _watch(self) -> None:
        worker = get_current_worker()
        live = self.session.live_observation(self.device)
        due = time.monotonic() + REFRESH
        while not worker.is_cancelled:
            time.sleep(min(0.05, max(due - time.monotonic(), 0)))
            try:
                asked = self._asked.get_nowait()
            except queue.Empty:
                asked = None
            if asked == "start":
                live.start_recording()
                self.post_message(RecordingStarted())
            elif asked == "stop":
                self.post_message(RecordingStopped(self.session.live_recording_text(live)))
            if time.monotonic() >= due:
                due += REFRESH
                self.post_message(Refreshed(*self.session.live_reading(live)))

    def on_refreshed(self, message: Refreshed) -> None:
        self.refreshes += 1
        self.query_one("#observe-body", Static).update(Text(message.text))
        self.query_one("#observe-plot", RatesPlot).add(message.rates)

    def action_record(self) -> None:
        if self._pending or not any(w.is_running for w in self.workers):
            return
        self._pending = True
        self._asked.put("stop" if self.recording else "start")

    def on_recording_started(self, message: RecordingStarted) -> None:
        self.recording, self._pending = True, False
        since = datetime.datetime.now().strftime("%H:%M:%S")
        status = self.query_one("#observe-record", Label)
        status.update(f"recording since {since}: r stops it and asks where to save it")
        status.add_class("recording")

    def on_recording_stopped(self, message: RecordingStopped) -> None:
        from advisor.tui.dialogs import save_file

        self.recording, self._pending = False, False
        status = self.query_one("#observe-record", Label)
        status.update(IDLE_STATUS)
        status.remove_class("recording")
        name = f"observe-{terminal(self.device.name)}.json"
        closing, self._close_once_saved = self._close_once_saved, False
        save_file(self.app, f"Save the recording to (relative to {Path.cwd()}; `xfs-advisor "
                  "observe --replay FILE` reports it):", name, "observe recording",
                  lambda: message.text, saved=(lambda _: self._close_view()) if closing else None)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            self.query_one("#observe-body", Static).update(Text(
                error.message if isinstance(error, AdvisorError)
                else f"internal error: {type(error).__name__}: {error}", style="bold red"))

    async def action_dismiss(self, result: None = None) -> None:
        # Only a running worker can read the counters that end a recording.
        if self.recording and not self._pending and any(w.is_running for w in self.workers):
            self.app.push_screen(CloseWhileRecording(), self._close_answered)
            return
        self._close_view()

    def _close_answered(self, choice: CloseChoice | None) -> None:
        """The answer to closing while recording."""
        if choice == "discard":
            self.app.notify("the recording was discarded")
            self._close_view()
        elif choice == "save" and self.recording and not self._pending:
            # The worker reads the counters that end the recording; the save prompt follows
            # (on_recording_stopped), and the view closes once the file is written.
            self._close_once_saved = self._pending = True
            self._asked.put("stop")

    def _close_view(self) -> None:
        self.workers.cancel_all()
        if self.is_attached and self.app.screen is self:
            self.dismiss(None)
