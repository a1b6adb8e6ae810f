"""A run of the validate step: started (ctrl+r), continued (ctrl+e), attributed (ctrl+b) or
cancelled (escape). advisor.bench runs it in a worker thread that only posts messages; the screen
follows them and shows the report when the worker ends."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Input, ProgressBar, Static
from textual.worker import Worker, WorkerState

from advisor.errors import AdvisorError, DeviceProblem
from advisor.render.inert import terminal
from advisor.tui.messages import RunProgressed, RunSampled
from advisor.tui.validate.report import ReportView
from advisor.tui.validate.targets import LOOP, TargetsView

if TYPE_CHECKING:
    from advisor.bench.plan import Plan
    from advisor.models.bench import Attribution, ValidationReport


class RunView(TargetsView, ReportView):
    """The validate screen's runs: one at a time, on the chosen target."""

    def __init__(self) -> None:
        super().__init__()
        self._cancel: threading.Event | None = None
        self._worker: Worker[ValidationReport] | None = None
        self._attributing: Worker[Attribution] | None = None
        self._outcome_to_show = False
        """A run just ended: once the devices read again are on screen (the guard above the
        run's state changes height), its outcome is scrolled back under the target."""

    @property
    def running(self) -> bool:
        return any(w is not None and not w.is_finished for w in (self._worker, self._attributing))

    def action_run(self) -> None:
        if self.running:
            self.notify("a run is already going: escape cancels it", severity="warning")
            return
        confirm = self.query_one("#confirm", Input)
        confirmed = confirm.display and confirm.value.strip() == self.target
        if self.target != LOOP and not confirm.display:
            # Refused when the list was read: the guard again on the device as it is now (a
            # wipefs since); usable now, it still needs its name typed.
            if self._still_scratch({}):
                self.refresh_targets()
                self._show_guard()
                self.notify(f"{self.target} is usable now: type {self.target} in the box under "
                            "the target to confirm, then ctrl+r", severity="warning")
            return
        if self.target != LOOP and not confirmed:
            self.notify(f"not confirmed: type {self.target} in the box under the target first",
                        severity="error")
            return
        try:
            # First: a killed run's mount would fail the guard. Never while the devices are
            # being read (a read opens them; a recovery detaches).
            with self.advisor.devices_lock:
                recovered = self.advisor.state.session.recover(loop=self.target == LOOP)
        except AdvisorError as err:
            self.notify(err.message, severity="error")
            return
        for line in recovered.done:
            self.notify(f"recovered: {line}")
        for note in recovered.notes:
            self.notify(note, severity="warning")
        if self.target != LOOP and not self._still_scratch(recovered.test_filesystems):
            return
        try:
            plan = self._plan()
        except AdvisorError as err:
            self.notify(err.message, severity="error")
            return
        if plan is None:
            self.notify("no proposal to validate yet", severity="warning")
            return
        state = self.advisor.state
        session = state.session
        # The loop device's own proposal only when none was shown (no device chosen on F2).
        resolve_b = session.loop_side(state.workload) if plan.device is None \
            and plan.proposed is None else None
        def call(progress: Callable[[int, int, str], None], cancel: threading.Event,
                 sampled: Callable[[str, int, dict[str, float]], None]) -> ValidationReport:
            return session.run_validation(plan, progress=progress, cancel=cancel,
                                          resolve_b=resolve_b, on_sample=sampled,
                                          recovered=recovered)

        self._launch(plan, 2 * plan.run_limit + 1, call)

    def _launch(self, plan: Plan, total: int, call: Callable[[Callable[[int, int, str], None],
                                                  threading.Event,
                                                  Callable[[str, int, dict[str, float]], None]],
                                                 ValidationReport]) -> None:
        """Run `call(progress, cancel, on_sample)` in a worker thread, the screen following it;
        `plan` is what it runs (kept for attribution after the verdict)."""
        from advisor.tui.app import ActiveRun

        active = ActiveRun()
        self.advisor.active_run = active
        cancel = active.cancel
        self._cancel = cancel
        self._clear_report(plan)
        bar = self.query_one("#progress", ProgressBar)
        bar.update(total=total, progress=0)
        bar.display = True
        step = self.query_one("#step", Static)
        step.update("starting: preparing the scratch device")
        step.display = True

        def progress(done: int, total: int, what: str) -> None:
            self.post_message(RunProgressed(done, total, what))  # thread-safe; widgets untouched

        def sampled(side: str, round_index: int, values: dict[str, float]) -> None:
            self.post_message(RunSampled(cancel, side, round_index, values))

        def work() -> ValidationReport:
            try:
                return call(progress, cancel, sampled)
            finally:
                active.done.set()

        self._worker = self.run_worker(work, name="validate", group="validate", thread=True,
                                       exit_on_error=False)
        self.refresh_bindings()
        self.call_after_refresh(self._show_run_state)

    def _show_run_state(self) -> None:
        self.query_one("#progress").scroll_visible(top=True, animate=False)

    def _show_outcome(self) -> None:
        """A finished run's outcome in view. What the run left on a device it was given: under
        the target, the body from its top (what the list now says of the device, then the
        outcome), scrolled down only as far as the outcome needs. Scrolled to the progress bar
        instead, the outcome went off the screen's top when the guard above it got shorter
        after the devices were read again (at 80x24). Otherwise the verdict at the top: the
        command plan above it is what was shown before the run, and below it the verdict was
        off the screen."""
        body = self.query_one("#validate-body")
        body.scroll_home(animate=False, immediate=True)
        if self.report is not None and not self.report.device_left:
            body.scroll_to_widget(self.query_one("#verdict"), top=True, animate=False,
                                  immediate=True)
            return
        body.scroll_to_widget(self.query_one("#step"), animate=False, immediate=True)

    def action_attribute(self) -> None:
        """After a verdict: one A/B run per option of B (Session.attribute) in a worker."""
        offer = self._attribution_offer()
        if self.running or not offer.startswith("ctrl+b"):
            self.notify(offer or "no verdict yet: run first (ctrl+r)", severity="warning")
            return
        assert self._ran is not None and self.report is not None
        from advisor.tui.app import ActiveRun

        plan, combined, session = self._ran, self.report, self.advisor.state.session
        active = ActiveRun()
        self.advisor.active_run = active
        self._cancel = cancel = active.cancel
        bar = self.query_one("#progress", ProgressBar)
        bar.update(total=None, progress=0)
        bar.display = True

        def progress(done: int, total: int, what: str) -> None:
            self.post_message(RunProgressed(done, total, what))

        def work() -> Attribution:
            try:
                return session.attribute(plan, combined, progress=progress, cancel=cancel)
            finally:
                active.done.set()

        self._attributing = self.run_worker(work, name="attribute", group="validate",
                                            thread=True, exit_on_error=False)
        self.refresh_bindings()
        self.call_after_refresh(self._show_run_state)

    def action_more_rounds(self) -> None:
        """Continue the last run with more pairs (Session.more_rounds): its pairs kept, a fresh
        loop device of the same size, up to what the report says would likely resolve it."""
        if self.running:
            self.notify("a run is already going: escape cancels it", severity="warning")
            return
        report = self.report
        if report is None:
            self.notify("no report yet: more rounds continue a finished run",
                        severity="warning")
            return
        session = self.advisor.state.session
        try:
            # Refusals (a calibration, a scratch device) before anything is made.
            plan = session.continuation_plan(report)
            session.recover(loop=True)
        except AdvisorError as err:
            self.notify(err.message, severity="error")
            return
        self._launch(plan, 2 * (plan.run_limit - report.rounds) + 1,
                     lambda progress, cancel, sampled:
                     session.more_rounds(report, progress=progress, cancel=cancel,
                                         on_sample=sampled))

    def action_cancel(self) -> None:
        if self.running and self._cancel is not None:
            self._cancel.set()
            self.query_one("#step", Static).update("cancelling: stopping fio, unmounting, "
                                                   "detaching...")

    def on_run_progressed(self, message: RunProgressed) -> None:
        if self._cancel is not None and self._cancel.is_set():
            return
        self.query_one("#progress", ProgressBar).update(total=message.total + 1,
                                                        progress=message.done)
        self.query_one("#step", Static).update(Text(terminal(message.what)))

    def on_run_sampled(self, message: RunSampled) -> None:
        if message.run is not self._cancel or self.report is not None:
            return  # from an earlier run
        self._plot_sample(message.side, message.values)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is self._attributing and event.worker.is_finished:
            self._attributed(event)
            return
        if event.worker is not self._worker or not event.worker.is_finished:
            return
        self.refresh_bindings()
        step = self.query_one("#step", Static)
        if event.state == WorkerState.SUCCESS and event.worker.result is not None:
            bar = self.query_one("#progress", ProgressBar)
            if bar.total is not None:  # judged: done, however short of "at most" it stopped
                bar.update(progress=bar.total)
            report = event.worker.result
            step.update(Text(f"done on {terminal(report.environment.device)}"))
            self.show_report(report)
            if report.device_left:
                # What the run left on a device the user gave: said here, and the target list
                # read again, so that it shows the device as it now is.
                step.update(Text(terminal(f"done on {report.environment.device}; "
                                          f"{report.device_left}"), style="bold"))
                self.notify(report.device_left, severity="warning", timeout=30)
                self._outcome_to_show = True
                self.advisor.reload_devices()
            self.call_after_refresh(self._show_outcome)  # the outcome under the target
        elif event.state == WorkerState.ERROR:
            error = event.worker.error
            message = error.message if isinstance(error, AdvisorError) else \
                f"internal error: {type(error).__name__}: {error}"
            step.update(Text(terminal(message),
                             style="bold" if "cancelled" in message else "bold red"))
            self.query_one("#progress").display = False
            if isinstance(error, DeviceProblem):  # the guard's check right before a mkfs
                self.notify(message, severity="error")
                self.advisor.reload_devices()  # the target list then shows the refusal too

    def _attributed(self, event: Worker.StateChanged) -> None:
        self.refresh_bindings()
        step = self.query_one("#step", Static)
        if event.state == WorkerState.SUCCESS and self.report is not None:
            step.update("attribution done")
            self.show_report(self.report.model_copy(
                update={"attribution": event.worker.result}))
        elif event.state == WorkerState.ERROR:
            error = event.worker.error
            step.update(Text(error.message if isinstance(error, AdvisorError) else
                             f"internal error: {type(error).__name__}: {error}",
                             style="bold red"))
        self.query_one("#progress").display = False

