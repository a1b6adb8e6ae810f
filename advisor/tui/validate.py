"""Step 4: the A/B validation: mkfs.xfs defaults against the proposal, on a loop device over a
temporary file or on a scratch device the guard accepts and the person confirms by typing its
name. The run is advisor.bench's, in a worker thread that only posts messages."""

from __future__ import annotations

import math
import statistics
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal, VerticalScroll
from textual.widgets import DataTable, Footer, Header, Input, Label, ProgressBar, Select, Static
from textual.worker import Worker, WorkerState
from textual_plotext import PlotextPlot

from advisor.errors import AdvisorError, DeviceProblem
from advisor.models.bench import MAX_PAIRS, NotApplied, SideConfig
from advisor.models.units import human_size
from advisor.render.inert import terminal
from advisor.tui.messages import DevicesChanged, ProposalChanged, RunProgressed, RunSampled
from advisor.tui.step import StepScreen

if TYPE_CHECKING:
    from advisor.bench.plan import Plan
    from advisor.models.bench import Attribution, MetricResult, ValidationReport
    from advisor.models.proposal import Proposal

LOOP = "loop"


#: How each side is named in a plot's legend.
SIDE_NAMES = {"A": "A defaults", "B": "B proposal"}
#: At most this many round numbers under a plot (more would run together).
MAX_X_TICKS = 8


def round_ticks(rounds: int) -> list[int]:
    """Whole round numbers for a plot's x axis: every round, or every k-th (and the last) when
    there are more than MAX_X_TICKS."""
    if rounds <= 0:
        return []
    step = -(-rounds // MAX_X_TICKS)
    ticks = list(range(1, rounds + 1, step))
    if ticks[-1] != rounds:
        if rounds - ticks[-1] < step and len(ticks) > 1:
            ticks.pop()  # too close to the last to print both
        ticks.append(rounds)
    return ticks


class MetricPlot(PlotextPlot):
    """A against B per round for one metric; keeps the values it was given so that it can be
    redrawn as rounds arrive. In colour: a braille line per side. Without colour (NO_COLOR) or
    on the Linux console (no braille in its font): each round a point drawn as the letter of
    its side, A or B, so the two series differ by shape and every glyph is plain ASCII."""

    def __init__(self, name: str, title: str, unit: str, *, plain: bool = False) -> None:
        super().__init__()
        self.metric, self.heading = name, f"{title} ({unit})" if unit else title
        self.values: dict[str, list[float]] = {"A": [], "B": []}
        self.plain = plain

    def add(self, side: str, value: float) -> None:
        self.values.setdefault(side, []).append(value)
        self.redraw()

    def redraw(self) -> None:
        plt = self.plt
        plt.clear_data()
        rounds = 0
        for side in ("A", "B"):
            points = self.values.get(side, [])
            if not points:
                continue
            xs = list(range(1, len(points) + 1))
            rounds = max(rounds, len(points))
            if self.plain:
                plt.scatter(xs, points, label=SIDE_NAMES[side], marker=side)
            else:
                plt.plot(xs, points, label=SIDE_NAMES[side], marker="braille")
        ticks = round_ticks(rounds)
        if ticks:
            plt.xticks([float(t) for t in ticks], [str(t) for t in ticks])
            if rounds == 1:
                plt.xlim(0.5, 1.5)
        plt.title(self.heading)
        plt.xlabel("round")
        self.refresh()


class ValidateScreen(StepScreen):
    """Choose where to run, read the plan, run, watch, read the verdicts, or cancel."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "run", "Run"),
        Binding("escape", "cancel", "Cancel run"),
        Binding("ctrl+s", "save_report", "Save report", show=False),  # help and palette say it
        Binding("ctrl+b", "attribute", "Attribute", show=False),  # offered after a verdict
        Binding("ctrl+e", "more_rounds", "More rounds", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._cancel: threading.Event | None = None
        self._worker: Worker[ValidationReport] | None = None
        self.report: ValidationReport | None = None
        self._ran: Plan | None = None
        self._attributing: Worker[Attribution] | None = None
        self._other: tuple[str, str] | None = None
        self._other_proposal: Proposal | None = None
        self._plots: dict[str, MetricPlot] = {}
        self._fit_key: tuple[str, str, int, int] | None = None
        self._fit: tuple[SideConfig | None, SideConfig, list[NotApplied], int] = (
            None, SideConfig(label="B"), [], 0)
        self._shown_targets: list[tuple[str, str]] = []
        self._outcome_to_show = False
        """A run just ended: once the devices read again are on screen (the guard above the
        run's state changes height), its outcome is scrolled back under the target."""

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

    def _targets(self) -> list[tuple[str, str]]:
        """The loop default, then every device of a live system with the guard's verdict: a
        usable scratch device (erased by the run), or refused and why, in the guard's words
        (one function decides both this list and the check before each mkfs)."""
        state = self.advisor.state
        targets = [("a loop device over a temporary file (default)", LOOP)]
        if not state.inventory.live:  # a capture's devices are another machine's
            return targets
        try:
            verdicts = state.session.scratch_verdicts(state.inventory)
        except AdvisorError as err:
            self.notify(f"could not check the devices: {err.message}", severity="error")
            return targets
        for device, reasons in verdicts:
            size = human_size(device.size_bytes.value) if device.size_bytes.value else "?"
            if reasons:
                more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
                label = f"{device.display_name} ({size}): refused, {reasons[0]}{more}"
            else:
                label = f"{device.display_name} ({size}): usable scratch device, ERASED by the run"
            targets.append((label, device.name))
        return targets

    def refresh_targets(self) -> None:
        """The target list again, for the devices as they are now (hotplug, a reload, a
        return to this step); the chosen target stays when it still exists."""
        select = self.query_one("#target", Select)
        keep = self.target
        targets = self._targets()
        if targets == self._shown_targets:
            return
        self._shown_targets = targets
        with select.prevent(Select.Changed):
            select.set_options(targets)
            select.value = keep if keep in {value for _, value in targets} else LOOP
        self._show_guard()
        self._show_plan()

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
        table = self.query_one("#metrics", DataTable)
        # Widths that fit 80 columns (the sides line says what A and B are); a long metric
        # title or margin wraps within its row instead of pushing the table off the screen.
        for label, width in METRIC_COLUMNS:
            table.add_column(label, width=width)
        self.query_one("#metrics").display = False
        self.query_one("#next").display = False
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
            self.call_after_refresh(self._show_run_state)

    # ---- what would run ----

    @property
    def target(self) -> str:
        value = self.query_one("#target", Select).value
        return value if isinstance(value, str) else LOOP

    def on_proposal_changed(self, _message: ProposalChanged) -> None:
        self.show_proposal()

    def show_proposal(self) -> None:
        """The sides, the guard's verdict and the plan for the current answers and target."""
        self._show_guard()
        self._show_plan()

    def _target_proposal(self) -> Proposal | None:
        """B on a scratch device: the proposal for that device (the one of step 3 when it is the
        device chosen there). None on the loop default, or while there is none."""
        state = self.advisor.state
        if self.target == LOOP or state.workload_problem:
            return None
        if self.target == state.device_name:
            return None if state.proposing else state.proposal
        key = (self.target, state.workload.model_dump_json())
        if self._other != key:
            device = state.inventory.get(self.target)
            self._other, self._other_proposal = key, None
            if device is not None:
                try:
                    self._other_proposal = state.session.propose(device, state.workload)
                except AdvisorError:
                    self._other = None  # asked again next time; the caller shows the error
                    raise
        return self._other_proposal

    def _show_sides(self, proposal: Proposal | None, problem: str | None) -> None:
        sides = self.query_one("#sides", Static)
        a = Text.assemble(("A", "bold"), " mkfs.xfs and mount defaults   ", ("B", "bold"))
        if problem:
            sides.update(a + f" {terminal(problem)}")
        elif self.target == LOOP and self._shown() is not None:
            sides.update(a + f" the proposal for {terminal(self._shown_for())} shown on F4, as "
                         "far as the "
                         "loop device can take it (what it cannot is listed in the plan)")
        elif self.target == LOOP:
            sides.update(a + " the advisor's proposal for the loop device itself (no device "
                         "chosen on F2), with these answers, made once it exists")
        elif proposal is None:
            sides.update(a + " computing the proposal...")
        else:
            b = " ".join(proposal.mkfs_options) or "(no mkfs options)"
            mount = ",".join(proposal.mount_options) or "defaults"
            sides.update(a + terminal(f" mkfs.xfs {b}, mount -o {mount} (the proposal for "
                                      f"{self.target})"))

    def _show_guard(self) -> None:
        guard = self.query_one("#guard", Static)
        confirm = self.query_one("#confirm", Input)
        if self.running and self.target != LOOP:
            return  # the verdict given before the run: the run's own test filesystem is no refusal
        self.sub_title = "on a loop device over a temporary file" if self.target == LOOP \
            else f"on {self.target}"
        if self.target == LOOP:
            guard.update("Results then reflect the storage under the temporary file, not a "
                         "real device.")
            self._hide_confirm()
            return
        state = self.advisor.state
        device = state.inventory.get(self.target)
        try:
            reasons = state.session.scratch_refusals(device) if device else ["unknown device"]
        except AdvisorError as err:
            reasons = [err.message]
        if reasons:
            guard.update(Text(terminal(f"refused: {self.target} cannot be used for the run: "
                                       + "; ".join(reasons) + ". Choose another target."),
                              style="bold red"))
            self._hide_confirm()
        else:
            guard.update(Text(f"{self.target} may be used: everything on it is erased. Type its "
                              "name below to confirm.", style="bold yellow"))
            confirm.placeholder = f"type {self.target} to confirm"
            confirm.display = True

    def _hide_confirm(self) -> None:
        """The confirm box away, its focus to the target list above it: left to Textual, the
        focus went to the next focusable widget, after a device run the report's table, and the
        screen scrolled to it, off the line that says what the run left on the device."""
        confirm = self.query_one("#confirm", Input)
        if confirm.has_focus:
            self.query_one("#target", Select).focus(scroll_visible=False)
        confirm.display = False

    def _shown(self) -> Proposal | None:
        """The proposal shown on F4 (for the device chosen on F2), if there is one now."""
        state = self.advisor.state
        if state.device_name is None or state.proposing or state.workload_problem:
            return None
        return state.proposal

    def _shown_for(self) -> str:
        device = self.advisor.state.device
        return device.display_name if device else "the chosen device"

    def _fitted(self, plan: Plan, shown: Proposal) -> Plan:
        """B = the proposal shown, as the loop device can run it: Session.fit_loop, exactly as
        `validate --for DEV` (real dry runs decide; the loop device grows to the device's size
        when that leaves out fewer options and no size was chosen). The result is kept per
        proposal and size: the screen redraws often."""
        state = self.advisor.state
        device = state.device
        target = (device.size_bytes.value or 0) if device else 0
        key = (shown.mkfs_command, ",".join(shown.mount_options), plan.device_bytes, target)
        if self._fit_key != key:
            state.session.fit_loop(plan, state.session.proposal_side(shown), target,
                                   grow=state.validation_bytes is None)
            self._fit_key = key
            self._fit = (plan.proposed, plan.b, plan.not_applied, plan.device_bytes)
        proposed, ran, left, size = self._fit
        plan.proposed, plan.b, plan.not_applied = proposed, ran, list(left)
        plan.device_bytes = size
        plan.proposed_for = device.path if device else None
        return plan

    def _plan(self) -> Plan | None:
        state = self.advisor.state
        session = state.session
        if state.workload_problem:
            raise AdvisorError(f"the answers are not valid ({state.workload_problem}): F3")
        if self.target == LOOP:
            plan = session.validation_plan(state.workload, None,
                                           device_bytes=state.validation_bytes,
                                           budget_seconds=state.validation_budget)
            shown = self._shown()
            return self._fitted(plan, shown) if shown is not None else plan
        proposal = self._target_proposal()
        if proposal is None:
            return None
        return session.validation_plan(state.workload, state.inventory.get(self.target),
                                       session.proposal_side(proposal),
                                       device_bytes=state.validation_bytes,
                                       budget_seconds=state.validation_budget)

    def _show_plan(self) -> None:
        plan_view = self.query_one("#plan", Static)
        try:
            plan = self._plan()
        except AdvisorError as err:
            self._show_sides(None, err.message)
            plan_view.update("")
            return
        self._show_sides(self._target_proposal(), None)
        if plan is None:
            plan_view.update("")
            return
        lines = plan.commands(plan.device or "/dev/loopN", "MNT")
        if plan.device is None:
            lines = [line if not line.startswith("# side B") else
                     f"{line}: its options once the loop device exists" for line in lines]
        plan_view.update(Text("\n".join(lines)))

    def _still_scratch(self, left: dict[str, str]) -> bool:
        """The guard again, on the devices as they are now: the list on screen may be old.
        `left`: test filesystems of dead runs that recovery found."""
        self.advisor.reload_devices()
        state = self.advisor.state
        device = state.inventory.get(self.target)
        try:
            reasons = state.session.scratch_refusals(device, left) if device else ["it is gone"]
        except AdvisorError as err:
            reasons = [err.message]
        if reasons:
            self.refresh_targets()
            self._show_guard()
            self.notify(f"refusing {self.target}: " + "; ".join(reasons)
                        + "; choose another target", severity="error")
        return not reasons

    @on(Select.Changed, "#target")
    def _target_changed(self) -> None:
        self._show_guard()
        self._show_plan()

    # ---- running ----

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
        self.report = None
        self._ran = plan
        self.query_one("#metrics").display = False
        self.query_one("#next").display = False
        self.query_one("#plots", Grid).remove_children()
        self._plots = {}
        self.query_one("#verdict", Static).update("")
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

    def _attribution_offer(self) -> str:
        """What ctrl+b would do after this verdict, or why it would not ("" before a verdict)."""
        if self.report is None or self._ran is None:
            return ""
        return self.advisor.state.session.attribution_offer(self._ran, self.report)

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

    def action_save_report(self) -> None:
        """The last report as Markdown (or the --json document, for a name ending in .json);
        an existing file only after asking."""
        if self.report is None:
            self.notify("no report yet: a run's report can be saved once it is judged",
                        severity="warning")
            return
        from advisor.tui.dialogs import save_file

        report = self.report

        session = self.advisor.state.session

        def text(target: Path) -> str:
            if target.suffix == ".json":
                return report.model_dump_json(indent=2) + "\n"
            return session.report_markdown(report)

        save_file(self.app, "Save the report to (.md, or .json for the --json document):",
                  "validation-report.md", "validation report", text, by_name=True)

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
        """Live plots: one per metric, made when its first value arrives, one point per side and
        round. The report replaces them with its own once the run is judged."""
        if message.run is not self._cancel or self.report is not None:
            return  # from an earlier run
        known = self.advisor.state.session.metric_titles()
        for name, value in message.values.items():
            plot = self._plots.get(name)
            if plot is None:
                title, unit = known.get(name, (name, ""))
                plot = MetricPlot(name, title, unit, plain=self.advisor.plain_glyphs)
                self._plots[name] = plot
                self.query_one("#plots", Grid).mount(plot)
            plot.add(message.side, value)

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
            self.call_after_refresh(self._show_run_state)  # the outcome under the target
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

    # ---- results ----

    def show_report(self, report: ValidationReport) -> None:
        """The verdict, one row per metric with its interval, and a plot of A and B per round."""
        self.report = report
        # As `xfs-advisor validate` says it: what was proposed, what ran, every difference, and
        # where the margins came from (a stored calibration decides them).
        lines = self.advisor.state.session.report_lines(report)
        if report.calibration is not None:
            lines.append(report.calibration.summary)
        self.query_one("#sides", Static).update(Text("\n".join(lines)))
        env = report.environment
        where = f"Ran on {env.device} ({human_size(env.device_size_bytes)}" + (
            f", a loop device over {env.loop_backing_file})" if env.loop_backing_file else ")")
        after = [self._attribution_offer(), *self.advisor.state.session.attribution_lines(report)]
        self.query_one("#verdict", Static).update(Text("\n".join(
            [f"Verdict: {report.verdict}. {report.summary}", where, *[a for a in after if a]])))
        table = self.query_one("#metrics", DataTable)
        table.clear()
        for m in report.metrics:
            table.add_row(
                m.title, _mean(m.a, m.geo_mean_a), _mean(m.b, m.geo_mean_b), f"{m.ratio:.3f}",
                interval_text(m.ci[0], m.ci[1]),
                Text(m.verdict, style=_VERDICT_STYLE.get(m.verdict, "")), margin_text(m),
                height=None)
        table.display = True
        self.query_one("#next", Static).update(Text("\n".join(next_steps(report))))
        self.query_one("#next").display = True
        plots = self.query_one("#plots", Grid)
        plots.remove_children()
        self._plots = {}
        for m in report.metrics:
            plot = MetricPlot(m.name, m.title, m.unit, plain=self.advisor.plain_glyphs)
            plot.values = {"A": list(m.a), "B": list(m.b)}
            self._plots[m.name] = plot
            plots.mount(plot)
            plot.redraw()


#: The metrics table's columns and widths: 61 cells of content and 14 of padding fit the 76 an
#: 80-column screen leaves inside the scrolled body.
METRIC_COLUMNS = (("metric", 11), ("A", 7), ("B", 7), ("B/A", 5), ("95% CI", 9),
                  ("verdict", 12), ("margin", 11))


def _short(x: float) -> str:
    """A bound of an interval in at most 4 characters (0.67, 12.3, 123, inf)."""
    if math.isinf(x):
        return "inf"
    if x < 10:
        return f"{x:.2f}"
    if x < 100:
        return f"{x:.1f}"
    return f"{x:.0f}"


def interval_text(lo: float, hi: float) -> str:
    """A ratio's interval, compact: `0.67-0.91`."""
    return f"{_short(lo)}-{_short(hi)}"


def margin_text(m: MetricResult) -> str:
    """A metric's margin and where it came from: the default, the calibrated noise floor, or
    that floor capped (the run's calibration line says which calibration)."""
    shown = f"±{m.margin * 100:.0f}%"
    floor = m.calibrated_floor
    if floor is None:
        return f"{shown} default"
    if m.margin_capped:
        return f"{shown} capped (floor {floor * 100:.0f}%)"
    if floor * 100 < round(m.margin * 100):
        return f"{shown} default (floor {floor * 100:.0f}%)"
    return f"{shown} calibrated"


def next_steps(report: ValidationReport) -> list[str]:
    """What would settle each inconclusive metric (pairs in all, with the noise seen) and what
    can be done with the report."""
    lines = []
    for m in report.metrics:
        if m.verdict != "inconclusive":
            continue
        if m.rounds_to_resolve:
            need = f"~{m.rounds_to_resolve} pairs would likely resolve it"
        else:
            need = f"more than {MAX_PAIRS} pairs, or the difference sits on the margin"
        lines.append(f"{m.title}: inconclusive after {report.rounds} pairs (noise "
                     f"{m.noise * 100:.0f}% per pair); {need}.")
    # "More rounds" (Session.more_rounds, being built apart) and "attribute" (Session.attribute)
    # join this line and BINDINGS once the session offers them.
    lines.append("ctrl+s saves this report (Markdown, or JSON for a .json name).")
    return lines


_VERDICT_STYLE = {"better": "bold green", "worse": "bold red", "equivalent": "cyan",
                  "inconclusive": "yellow"}


def _mean(values: list[float], geo: float | None = None) -> str:
    """A side's geometric mean (so that B/A is their ratio), from the report or the samples."""
    if not values:
        return "-"
    g = geo if geo is not None else statistics.geometric_mean(values)
    return f"{g:,.0f}" if g >= 100 else f"{g:.3g}"
