"""Where the validate step runs: the target list (the loop default, then each device with the
guard's verdict), the guard's words for the chosen target and the box its name is typed in, the
two sides and the command plan."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.widgets import Input, Select, Static

from advisor.errors import AdvisorError
from advisor.models.bench import NotApplied, SideConfig
from advisor.models.units import human_size
from advisor.render.inert import terminal
from advisor.tui.messages import ProposalChanged
from advisor.tui.step import StepScreen

if TYPE_CHECKING:
    from advisor.bench.plan import Plan
    from advisor.models.proposal import Proposal

LOOP = "loop"


class TargetsView(StepScreen):
    """The validate screen's choice of target, its guard and its plan."""

    def __init__(self) -> None:
        super().__init__()
        self._other: tuple[str, str] | None = None
        self._other_proposal: Proposal | None = None
        self._fit_key: tuple[str, str, int, int] | None = None
        self._fit: tuple[SideConfig | None, SideConfig, list[NotApplied], int] = (
            None, SideConfig(label="B"), [], 0)
        self._shown_targets: list[tuple[str, str]] = []

    @property
    def running(self) -> bool:
        """A run is going (the screen that starts runs answers): the guard's verdict given
        before a device run then stays on screen."""
        raise NotImplementedError

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
