"""Small dialogs shared by the steps: a file name, a yes/no question, and saving a file with both
(never replacing a file without asking, always saying where it went)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

import advisor
from advisor.errors import AdvisorError

PACKAGE_DIR = Path(advisor.__file__).resolve().parent


class PathPrompt(ModalScreen[str | None]):
    """Ask for a file name (Enter accepts, escape cancels)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, value: str) -> None:
        super().__init__()
        self.prompt_title = title
        self.initial = value

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt-box"):
            yield Label(self.prompt_title)
            yield Input(value=self.initial, id="prompt-path")
            yield Label("Enter accepts, escape cancels", classes="prompt-keys")

    @on(Input.Submitted, "#prompt-path")
    def accept(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class Confirm(ModalScreen[bool]):
    """A yes/no question: `y` or the first button says yes, `n` or escape says no."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]
    # Enter on the focused button must not destroy anything: it says no.
    AUTO_FOCUS = "#confirm-no"

    def __init__(self, question: str, yes: str, no: str) -> None:
        super().__init__()
        self.question, self.yes, self.no = question, yes, no

    def compose(self) -> ComposeResult:
        with Vertical(id="prompt-box"):
            yield Label(self.question, id="confirm-question")
            yield Button(f"{self.yes} (y)", id="confirm-yes", variant="warning")
            yield Button(f"{self.no} (n)", id="confirm-no")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm-yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


def default_save_name(last: str | None, fallback: str) -> str:
    """The name offered for saving: the last file used, unless it lies inside the installed
    package (the shipped example workload must never be the default target); else `fallback`,
    in the current directory."""
    if last:
        try:
            inside = Path(last).expanduser().resolve().is_relative_to(PACKAGE_DIR)
        except OSError:
            inside = True
        if not inside:
            return last
    return fallback


def save_file(app: App[Any], title: str, default: str, what: str,
              text: Callable[[], str | None] | Callable[[Path], str | None],
              saved: Callable[[Path], None] | None = None, *, by_name: bool = False) -> None:
    """Ask where, ask again before replacing an existing file, then write `text()` whole (regular
    files only) and say the absolute path. `text()` returning None means there is nothing to
    save (it has said why). With `by_name`, `text(target)` is given the chosen file (its suffix
    may choose the format)."""

    def write(target: Path) -> None:
        from advisor.session import Session

        content = text(target) if by_name else text()  # type: ignore[call-arg]
        if content is None:
            return
        try:
            written = Session.write_file(target, content, what)
        except AdvisorError as err:
            app.notify(err.message, severity="error")
            return
        except OSError as err:
            app.notify(f"cannot write {target}: {err.strerror}", severity="error")
            return
        if saved is not None:
            saved(written)
        app.notify(f"{what} saved to {written.absolute()}")

    def chosen(path: str | None) -> None:
        if not path:
            return
        target = Path(path).expanduser().absolute()
        if not target.exists():
            write(target)
            return
        question = f"{target} exists. Replace it with the {what}?"
        app.push_screen(Confirm(question, "Replace it", "Keep it"),
                        lambda yes: write(target) if yes else app.notify("not saved"))

    app.push_screen(PathPrompt(title, default), chosen)
