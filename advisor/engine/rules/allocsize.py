"""allocsize=: a fixed end-of-file preallocation for large files streamed by several writers at
once."""

from __future__ import annotations

from pydantic import Field

from advisor.engine.allocation import large_sequential
from advisor.engine.context import Change, Context, Outcome, mkfs_size
from advisor.engine.registry import decider
from advisor.models.base import Model
from advisor.models.units import ByteSize, format_size


class AllocsizeParams(Model):
    """Which streamed files get a fixed preallocation, and how large."""

    min_file_size: ByteSize = Field(gt=0)
    """Median file size from which a fixed preallocation is proposed."""
    min_writers: int = Field(ge=1)
    """Concurrent writers from which their files interleave on disk without it."""
    file_fraction: int = Field(ge=1)
    """The preallocation is at most median file size / this (rounded down to a power of 2)."""
    max_size: ByteSize = Field(gt=0)
    """The largest value the kernel accepts (xfs(5): 1 GiB)."""
    min_size: ByteSize = Field(gt=0)
    """Below this, dynamic preallocation does as well."""


@decider(AllocsizeParams)
def allocsize(ctx: Context, params: AllocsizeParams) -> Outcome:
    ok, why = large_sequential(ctx, params.min_file_size)
    if not ok:
        return Outcome(keep_reason=why)
    writers = ctx.workload.concurrent_writers
    if writers is None or writers < params.min_writers:
        return Outcome(keep_reason=f"{why}, but "
                       + ("the number of concurrent writers is not answered"
                          if writers is None else f"only {writers} writer at a time")
                       + ": dynamic preallocation already grows with each file")
    median = ctx.workload.median_file_size or 0
    size = params.min_size
    while size * 2 <= min(median // params.file_fraction, params.max_size):
        size *= 2
    text = mkfs_size(size)
    return Outcome(change=Change(f"allocsize={text}", [f"allocsize={text}"], (
        f"{why}, {writers} written at once: a fixed {format_size(size)} end-of-file "
        "preallocation (1/" f"{params.file_fraction} of the median file at most) keeps each "
        "file in a few large extents where the writers' delayed allocations would otherwise "
        "interleave; it turns dynamic preallocation off, so small files would each hold "
        f"{format_size(size)} past their end until closed")))
