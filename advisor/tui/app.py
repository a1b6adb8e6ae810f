"""The interactive advisor: devices -> workload -> proposal -> validation, keyboard first.

Each step is a Textual mode (its screen keeps its state while another is shown). The app holds the
shared state (the inventory, the chosen device, the answers) and the Session (advisor.session) that
the command line uses too; screens read the state and call the core only through the session.
Nothing here decides anything about XFS.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import importlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.filter import LineFilter
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from advisor.errors import AdvisorError
from advisor.render.inert import terminal, terminal_lines
from advisor.session import Session
from advisor.signals import ENDING_SIGNALS, STOPPING_SIGNALS
from advisor.tui.messages import DevicesChanged, DevicesRead, HotplugSeen, ProposalChanged

if TYPE_CHECKING:
    # The models (and so pydantic) are loaded after the first frame, by the first scan: the
    # device screen says "reading the devices..." without them.
    from advisor.models.device import Device, Inventory
    from advisor.models.proposal import Proposal
    from advisor.models.workload import Workload

STEPS = ("devices", "workload", "proposal", "validate")


@dataclass
class AdvisorState:
    """What the person has chosen so far; every screen reads it, the screens that own a part of it
    write it."""

    session: Session
    """Where devices come from, which rules apply: the same core the command line uses."""
    _inventory: Inventory | None = field(default=None, repr=False)
    """`inventory`, once read or first asked for."""
    _workload: Workload | None = field(default=None, repr=False)
    """`workload`, once given or first asked for."""
    device_name: str | None = None
    workload_problem: str | None = None
    """Why the form's current text is not a valid workload, when it is not."""
    workload_path: str | None = None
    """The file the answers were loaded from or last saved to."""
    validation_bytes: int | None = None
    """Size of the loop device of a validation run (None: the bench's default)."""
    validation_budget: float | None = None
    """Wall-time budget of a validation run in seconds (None: the bench's default)."""
    proposal: Proposal | None = None
    """The core's proposal for `proposal_for` (device name, answers as JSON)."""
    proposal_for: tuple[str, str] | None = None
    proposal_problem: str | None = None
    """Why there is no proposal to show (no device, invalid answers, an error of the core)."""
    proposing: bool = False
    """A proposal is being computed for the latest device and answers."""
    reading_devices: bool = False
    """The first scan of the devices is still running: `inventory` is empty until it ends (the
    screens paint first, the device list fills in)."""

    @property
    def inventory(self) -> Inventory:
        """The devices: none (an empty inventory of the session's root) until the first scan
        ends, made when first asked for (the first frame does not ask)."""
        if self._inventory is None:
            from advisor.models.device import Inventory

            self._inventory = Inventory(sysroot=str(self.session.root.root),
                                        live=self.session.live, devices=[])
        return self._inventory

    @inventory.setter
    def inventory(self, inventory: Inventory) -> None:
        self._inventory = inventory

    @property
    def workload(self) -> Workload:
        """The last valid answers (the form may hold invalid text meanwhile): none given until
        the person answers, made when first asked for (the first frame does not ask)."""
        if self._workload is None:
            from advisor.models.workload import Workload

            self._workload = Workload()
        return self._workload

    @workload.setter
    def workload(self, workload: Workload) -> None:
        self._workload = workload

    @property
    def device(self) -> Device | None:
        return self.inventory.get(self.device_name) if self.device_name else None


@dataclass
class ActiveRun:
    """A validation going on in a worker thread: `cancel` stops it (its clean-up then runs in
    that thread), `done` is set once it has ended, cleaned up or not."""

    cancel: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def running(self) -> bool:
        return not self.done.is_set()




ProposalResult = tuple[tuple[str, str], "Proposal | None", str | None]


class AdvisorApp(App[int]):
    """The xfs-advisor TUI."""

    TITLE = "xfs-advisor"
    CSS_PATH = "app.tcss"
    # The step screens show these keys in their footers (advisor.tui.step); here they are a
    # fallback for dialogs. ctrl+q is no priority binding, so the footer can show it.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f2", "step('devices')", "Devices", show=False),
        Binding("f3", "step('workload')", "Workload", show=False),
        Binding("f4", "step('proposal')", "Proposal", show=False),
        Binding("f5", "step('validate')", "Validate", show=False),
        Binding("f1", "help", "Help", show=False),
        Binding("ctrl+q", "quit", "Quit", show=False),
        Binding("ctrl+t", "toggle_theme", "Theme", show=False),
    ]

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Every notice as plain text, escaped (advisor.render.inert): messages carry device
        names, paths and errors from outside, which neither Rich markup (`[link=...]`) nor a
        terminal sequence may act on."""
        super().notify(terminal_lines(message), title=terminal(title), severity=severity,
                       timeout=timeout, markup=False)

    def action_help_quit(self) -> None:
        """ctrl+c does not quit a Textual app: it says which key does. Textual's own notice carries
        markup (`[b]q[/b]`), which the plain-text notices here would show as it is."""
        for active in self.active_bindings.values():
            if active.binding.action in ("quit", "app.quit"):
                self.notify(f"Press {self.get_key_display(active.binding)} to quit",
                            title="Do you want to quit?")
                return

    def __init__(
        self,
        state: AdvisorState,
        *,
        reload_inventory: Callable[[], Inventory] | None = None,
        first_inventory: Callable[[], Inventory] | None = None,
        follow_hotplug: bool = False,
        start: str = "devices",
    ) -> None:
        super().__init__()
        self._console_font: LineFilter | None = None
        if os.environ.get("TERM") == "linux":  # its font lacks most symbols
            from advisor.tui.console import ConsoleFont

            self._console_font = ConsoleFont()
        self.state = state
        self._reload_inventory = reload_inventory
        self._first_inventory = first_inventory
        self._follow_hotplug = follow_hotplug
        self._start = start
        self._observer: Any = None
        self._proposal_worker: Worker[ProposalResult] | None = None
        self.active_run: ActiveRun | None = None
        """The validation going on, if any (set by the validate screen)."""
        self.devices_lock = threading.RLock()
        """Held while the devices are read or a dead run's leftovers recovered: a read opens
        every device (libblkid), which must not meet a recovery detaching a loop device."""
        self._recheck_worker: Worker[Inventory | None] | None = None
        self.ended_by: int | None = None
        """The signal that ended the app, if one did."""
        self.collect_after_first_frame = False
        """Turn the cyclic garbage collector on once the first frame is drawn (run_tui: when the
        process's start left it off)."""

    @property
    def plain_glyphs(self) -> bool:
        """Draw with shapes and ASCII, not colour and symbols: without colour (NO_COLOR) two
        series differ only by glyph; the Linux console's font has no braille."""
        return self.no_color or self._console_font is not None

    def get_line_filters(self) -> Sequence[LineFilter]:
        filters = super().get_line_filters()
        return filters if self._console_font is None else [*filters, self._console_font]

    def on_mount(self) -> None:
        self._catch_ending_signals()
        self.call_after_refresh(self._first_frame_drawn)
        for name in STEPS:
            self.add_mode(name, functools.partial(self._step_screen, name))
        self.switch_mode(self._start)
        if self._first_inventory is not None:
            self.state.reading_devices = True  # the first frame says so
            # Started once the first frame is drawn: a thread started now would hold the
            # interpreter half the time while the screen is laid out (the scan's imports and
            # reads), and the first paint waited for it. So is the hotplug monitor (pyudev: 8 ms
            # of CPU), just before the scan.
            self.call_after_refresh(self._read_devices_first)
        elif self._follow_hotplug:  # before any scan: no event falls between the two
            self._start_hotplug()

    def _step_screen(self, step: str) -> Screen[Any]:
        """A step's screen, its module imported only when first shown (a faster first paint).
        It is marked as styled by the app's current CSS, which it will be when it mounts:
        Textual otherwise takes a new mode's screen for one styled by older CSS and, on the
        switch, parses every stylesheet again from scratch and restyles every widget shown,
        twice (8% of the instructions to the first frame). A theme change still restyles it
        (Textual counts that change: the screen's mark is then behind). The mark is Textual's
        own (private) counter: textual is pinned to 8.2 (pyproject.toml)."""
        module = importlib.import_module(f"advisor.tui.{step}")
        screen: Screen[Any] = getattr(module, f"{step.capitalize()}Screen")()
        screen._css_update_count = self._css_update_count
        return screen

    def _first_frame_drawn(self) -> None:
        """The process's own start (advisor.cli) keeps the cyclic garbage collector off until
        the first screen is drawn: what was built until then is frozen (never traversed again),
        and the collector is on from here. A run that had it on (a test) keeps its own."""
        if self.collect_after_first_frame:
            self.collect_after_first_frame = False
            gc.freeze()
            gc.enable()

    # ---- the first scan, after the first paint ----

    def _read_devices_first(self) -> None:
        """Read the devices in a thread: the screen paints at once and the list fills in when
        the scan ends (a host with thousands of devices takes seconds). Hotplug is followed
        from just before: no event falls between the two."""
        read = self._first_inventory
        if read is None:
            return
        if self._follow_hotplug:
            self._start_hotplug()
        self.state.reading_devices = True

        def scan() -> None:
            try:
                inventory, problem = read(), None
            except AdvisorError as err:
                inventory, problem = None, err.message
            except Exception as err:  # a bug in the core: say so on screen, keep the session
                inventory, problem = None, f"internal error: {type(err).__name__}: {err}"
            with contextlib.suppress(RuntimeError):  # the app closed meanwhile
                self.post_message(DevicesRead(inventory, problem))

        threading.Thread(target=scan, name="first-device-scan", daemon=True).start()

    def on_devices_read(self, message: DevicesRead) -> None:
        self.state.reading_devices = False
        if message.inventory is not None:
            self.state.inventory = message.inventory
        else:
            self.notify(f"could not read the devices: {message.problem} (r: read again)",
                        severity="error")
        self._tell(DevicesChanged())

    # ---- ending: never with a validation still running ----

    def _catch_ending_signals(self) -> None:
        """A closed terminal (SIGHUP: an SSH drop), SIGTERM or SIGQUIT: cancel the run and exit;
        run_tui() then waits for its clean-up. Without this the process dies at once and leaves
        a loop device attached and an XFS mounted."""
        # signal.signal, not the event loop's handlers: those run only when the loop turns, and
        # a loop stuck on a vanished terminal would then ignore SIGTERM too. A Python handler
        # runs in the main thread even inside a blocking lock wait.
        loop = asyncio.get_running_loop()

        def handler(signum: int, frame: object) -> None:
            self._ended_by_signal(signum, loop)

        for sig in ENDING_SIGNALS:
            with contextlib.suppress(ValueError, OSError):
                signal.signal(sig, handler)

    def _ended_by_signal(self, sig: int, loop: asyncio.AbstractEventLoop) -> None:
        if self.ended_by is not None:
            return  # one ending is enough; the clean-up and the watchdog are under way
        self.ended_by = sig
        self.cancel_run()
        # With its terminal gone, Textual may never finish exiting (seen: every thread parked
        # on a lock after SIGHUP): once the run's clean-up is done, the process ends regardless.
        threading.Thread(target=_end_after_clean_up, args=(self.active_run, 128 + sig),
                         name="end-after-signal", daemon=True).start()
        with contextlib.suppress(RuntimeError):  # the loop may be closing already
            loop.call_soon_threadsafe(self.exit, 128 + sig)

    def cancel_run(self) -> bool:
        """Cancel the running validation, if any; True when one was running."""
        run = self.active_run
        if run is None or not run.running:
            return False
        run.cancel.set()
        return True

    async def action_quit(self) -> None:
        run = self.active_run
        if run is None or not run.running:
            self.exit()
            return

        def answered(quit_: bool | None) -> None:
            if not quit_:
                return
            self.cancel_run()
            self.notify("cleaning up the validation run: stopping fio, unmounting, detaching...",
                        timeout=60)

            def exit_when_done() -> None:
                if run.done.is_set():
                    self.exit()

            self.set_interval(0.2, exit_when_done, name="quit-after-clean-up")

        from advisor.tui.dialogs import Confirm

        self.push_screen(Confirm(
            "A validation is running. Quit? It is cancelled first: fio stopped, the test "
            "filesystem unmounted, the loop device detached, the temporary files removed.",
            "Cancel the run and quit", "Stay"), answered)

    # ---- steps ----

    def action_step(self, name: str) -> None:
        if name in STEPS and self.current_mode != name:
            self.switch_mode(name)

    def choose_device(self, name: str) -> None:
        """The person picked a device: remember it and move on to the questions."""
        self.state.device_name = name
        self.sub_title = name
        self.switch_mode("workload")

    def audit_device(self, name: str) -> None:
        """Show the audit of the XFS filesystem on device `name` (read-only)."""
        from advisor.tui.audit import AuditScreen

        device = self.state.inventory.get(name)
        if device is None:
            self.notify(f"{name} is gone", severity="error")
            return
        self.push_screen(AuditScreen(self.state.session, device.path, self.state.workload))

    def observe_device(self, name: str) -> None:
        """A live view of the XFS filesystem mounted from device `name` (read-only)."""
        from advisor.tui.observe import ObserveScreen

        device = self.state.inventory.get(name)
        if device is None:
            self.notify(f"{name} is gone", severity="error")
            return
        if not device.usage.mountpoints or not self.state.inventory.live:
            self.notify(f"{name}: no mounted filesystem to watch here", severity="warning")
            return
        self.push_screen(ObserveScreen(self.state.session, device))

    def action_help(self) -> None:
        from advisor.tui.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.current_mode))

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from _screen_actions(screen)
        yield from super().get_system_commands(screen)
        for name in STEPS:
            yield SystemCommand(f"Go to {name}", f"Show the {name} step",
                                lambda name=name: self.action_step(name))
        yield SystemCommand("Toggle light/dark theme", "Switch between the light and dark theme",
                            self.action_toggle_theme)

    # ---- the proposal, computed off the event loop ----

    def request_proposal(self) -> None:
        """Ask the core for the proposal of the current device and answers, in a worker thread
        (mkfs.xfs dry runs take a few hundred ms); the screen shown hears when it is there
        (ProposalChanged), the others when they are shown again."""
        state = self.state
        device = state.device
        problem = None
        if device is None:
            problem = "No device chosen yet: F2 shows the devices."
        elif state.workload_problem:
            problem = f"The answers are not valid ({state.workload_problem})."
        if problem is not None or device is None:
            state.proposal, state.proposal_for, state.proposal_problem = None, None, problem
            state.proposing = False
            self._tell(ProposalChanged())
            return
        key = (device.name, state.workload.model_dump_json())
        if key == state.proposal_for:
            if state.proposing and self._proposal_worker is None:
                state.proposing = False
                self._tell(ProposalChanged())
            return
        state.proposing = True
        self._tell(ProposalChanged())
        if self._proposal_worker is not None:
            return  # one at a time: when it ends, the latest answers are asked for (coalescing)
        workload, session = state.workload, state.session

        def compute() -> ProposalResult:
            try:
                return key, session.propose(device, workload), None
            except AdvisorError as err:
                return key, None, err.message
            except Exception as err:  # a bug in the core: say so on screen, keep the session
                return key, None, f"internal error: {type(err).__name__}: {err}"

        self._proposal_worker = self.run_worker(
            compute, name="proposal", group="proposal", thread=True, exit_on_error=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker is self._recheck_worker and worker.is_finished:
            self._rechecked(event)
            return
        if worker is not self._proposal_worker or not worker.is_finished:
            return
        self._proposal_worker = None
        state = self.state
        if event.state == WorkerState.SUCCESS and worker.result is not None:
            result: ProposalResult = worker.result
            key, proposal, problem = result
            current = state.device
            # Not while the form holds invalid text: its last valid answers may be the ones just
            # computed, and showing their line would look like the answer to the invalid edit.
            if (current is not None and not state.workload_problem
                    and key == (current.name, state.workload.model_dump_json())):
                state.proposal, state.proposal_problem = proposal, problem
                state.proposal_for = key if problem is None else None
                state.proposing = False
                self._tell(ProposalChanged())
                return
        # The answers changed while it ran (or it failed): ask for the current ones.
        state.proposal_for = None
        self.request_proposal()

    def _tell(self, message: Message) -> None:
        """Tell the step shown (a dialog on top ignores it; the step reads the state when it is
        shown again)."""
        with contextlib.suppress(Exception):  # no screen yet, or the app is closing
            self.screen.post_message(message)

    # ---- devices coming and going ----

    def reload_devices(self) -> None:
        """Read the devices again (hotplug, `r`, the check before a run) and tell the screen
        shown."""
        if self._reload_inventory is None or self.state.reading_devices:
            return  # the first scan is still running: it will show what is there
        try:
            with self.devices_lock:
                inventory = self._reload_inventory()
        except Exception as err:  # a device vanishing mid-scan must not end the session
            self.notify(f"could not re-read devices: {err}", severity="error")
            return
        self._take_inventory(inventory)

    @property
    def run_going(self) -> bool:
        """A validation (or attribution) is running."""
        return self.active_run is not None and self.active_run.running

    def recheck_devices(self) -> None:
        """Read the devices again in a worker thread (F5 shown: a wipefs or a mount since the
        list was read changes the guard's verdicts). Never while a run goes, and never at the
        same time as a recovery (`devices_lock`); a read that ends after a run started is
        dropped."""
        read = self._reload_inventory
        if read is None or self.state.reading_devices or self.run_going:
            return
        if self._recheck_worker is not None and not self._recheck_worker.is_finished:
            return  # one at a time; it reads the devices as they are now anyway
        lock = self.devices_lock

        def work() -> Inventory | None:
            if not lock.acquire(blocking=False):
                return None  # a recovery or the check before a run reads them right now
            try:
                return read()
            finally:
                lock.release()

        self._recheck_worker = self.run_worker(work, name="recheck-devices",
                                               group="recheck-devices", thread=True,
                                               exit_on_error=False)

    def _rechecked(self, event: Worker.StateChanged) -> None:
        self._recheck_worker = None
        if event.state != WorkerState.SUCCESS or self.run_going:
            return  # a failed re-check keeps the list as it was; a run reads them itself
        from advisor.models.device import Inventory

        inventory = event.worker.result
        if isinstance(inventory, Inventory):
            self._take_inventory(inventory)

    def _take_inventory(self, inventory: Inventory) -> None:
        before = self.state.inventory
        self.state.inventory = inventory
        chosen = self.state.device_name
        if chosen and before.get(chosen) and self.state.inventory.get(chosen) is None:
            self.notify(f"{chosen} is gone (detached or removed): F2 to choose another",
                        severity="warning")
        self._tell(DevicesChanged())

    def _start_hotplug(self) -> None:
        try:
            import pyudev

            context = pyudev.Context()
            # The kernel's own events need no udevd (often absent in VMs and containers); only
            # root may read them, others get udevd's.
            source = "kernel" if os.geteuid() == 0 else "udev"
            monitor = pyudev.Monitor.from_netlink(context, source=source)
            monitor.filter_by("block")
            self._observer = pyudev.MonitorObserver(monitor, callback=self._udev_event)
            self._observer.start()
        except Exception as err:  # no netlink (container, not root): the list just does not follow
            self.notify(f"not following hotplug: {err}", severity="warning")
            self._observer = None

    def _udev_event(self, _device: object) -> None:
        """In the observer's thread: a message, never a wait. call_from_thread blocked this
        thread until the app ran the call, so an event arriving while the app closed either
        raised (CancelledError: a thread's traceback on the terminal being handed back) or
        waited for ever. A closed app refuses the message; a closed loop raises RuntimeError."""
        with contextlib.suppress(RuntimeError):
            self.post_message(HotplugSeen())

    def on_hotplug_seen(self, _message: HotplugSeen) -> None:
        # Events come in bursts (a disk and its partitions): read once when they settle.
        self.set_timer(0.3, self.reload_devices, name="hotplug")

    def on_unmount(self) -> None:
        if self._observer is not None:
            with contextlib.suppress(Exception):
                self._observer.send_stop()


#: Actions of a step's own keys that make no sense from the palette (moving the focus, scrolling).
_NOT_IN_PALETTE = frozenset({"leave_field", "edit", "scroll_body(1)", "scroll_body(-1)",
                             "app.quit"})


#: Clearer names in the palette than the footer has room for.
_PALETTE_TITLES = {"run": "Validate: run the A/B benchmark", "cancel": "Cancel the validation run",
                   "copy_mkfs": "Copy the mkfs command",
                   "copy_fstab": "Copy the fstab line",
                   "audit": "Audit the highlighted device's XFS filesystem (read-only)",
                   "save_report": "Save the validation report (Markdown or JSON)",
                   "more_rounds": "Validate: more rounds for the last run (its pairs kept)"}


def _screen_actions(screen: Screen[Any]) -> Iterable[SystemCommand]:
    """The shown step's own actions (save, copy, validate...), named with their key, so the
    palette finds them by what they do."""
    for binding in vars(type(screen)).get("BINDINGS", []):
        if not isinstance(binding, Binding) or binding.action in _NOT_IN_PALETTE:
            continue
        key = binding.key_display or binding.key.split(",")[0]
        title = _PALETTE_TITLES.get(binding.action, binding.description)
        yield SystemCommand(f"{title} ({key})",
                            f"On this step: {binding.description.lower()}",
                            functools.partial(screen.run_action, binding.action))


def build_app(session: Session, *, device: str | None = None, workload: Workload | None = None,
              workload_path: str | None = None, start: str | None = None,
              scan_after_paint: bool = False) -> AdvisorApp:
    """The app over `session`. With `device`, the devices are read before any screen shows, so a
    bad device is a one-line error, not a broken screen, and it opens on the questions, or on
    the proposal when the answers say something; `start` overrides that (tests). Without one
    and with `scan_after_paint` (the command line), the device list shows at once, empty, and
    fills in when the scan ends; otherwise the devices are read first."""
    later = scan_after_paint and not device
    state = AdvisorState(session=session, _inventory=None if later else session.inventory(),
                         _workload=workload, workload_path=workload_path)
    first = "devices"
    if device:
        state.device_name = session.device(device).name
        first = "proposal" if state.workload.answered() else "workload"
    return AdvisorApp(state, reload_inventory=lambda: session.inventory(refresh=True),
                      first_inventory=session.inventory if later else None,
                      follow_hotplug=session.follows_hotplug, start=start or first)


def app_from_args(args: argparse.Namespace) -> AdvisorApp:
    """The app for the command line's arguments (`--sysroot`, `--rules`, `--device`, the
    `--workload` file with any answer flags on top, as `xfs-advisor --json` reads them)."""
    workload = None
    if _answers_given(args):  # advisor.answers makes the workload model: pydantic
        from advisor.answers import workload_from_args

        workload = workload_from_args(args)
    session = Session(sysroot=getattr(args, "sysroot", None),
                      rules_dir=getattr(args, "rules", None))
    return build_app(session, device=getattr(args, "device", None), workload=workload,
                     workload_path=getattr(args, "workload", None), scan_after_paint=True)


def _answers_given(args: argparse.Namespace) -> bool:
    """A --workload file or an answer flag given (what advisor.answers.workload_from_args reads:
    without either, its workload is the one of no answers)."""
    return bool(getattr(args, "workload", None)) or any(
        key.startswith("answer:") and value is not None for key, value in vars(args).items())


def run_tui(args: argparse.Namespace) -> int:
    """Run the interactive advisor until the person quits; the exit code."""
    app = app_from_args(args)
    app.collect_after_first_frame = not gc.isenabled()
    try:
        result = app.run()
    except OSError:  # the terminal went away under the screen (EIO): clean up all the same
        result = 128 + signal.SIGHUP
    finish_run(app)
    return int(result or 0)


#: Seconds the app gets to exit by itself after an ending signal (and any clean-up) before the
#: process is ended for it.
EXIT_GRACE = 5.0


def _end_after_clean_up(run: ActiveRun | None, code: int) -> None:
    """Wait (without limit) for the run's clean-up, then EXIT_GRACE, then end the process: what
    a dropped SSH session must never leave is a spinning process or, worse, a half-undone run."""
    if run is not None:
        run.done.wait()
    time.sleep(EXIT_GRACE)
    os._exit(code)


def finish_run(app: AdvisorApp) -> None:
    """After the screen is gone: a validation still running (quit, a closed terminal, a signal)
    is cancelled and its clean-up waited for, saying so where a terminal may still listen."""
    run = app.active_run
    if run is None or not run.running:
        return
    run.cancel.set()
    with contextlib.suppress(OSError):
        print("xfs-advisor: cleaning up the validation run...", file=sys.stderr, flush=True)
    # A further Ctrl-C, SIGHUP or SIGTERM while waiting must not cut the clean-up short.
    held = {sig: signal.signal(sig, signal.SIG_IGN) for sig in STOPPING_SIGNALS}
    try:
        run.done.wait()
    finally:
        for sig, previous in held.items():
            signal.signal(sig, previous)
