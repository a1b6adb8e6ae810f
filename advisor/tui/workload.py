"""Step 2: the workload questions, generated from the contract, checked as typed; answers can be
loaded from and saved to a workload file."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Footer, Header, Input, Label, Select, Static
from textual.worker import Worker, WorkerState

from advisor.errors import AdvisorError
from advisor.render.explain import question_summary
from advisor.render.inert import terminal
from advisor.tui.dialogs import PathPrompt, default_save_name, save_file
from advisor.tui.form import FormValue, Question, check, questions, values_of
from advisor.tui.messages import ProposalChanged
from advisor.tui.step import StepScreen

_YES_NO: list[tuple[str, bool]] = [("yes", True), ("no", False)]


class Scanned(Message):
    """A directory scan made progress (posted from its worker thread)."""

    def __init__(self, entries: int, seconds: float) -> None:
        super().__init__()
        self.entries, self.seconds = entries, seconds


class WorkloadScreen(StepScreen):
    """What the device cannot tell: one question per answer, "don't know" always allowed."""

    # The footer keeps to the keys that work everywhere (help, quit, the steps) and the way out
    # of a field, so they fit at 80 columns; the file keys are in the status line, the help and
    # the command palette.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "leave_field", "Leave field", key_display="esc"),
        Binding("enter,i", "edit", "Edit", key_display="enter"),
        Binding("ctrl+s", "save", "Save answers", show=False),
        Binding("ctrl+o", "load", "Load answers", show=False),
        Binding("ctrl+f", "scan", "Fill from a scan", show=False),
    ]
    # Names take less room when the terminal is narrow (60 columns: name, field and error fit).
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (80, "-wide")]  # noqa: RUF012 (Textual's own type)

    def __init__(self) -> None:
        super().__init__()
        self.questions = questions()
        self._filling = False
        self._beside_shown: dict[str, str] = {}
        self._last_field = self.questions[0].widget_id
        self._shown_before = False

    def compose(self) -> ComposeResult:
        yield Header()
        # A row per question (name, field, error), its help below across the whole width. Not
        # one grid: a grid sizes a row spanning all columns by its first column's width, which
        # left blank lines between the questions.
        with VerticalScroll(id="form"):
            for q in self.questions:
                with Horizontal(classes="question-row"):
                    yield Label(q.label, classes="question-name")
                    yield self._widget_for(q)
                    yield Static("", id=f"{q.widget_id}-error", classes="question-error")
                # The docstring's hard line breaks would wrap mid-phrase at the screen's width.
                yield Static(" ".join(q.help.split()), classes="question-help")
        yield Static("", id="preview")
        yield Static("", id="form-status")
        yield Footer(compact=True, show_command_palette=False)

    def _widget_for(self, q: Question) -> Input | Select[Any]:
        if q.kind == "yes-no":
            return Select(_YES_NO, prompt="don't know", id=q.widget_id, compact=True)
        if q.kind == "choice":
            choices = [(c, c) for c in q.choices]
            return Select(choices, prompt="don't know", id=q.widget_id, compact=True)
        return Input(placeholder="don't know", id=q.widget_id, compact=True)

    def on_mount(self) -> None:
        self.title = "xfs-advisor: workload"
        self.fill(self.advisor.state.workload)

    def on_proposal_changed(self, _message: ProposalChanged) -> None:
        self.show_proposal()

    def show_proposal(self) -> None:
        """The mkfs line for the answers so far, so each answer's effect shows as it is typed."""
        state = self.advisor.state
        preview = self.query_one("#preview", Static)
        if state.workload_problem:
            preview.update(Text("mkfs: none until the answers above are valid", style="dim"))
        elif state.proposing:
            preview.update(Text("mkfs: computing...", style="dim"))
        elif state.proposal is not None:
            text = Text("mkfs: " + terminal(state.proposal.mkfs_command))
            asked = question_summary(state.proposal.questions)
            if asked:  # the answer decides a setting: ask for it where answers are given
                text.append("\n" + asked + " (" + "; ".join(
                    terminal(q.message) for q in state.proposal.questions) + ")",
                            style="bold")
            preview.update(text)
        else:
            preview.update(Text(terminal(state.proposal_problem or ""), style="dim"))

    def on_screen_resume(self) -> None:
        device = self.advisor.state.device
        self.sub_title = f"for {device.display_name}" if device else "no device chosen yet (F2)"
        self.show_proposal()  # what changed while another step showed
        if self.focused is None or not self._shown_before:
            self.query_one(f"#{self.questions[0].widget_id}").focus()
        self._shown_before = True

    # ---- in and out of the fields: a field takes every printable key, q and ? included ----

    def _in_field(self) -> bool:
        return isinstance(self.focused, Input | Select)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "leave_field":
            return self._in_field()
        if action == "edit":
            return not self._in_field()
        return True

    def action_leave_field(self) -> None:
        """Out of the field, onto the form: q quits, ? helps, Enter goes back in."""
        if self._in_field() and self.focused is not None:
            self._last_field = self.focused.id or self._last_field
            self.query_one("#form", VerticalScroll).focus()

    def action_edit(self) -> None:
        self.query_one(f"#{self._last_field}").focus()

    # ---- reading and writing the widgets ----

    def fill(self, workload: Any) -> None:
        """Show these answers in the form."""
        self._filling = True
        try:
            for key, value in values_of(workload).items():
                q = next(q for q in self.questions if q.key == key)
                widget = self.query_one(f"#{q.widget_id}")
                if isinstance(widget, Input):
                    widget.value = "" if value is None else str(value)
                elif isinstance(widget, Select):
                    if value is None:
                        widget.clear()
                    else:
                        widget.value = value
        finally:
            self._filling = False
        self.revalidate()

    def values(self) -> dict[str, FormValue]:
        """The form's content, question key -> text, True/False, or None (don't know)."""
        out: dict[str, FormValue] = {}
        for q in self.questions:
            widget = self.query_one(f"#{q.widget_id}")
            if isinstance(widget, Input):
                out[q.key] = widget.value
            elif isinstance(widget, Select):
                choice = widget.value
                out[q.key] = choice if isinstance(choice, str | bool) else None
        return out

    def revalidate(self) -> None:
        """Check the whole form; show each error beside its field; keep the answers when valid."""
        result = check(self.values())
        for q in self.questions:
            error = result.field_errors.get(q.key, "")
            # Beside the field: its error, else what a size was read as ("16KB" = 16,000 bytes).
            shown = error or result.notes.get(q.key, "")
            # Only what changed: each update re-lays out the whole form.
            if self._beside_shown.get(q.key, "") != shown:
                beside = self.query_one(f"#{q.widget_id}-error", Static)
                beside.update(Text(terminal(shown)))
                beside.set_class(not error, "-note")
                self._beside_shown[q.key] = shown
        status = self.query_one("#form-status", Static)
        state = self.advisor.state
        if result.workload is not None:
            state.workload = result.workload
            state.workload_problem = None
            given = len(result.workload.answered())
            status.update(f"{given} answered, {len(self.questions) - given} don't know; "
                          "F4 proposal, ^s save, ^o load, ^f fill from a scan")
            status.remove_class("-invalid")
        else:
            count = len(result.field_errors) + (1 if result.form_error else 0)
            problem = result.form_error or f"{count} answer(s) need fixing"
            state.workload_problem = problem
            status.update(Text(f"not valid: {terminal(problem)}"))
            status.add_class("-invalid")
        self.advisor.request_proposal()

    @on(Input.Submitted)
    def _next_question(self) -> None:
        self.focus_next()

    @on(Input.Changed)
    @on(Select.Changed)
    def _changed(self) -> None:
        if not self._filling:
            self.revalidate()

    # ---- files ----

    def action_save(self) -> None:
        state = self.advisor.state
        default = default_save_name(state.workload_path, "workload.toml")
        save_file(self.app, f"Save the answers to (TOML; relative to {Path.cwd()}):", default,
                  "workload file", self._answers_text, self._saved)

    def _answers_text(self) -> str | None:
        from advisor.answers import dump_workload_toml

        state = self.advisor.state
        if state.workload_problem:
            self.notify(f"not saved: {state.workload_problem}", severity="error")
            return None
        return dump_workload_toml(state.workload)

    def _saved(self, written: Path) -> None:
        self.advisor.state.workload_path = str(written)

    def action_load(self) -> None:
        default = self.advisor.state.workload_path or ""
        prompt = PathPrompt("Load answers from (TOML or JSON):", default)
        self.app.push_screen(prompt, self._load_from)

    def _load_from(self, path: str | None) -> None:
        if not path:
            return
        from advisor.answers import load_workload

        source = Path(path).expanduser().absolute()
        try:
            workload = load_workload(source)
        except AdvisorError as err:
            self.notify(err.message, severity="error")
            return
        self.advisor.state.workload_path = str(source)
        self.fill(workload)
        self.notify(f"answers loaded from {source}")

    # ---- a directory scan fills what it can measure ----

    def action_scan(self) -> None:
        prompt = PathPrompt("Measure the data the filesystem will hold (a directory):", "")
        self.app.push_screen(prompt, self._scan)

    def _scan(self, path: str | None) -> None:
        if not path:
            return
        session = self.advisor.state.session

        def progress(entries: int, seconds: float) -> None:
            self.post_message(Scanned(entries, seconds))  # thread-safe; widgets untouched

        self.query_one("#form-status", Static).update(Text(f"scanning {terminal(str(path))}..."))
        self.run_worker(lambda: session.profile(path, progress), name="scan", group="scan",
                        thread=True, exclusive=True, exit_on_error=False)

    def on_scanned(self, message: Scanned) -> None:
        self.query_one("#form-status", Static).update(
            f"scanning: {message.entries:,} entries in {message.seconds:.0f} s...")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "scan" or not event.worker.is_finished:
            return
        if event.state == WorkerState.SUCCESS and event.worker.result is not None:
            profile = event.worker.result
            measured = profile.answers.model_dump(exclude_none=True)
            if self.advisor.state.workload_problem:
                self.notify("fix the answers first: the scan's answers merge into them",
                            severity="error")
            else:
                self.fill(profile.answers.merged_into(self.advisor.state.workload))
                names = ", ".join(k.replace("_", " ") for k in measured) or "nothing"
                self.notify(f"{profile.entries:,} entries measured: {names} filled in")
        elif event.state == WorkerState.ERROR:
            error = event.worker.error
            self.notify(error.message if isinstance(error, AdvisorError) else str(error),
                        severity="error")
            self.revalidate()
