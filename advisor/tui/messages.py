"""The TUI's own messages, typed: what the app tells the step screens, and what a validation's
worker thread tells the validate screen. The app posts to the screen on show; a step screen not
shown catches up when it is shown again (its on_screen_resume reads the state), so no screen keeps
a reference to another and the app keeps no list of listeners."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from advisor.models.device import Inventory


class ProposalChanged(Message, bubble=False):
    """The state's proposal changed, or started or stopped being computed."""


class DevicesChanged(Message, bubble=False):
    """The devices were read again (hotplug, `r`, a re-check before a run): the state holds the
    new inventory."""


class DevicesRead(Message, bubble=False):
    """The first scan of the devices ended (posted from its worker thread): `inventory`, or
    `problem` when it failed (a device vanishing mid-scan)."""

    def __init__(self, inventory: Inventory | None, problem: str | None) -> None:
        super().__init__()
        self.inventory = inventory
        self.problem = problem


class HotplugSeen(Message, bubble=False):
    """udev saw a block device come, go or change (posted from pyudev's observer thread)."""


class RunProgressed(Message, bubble=False):
    """The validation run moved on (posted from the worker thread)."""

    def __init__(self, done: int, total: int, what: str) -> None:
        super().__init__()
        self.done, self.total, self.what = done, total, what


class RunSampled(Message, bubble=False):
    """One side of one round was measured (posted from the worker thread). `run`: the run's
    cancel event, which tells a late message of an earlier run from one of this run."""

    def __init__(self, run: threading.Event, side: str, round_index: int,
                 values: dict[str, float]) -> None:
        super().__init__()
        self.run, self.side, self.round_index, self.values = run, side, round_index, values
