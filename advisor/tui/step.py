"""The base of the four step screens (devices, workload, proposal, validate)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.screen import Screen

if TYPE_CHECKING:
    from advisor.tui.app import AdvisorApp


class StepScreen(Screen[None]):
    """A step of the flow, with typed access to the app's shared state."""

    @property
    def advisor(self) -> AdvisorApp:
        from advisor.tui.app import AdvisorApp  # app.py imports the screens: resolve at call time

        assert isinstance(self.app, AdvisorApp)
        return self.app
