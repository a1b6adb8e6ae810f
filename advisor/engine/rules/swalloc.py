"""swalloc: round allocations at the end of large files up to the stripe width."""

from __future__ import annotations

from pydantic import Field

from advisor.engine.allocation import large_sequential
from advisor.engine.context import Change, Context, Outcome, mkfs_size
from advisor.engine.registry import decider
from advisor.models.base import Model
from advisor.models.units import ByteSize, format_size


class SwallocParams(Model):
    """When files are large enough for stripe-width rounding to pay."""

    min_file_size: ByteSize = Field(gt=0)
    """Median file size from which streamed files get swalloc at all."""
    min_stripe_widths: int = Field(ge=1)
    """The median file must span at least this many full stripe widths."""


@decider(SwallocParams)
def swalloc(ctx: Context, params: SwallocParams) -> Outcome:
    stripe = ctx.stripe()
    if stripe is None:
        return Outcome(keep_reason="no stripe (detected, hidden below dm, or answered): swalloc "
                       "rounds allocations to the stripe width, and there is none")
    su, sw, where = stripe
    width = su * sw
    ok, why = large_sequential(ctx, params.min_file_size)
    if not ok:
        return Outcome(keep_reason=why)
    median = ctx.workload.median_file_size or 0
    if median < width * params.min_stripe_widths:
        return Outcome(keep_reason=f"{why}, spans fewer than {params.min_stripe_widths} stripe "
                       f"widths of {format_size(width)}: rounding each file up to a full "
                       "stripe would waste more than it aligns")
    return Outcome(change=Change("swalloc", ["swalloc"], (
        f"{why}, on a stripe of su={mkfs_size(su)} x {sw} ({format_size(width)} wide, from "
        f"{where}): allocations that extend a file larger than the stripe width are rounded "
        f"up to whole stripe widths, {_gain(ctx)}")))


def _gain(ctx: Context) -> str:
    """What full-stripe allocations buy, by the md level when there is one (md/level)."""
    md = ctx.device.md
    level = md.level.value if md is not None else None
    if level in ("raid4", "raid5", "raid6"):
        return (f"so this {level} (md/level) writes full stripes and reads no old data or "
                "parity back to update its parity")
    if level in ("raid0", "raid10"):
        return (f"so large writes cover every disk of this {level} (md/level) evenly; it "
                "keeps no parity, so there is no read-modify-write to avoid")
    return ("so a parity RAID writes full stripes and reads no old data or parity back (on "
            "RAID0 or RAID10 it only spreads large writes evenly over the disks)")
