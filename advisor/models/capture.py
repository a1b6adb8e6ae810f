"""`xfs-advisor capture DIR --json`: what a capture wrote, for a script to check and move on."""

from __future__ import annotations

from advisor import SCHEMA_VERSION
from advisor.models.base import Model


class CaptureDocument(Model):
    """What `xfs-advisor capture DIR --json` prints."""

    schema_version: int = SCHEMA_VERSION
    """Version of this document's shape."""
    capture: str
    """The folder written (replay it with `xfs-advisor --sysroot DIR ...`)."""
    files: int
    """Files copied into it."""
    symlinks: int
    """Symbolic links recreated in it."""
    devices: list[str]
    """Kernel names of the devices captured, in sysfs order."""
