"""largeio: report the stripe width (or allocsize) as the preferred I/O size."""

from __future__ import annotations

from pydantic import Field

from advisor.engine.allocation import large_sequential
from advisor.engine.context import Change, Context, Outcome
from advisor.engine.registry import decider
from advisor.models.base import Model
from advisor.models.units import ByteSize, format_size


class LargeioParams(Model):
    """When a large st_blksize helps the applications."""

    min_file_size: ByteSize = Field(gt=0)
    """Median file size from which streamed files get largeio."""


@decider(LargeioParams)
def largeio(ctx: Context, params: LargeioParams) -> Outcome:
    ok, why = large_sequential(ctx, params.min_file_size)
    if not ok:
        return Outcome(keep_reason=why)
    stripe = ctx.stripe()
    alloc = ctx.chosen.get("mount allocsize")
    if stripe is not None:
        size, what = stripe[0] * stripe[1], "the stripe width"
    elif alloc is not None:
        size, what = 0, f"the preallocation ({alloc.value})"
    else:
        return Outcome(keep_reason=f"{why}, but with no stripe width and no allocsize largeio "
                       "reports the page size, as nolargeio does")
    shown = format_size(size) if size else alloc.value.partition("=")[2] if alloc else ""
    return Outcome(change=Change("largeio", ["largeio"], (
        f"{why}: stat() reports {what} ({shown}) as st_blksize instead of 4 KiB, so cp, tar "
        "and stdio-buffered writers that size their I/O by it write whole stripes; programs "
        "that read small files by st_blksize would read that much each time")))
