"""The base of the four step screens (devices, workload, proposal, validate)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.binding import Binding, BindingType
from textual.screen import Screen

if TYPE_CHECKING:
    from advisor.tui.app import AdvisorApp

#: The keys that work on every step, first in every footer so that at 80 columns help, quit and
#: every step key show. Where a text field has focus it takes `?` and `q`: Textual then drops
#: those from the footer, and F1 and ctrl+q (listed right after, same action) show instead.
COMMON_BINDINGS: list[BindingType] = [
    Binding("question_mark", "app.help", "Help", key_display="?"),
    Binding("f1", "app.help", "Help", key_display="F1"),
    Binding("q", "app.quit", "Quit"),
    Binding("ctrl+q", "app.quit", "Quit", key_display="^q"),
    Binding("f2", "app.step('devices')", "Devices", key_display="F2"),
    Binding("f3", "app.step('workload')", "Workload", key_display="F3"),
    Binding("f4", "app.step('proposal')", "Proposal", key_display="F4"),
    Binding("f5", "app.step('validate')", "Validate", key_display="F5"),
]


class StepScreen(Screen[None]):
    """A step of the flow, with typed access to the app's shared state."""

    BINDINGS: ClassVar[list[BindingType]] = COMMON_BINDINGS

    @property
    def advisor(self) -> AdvisorApp:
        from advisor.tui.app import AdvisorApp  # app.py imports the screens: resolve at call time

        assert isinstance(self.app, AdvisorApp)
        return self.app
