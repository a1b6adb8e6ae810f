"""Extent size hint inherited from the root directory, for files grown by random writes (VM
images, databases: issue 15)."""

from __future__ import annotations

from pydantic import Field

from advisor.engine.allocation import hint_bytes, hint_too_large
from advisor.engine.context import Change, Context, Outcome
from advisor.engine.registry import decider
from advisor.models.base import Model
from advisor.models.units import ByteSize, format_size


class ExtentSizeHintParams(Model):
    """Which files get an extent size hint, and its size."""

    min_file_size: ByteSize = Field(gt=0)
    """Median file size from which the whole filesystem gets the hint."""
    hint: ByteSize = Field(gt=0)
    """The hint; with a stripe, rounded up to a multiple of the stripe unit."""


@decider(ExtentSizeHintParams)
def extent_size_hint(ctx: Context, params: ExtentSizeHintParams) -> Outcome:
    w = ctx.workload
    hint = hint_bytes(ctx, params.hint)
    later = (f"set it on the directories that hold such files instead: xfs_io -c 'extsize "
             f"{hint // 1024}k' DIR (new files inherit it; existing ones keep theirs)")
    if w.write_pattern is None:
        return Outcome(keep_reason="how files are written is not answered (write_pattern)")
    if w.write_pattern == "sequential":
        return Outcome(keep_reason="files are streamed start to end: delayed allocation already "
                       "gives them large extents")
    if w.write_pattern == "mixed":
        return Outcome(keep_reason="the load is mixed: a hint on every file makes each scattered "
                       f"write into any sparse file allocate {format_size(hint)}; {later}")
    if w.median_file_size is None or w.median_file_size < params.min_file_size:
        least = format_size(params.min_file_size)
        size = ("not answered (median_file_size)" if w.median_file_size is None
                else f"{format_size(w.median_file_size)}, under {least}")
        return Outcome(keep_reason=f"files are written randomly, but their median size is {size}"
                       f": a filesystem-wide hint is for large images and database files; {later}")
    too_large = hint_too_large(ctx, hint)
    if too_large:
        return Outcome(keep_reason=too_large)
    blocks = hint // ctx.geometry.block_size
    return Outcome(change=Change(
        f"extszinherit={blocks}", ["-d", f"extszinherit={blocks}"],
        f"files grown by random writes (write_pattern = random, median "
        f"{format_size(w.median_file_size)}: VM images, databases): every file inherits a "
        f"{format_size(hint)} extent size hint ({blocks} blocks of "
        f"{ctx.geometry.block_size}) from the root directory, so writes scattered over a sparse "
        "file allocate aligned extents of that size instead of one small extent per write, "
        "and the file stays in few extents; a sparse file's holes fill a hint at a time"))
