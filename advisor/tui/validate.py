"""Step 4: the A/B validation: mkfs.xfs defaults against the proposal, on a loop device over a
temporary file or on a scratch device the guard accepts and the person confirms by typing its
name. The run is advisor.bench's, in a worker thread that only posts messages."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, Input, Label, ProgressBar, Select, Static
from textual.worker import Worker, WorkerState
from textual_plotext import PlotextPlot

from advisor.errors import AdvisorError
from advisor.models.bench import NotApplied, SideConfig
from advisor.models.units import human_size
from advisor.tui.step import StepScreen

if TYPE_CHECKING:
    from advisor.bench.run import Plan
    from advisor.models.bench import ValidationReport
    from advisor.models.proposal import Proposal

LOOP = "loop"


class Progressed(Message):
    """The run moved on (posted from the worker thread)."""

    def __init__(self, done: int, total: int, what: str) -> None:
        super().__init__()
        self.done, self.total, self.what = done, total, what


class Sampled(Message):
    """One side of one round was measured (posted from the worker thread)."""

    def __init__(self, run: threading.Event, side: str, round_index: int,
                 values: dict[str, float]) -> None:
        super().__init__()
        self.run, self.side, self.round_index, self.values = run, side, round_index, values


class MetricPlot(PlotextPlot):
    """A against B per round for one metric; keeps the values it was given so that it can be
    redrawn as rounds arrive."""

    def __init__(self, name: str, title: str, unit: str) -> None:
        super().__init__()
        self.metric, self.heading = name, f"{title} ({unit})" if unit else title
        self.values: dict[str, list[float]] = {"A": [], "B": []}

    def add(self, side: str, value: float) -> None:
        self.values.setdefault(side, []).append(value)
        self.redraw()

    def redraw(self) -> None:
        plt = self.plt
        plt.clear_data()
        for side in ("A", "B"):
            points = self.values.get(side, [])
            if points:
                plt.plot(list(range(1, len(points) + 1)), points, label=side, marker="braille")
        plt.title(self.heading)
        plt.xlabel("round")
        self.refresh()


class ValidateScreen(StepScreen):
    """Choose where to run, read the plan, run, watch, read the verdicts, or cancel."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "run", "Run"),
        Binding("escape", "cancel", "Cancel run"),
        Binding("ctrl+s", "save_report", "Save report", show=False),  # help and palette say it
        Binding("ctrl+e", "more_rounds", "More rounds", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._cancel: threading.Event | None = None
        self._worker: Worker[ValidationReport] | None = None
        self.report: ValidationReport | None = None
        self._other: tuple[str, str] | None = None
        self._other_proposal: Proposal | None = None
        self._plots: dict[str, MetricPlot] = {}
        self._fit_key: tuple[str, str, int] | None = None
        self._fit: tuple[SideConfig, SideConfig, list[NotApplied]] = (
            SideConfig(label="B"), SideConfig(label="B"), [])

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="validate-body"):
            yield Static(id="sides")
            with Horizontal(classes="question-row"):
                yield Label("run on", classes="question-name")
                yield Select(self._targets(), value=LOOP, allow_blank=False, id="target",
                             compact=True)
            yield Static(id="guard")
            yield Input(id="confirm", compact=True)
            yield Static("Command plan", classes="section-title")
            yield Static(id="plan", classes="note")
            yield ProgressBar(id="progress", show_eta=False)
            yield Static(id="step")
            yield Static(id="verdict", classes="section-title")
            yield DataTable(id="metrics", cursor_type="row", show_cursor=False)
            yield Grid(id="plots")
        yield Footer(compact=True, show_command_palette=False)

    def _targets(self) -> list[tuple[str, str]]:
        state = self.advisor.state
        targets = [("a loop device over a temporary file (default)", LOOP)]
        if state.inventory.live:  # a capture's devices are another machine's
            for d in state.inventory.devices:
                size = human_size(d.size_bytes.value) if d.size_bytes.value else "?"
                targets.append((f"{d.display_name} ({size}, ERASED)", d.name))
        return targets

    def on_mount(self) -> None:
        self.title = "xfs-advisor: validate"
        self.query_one("#metrics", DataTable).add_columns(
            "metric", "A (defaults)", "B (proposal)", "B/A", "95% CI", "verdict")
        self.query_one("#metrics").display = False
        self.query_one("#progress").display = False
        self.advisor.proposal_listeners.append(self)

    def on_unmount(self) -> None:
        if self in self.advisor.proposal_listeners:
            self.advisor.proposal_listeners.remove(self)

    def on_screen_resume(self) -> None:
        self.advisor.request_proposal()
        self.show_proposal()

    # ---- what would run ----

    @property
    def target(self) -> str:
        value = self.query_one("#target", Select).value
        return value if isinstance(value, str) else LOOP

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
            sides.update(a + f" {problem}")
        elif self.target == LOOP and self._shown() is not None:
            sides.update(a + f" the proposal for {self._shown_for()} shown on F4, as far as the "
                         "loop device can take it (what it cannot is listed in the plan)")
        elif self.target == LOOP:
            sides.update(a + " the advisor's proposal for the loop device itself (no device "
                         "chosen on F2), with these answers, made once it exists")
        elif proposal is None:
            sides.update(a + " computing the proposal...")
        else:
            b = " ".join(proposal.mkfs_options) or "(no mkfs options)"
            mount = ",".join(proposal.mount_options) or "defaults"
            sides.update(a + f" mkfs.xfs {b}, mount -o {mount} (the proposal for {self.target})")

    def _show_guard(self) -> None:
        guard = self.query_one("#guard", Static)
        confirm = self.query_one("#confirm", Input)
        if self.target == LOOP:
            guard.update("Results then reflect the storage under the temporary file, not a "
                         "real device.")
            confirm.display = False
            return
        state = self.advisor.state
        device = state.inventory.get(self.target)
        try:
            reasons = state.session.scratch_refusals(device) if device else ["unknown device"]
        except AdvisorError as err:
            reasons = [err.message]
        if reasons:
            guard.update(Text("refused: " + "; ".join(reasons), style="bold red"))
            confirm.display = False
        else:
            guard.update(Text(f"{self.target} may be used: everything on it is erased. Type its "
                              "name below to confirm.", style="bold yellow"))
            confirm.placeholder = f"type {self.target} to confirm"
            confirm.display = True

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
        """B = the proposal shown, as the loop device can run it (real dry runs decide; the
        result is kept per proposal and size: the screen redraws often)."""
        session = self.advisor.state.session
        key = (shown.mkfs_command, ",".join(shown.mount_options), plan.device_bytes)
        if self._fit_key != key:
            side = session.proposal_side(shown)
            self._fit_key, self._fit = key, (side, *session.fit_to_scratch(
                side, None, plan.device_bytes))
        side, ran, left = self._fit
        device = self.advisor.state.device
        plan.proposed, plan.b, plan.not_applied = side, ran, list(left)
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
            self._show_guard()
            self.notify(f"refusing {self.target}: " + "; ".join(reasons), severity="error")
        return not reasons

    @on(Select.Changed, "#target")
    def _target_changed(self) -> None:
        self._show_guard()
        self._show_plan()

    # ---- running ----

    @property
    def running(self) -> bool:
        return self._worker is not None and not self._worker.is_finished

    def action_run(self) -> None:
        if self.running:
            self.notify("a run is already going: escape cancels it", severity="warning")
            return
        confirm = self.query_one("#confirm", Input)
        confirmed = confirm.display and confirm.value.strip() == self.target
        if self.target != LOOP and not confirmed:
            self.notify(f"not confirmed: type {self.target} in the box first", severity="error")
            return
        try:
            # First: a killed run's mount would fail the guard.
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

        self._launch(len(plan.order) + 1, call)

    def _launch(self, total: int, call: Callable[[Callable[[int, int, str], None],
                                                  threading.Event,
                                                  Callable[[str, int, dict[str, float]], None]],
                                                 ValidationReport]) -> None:
        """Run `call(progress, cancel, on_sample)` in a worker thread, the screen following it."""
        from advisor.tui.app import ActiveRun

        active = ActiveRun()
        self.advisor.active_run = active
        cancel = active.cancel
        self._cancel = cancel
        self.report = None
        self.query_one("#metrics").display = False
        self.query_one("#plots", Grid).remove_children()
        self._plots = {}
        self.query_one("#verdict", Static).update("")
        bar = self.query_one("#progress", ProgressBar)
        bar.update(total=total, progress=0)
        bar.display = True
        self.query_one("#step", Static).update("starting: preparing the scratch device")

        def progress(done: int, total: int, what: str) -> None:
            self.post_message(Progressed(done, total, what))  # thread-safe; widgets untouched

        def sampled(side: str, round_index: int, values: dict[str, float]) -> None:
            self.post_message(Sampled(cancel, side, round_index, values))

        def work() -> ValidationReport:
            try:
                return call(progress, cancel, sampled)
            finally:
                active.done.set()

        self._worker = self.run_worker(work, name="validate", group="validate", thread=True,
                                       exit_on_error=False)

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
            from advisor.bench.run import continuation

            continuation(report)  # refusals (a calibration, a scratch device) before anything
            session.recover(loop=True)
        except AdvisorError as err:
            self.notify(err.message, severity="error")
            return
        self._launch(2 * report.rounds + 1, lambda progress, cancel, sampled:
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

        def text(target: Path) -> str:
            from advisor.bench.report import render_markdown

            if target.suffix == ".json":
                return report.model_dump_json(indent=2) + "\n"
            return render_markdown(report)

        save_file(self.app, "Save the report to (.md, or .json for the --json document):",
                  "validation-report.md", "validation report", text, by_name=True)

    def action_cancel(self) -> None:
        if self.running and self._cancel is not None:
            self._cancel.set()
            self.query_one("#step", Static).update("cancelling: stopping fio, unmounting, "
                                                   "detaching...")

    def on_progressed(self, message: Progressed) -> None:
        if self._cancel is not None and self._cancel.is_set():
            return
        self.query_one("#progress", ProgressBar).update(total=message.total + 1,
                                                        progress=message.done)
        self.query_one("#step", Static).update(message.what)

    def on_sampled(self, message: Sampled) -> None:
        """Live plots: one per metric, made when its first value arrives, one point per side and
        round. The report replaces them with its own once the run is judged."""
        if message.run is not self._cancel or self.report is not None:
            return  # from an earlier run
        from advisor.bench.jobs import METRICS

        known = {m.name: m for m in METRICS}
        for name, value in message.values.items():
            plot = self._plots.get(name)
            if plot is None:
                metric = known.get(name)
                plot = MetricPlot(name, metric.title if metric else name,
                                  metric.unit if metric else "")
                self._plots[name] = plot
                self.query_one("#plots", Grid).mount(plot)
            plot.add(message.side, value)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self._worker or not event.worker.is_finished:
            return
        step = self.query_one("#step", Static)
        if event.state == WorkerState.SUCCESS and event.worker.result is not None:
            done = event.worker.result.rounds * 2 + 1
            self.query_one("#progress", ProgressBar).update(progress=done)
            step.update("done")
            self.show_report(event.worker.result)
        elif event.state == WorkerState.ERROR:
            error = event.worker.error
            message = error.message if isinstance(error, AdvisorError) else \
                f"internal error: {type(error).__name__}: {error}"
            step.update(Text(message, style="bold" if "cancelled" in message else "bold red"))
            self.query_one("#progress").display = False

    # ---- results ----

    def show_report(self, report: ValidationReport) -> None:
        """The verdict, one row per metric with its interval, and a plot of A and B per round."""
        from advisor.bench.report import what_ran

        self.report = report
        # As `xfs-advisor validate` says it: what was proposed, what ran, every difference, and
        # where the margins came from (a stored calibration decides them).
        lines = what_ran(report)
        if report.calibration is not None:
            lines.append(report.calibration.summary)
        self.query_one("#sides", Static).update(Text("\n".join(lines)))
        self.query_one("#verdict", Static).update(f"Verdict: {report.verdict}. {report.summary}")
        table = self.query_one("#metrics", DataTable)
        table.clear()
        for m in report.metrics:
            table.add_row(
                m.title, _mean(m.a, m.geo_mean_a), _mean(m.b, m.geo_mean_b), f"{m.ratio:.3f}",
                f"{m.ci[0]:.3f}..{m.ci[1]:.3f}", Text(m.verdict, style=_VERDICT_STYLE.get(
                    m.verdict, "")))
        table.display = True
        plots = self.query_one("#plots", Grid)
        plots.remove_children()
        self._plots = {}
        for m in report.metrics:
            plot = MetricPlot(m.name, m.title, m.unit)
            plot.values = {"A": list(m.a), "B": list(m.b)}
            self._plots[m.name] = plot
            plots.mount(plot)
            plot.redraw()


_VERDICT_STYLE = {"better": "bold green", "worse": "bold red", "equivalent": "cyan",
                  "inconclusive": "yellow"}


def _mean(values: list[float], geo: float | None = None) -> str:
    """A side's geometric mean (so that B/A is their ratio), from the report or the samples."""
    from advisor.bench.stats import geometric_mean

    if not values:
        return "-"
    g = geo if geo is not None else geometric_mean(values)
    return f"{g:,.0f}" if g >= 100 else f"{g:.3g}"
