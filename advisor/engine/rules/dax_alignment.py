"""2 MiB allocation alignment on persistent memory (DAX), so files map with huge pages."""

from __future__ import annotations

from advisor.engine.context import Change, Context, Outcome, mkfs_size
from advisor.engine.registry import decider
from advisor.models.base import Model


class DaxParams(Model):
    """The DAX layout."""

    huge_page: int
    """The size files should be aligned to: a PMD huge page (2 MiB on x86-64 with 4 KiB
    pages)."""


def not_dax(ctx: Context) -> str | None:
    """Why the DAX rules keep the default (None: the device is DAX-capable)."""
    if ctx.device.dax.value:
        return None
    said = "queue/dax = 0" if ctx.device.dax.value is False else "queue/dax is not known"
    return f"not a DAX device ({said}): no persistent-memory layout"


@decider(DaxParams)
def dax_alignment(ctx: Context, params: DaxParams) -> Outcome:
    why = not_dax(ctx)
    if why:
        return Outcome(keep_reason=why, applies=False)
    size = mkfs_size(params.huge_page)
    return Outcome(change=Change(
        f"su={size},sw=1", ["-d", f"su={size},sw=1"],
        f"{ctx.device.name} is DAX-capable (queue/dax = 1): a {size} stripe unit aligns file "
        f"extents to {size}, so mapped files fault in {size} huge pages instead of 4 KiB ones "
        "(fewer page faults and TLB misses); mkfs.xfs then caps the log stripe unit at 32 KiB "
        "and says so"))
