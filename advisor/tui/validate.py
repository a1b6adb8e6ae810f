"""Step 4: the A/B validation run (defaults against the proposal)."""

from __future__ import annotations

import importlib.util
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, Static


class ValidateScreen(Screen[None]):
    """Runs the benchmark of advisor.bench in a worker; says so plainly when it is not built."""

    BINDINGS: ClassVar[list[BindingType]] = []

    def compose(self) -> ComposeResult:
        yield Header()
        with Vertical(id="validate-body"):
            yield Static(id="validate-status")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.title = "xfs-advisor: validate"
        if importlib.util.find_spec("advisor.bench.run") is None:
            self.query_one("#validate-status", Static).update(
                "The A/B validation (advisor.bench) is not in this build yet. "
                "The proposal (F4) can be copied or saved meanwhile.")
