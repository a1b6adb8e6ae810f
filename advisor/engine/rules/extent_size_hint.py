"""Extent size hint inherited from the root directory: for sparse files filled by random writes
(VM images), never for files grown by appends (databases), and huge-page sized on persistent
memory (DAX)."""

from __future__ import annotations

from pydantic import Field

from advisor.engine.allocation import hint_bytes, hint_outcome
from advisor.engine.context import Context, Outcome
from advisor.engine.registry import decider
from advisor.engine.rules.dax_alignment import not_dax
from advisor.models.base import Model
from advisor.models.units import ByteSize, format_size


class ExtentSizeHintParams(Model):
    """Which files get an extent size hint, and its size."""

    min_file_size: ByteSize = Field(gt=0)
    """Median file size from which the whole filesystem gets the hint."""
    hint: ByteSize = Field(gt=0)
    """The hint; with a stripe, rounded up to a multiple of the stripe unit."""
    dax_hint: ByteSize = Field(gt=0)
    """The hint on persistent memory mapped with DAX: a PMD huge page (2 MiB on x86-64), as
    xfsprogs' own mkfs/dax_x86_64.conf sets it."""


@decider(ExtentSizeHintParams)
def extent_size_hint(ctx: Context, params: ExtentSizeHintParams) -> Outcome:
    w = ctx.workload
    if not_dax(ctx) is None:
        return _dax(ctx, params.dax_hint)
    hint = hint_bytes(ctx, params.hint)
    later = (f"set it on the directories that hold such files instead: xfs_io -c 'extsize "
             f"{hint // 1024}k' DIR (new files inherit it; existing ones keep theirs)")
    if w.write_pattern is None:
        return Outcome(keep_reason="how files are written is not answered (write_pattern)")
    if w.write_pattern == "sequential":
        return Outcome(keep_reason="files are streamed start to end: delayed allocation already "
                       "gives them large extents")
    if w.write_pattern == "appending":
        return Outcome(keep_reason=(
            "files grow at the end a few KiB at a time with fsync (write_pattern = appending: "
            "database tables and journals): a file with an extent size hint bypasses delayed "
            "allocation: appends allocate the file a hint at a time, up front and unwritten "
            "(one allocation per hint, each fsync then converting the part written), while "
            "delayed allocation with speculative preallocation already keeps such a file in a "
            "few extents with fewer, growing allocations; keep the default"))
    if w.write_pattern == "mixed":
        return Outcome(keep_reason="the load is mixed: a hint on every file makes each scattered "
                       f"write into any sparse file allocate {format_size(hint)}; {later}")
    if w.median_file_size is None or w.median_file_size < params.min_file_size:
        least = format_size(params.min_file_size)
        size = ("not answered (median_file_size)" if w.median_file_size is None
                else f"{format_size(w.median_file_size)}, under {least}")
        return Outcome(keep_reason=f"sparse files are filled at random, but their median size is "
                       f"{size}: a filesystem-wide hint is for large images; {later}")
    median = w.median_file_size
    return hint_outcome(ctx, "extszinherit", hint, lambda blocks: (
        f"sparse files filled by writes scattered over them (write_pattern = random, median "
        f"{format_size(median)}: VM images): every file inherits a "
        f"{format_size(hint)} extent size hint ({blocks} blocks of "
        f"{ctx.geometry.block_size}) from the root directory, so writes scattered over a sparse "
        "file allocate aligned extents of that size instead of one small extent per write, "
        "and the file stays in few extents; a sparse file's holes fill a hint at a time"))


def _dax(ctx: Context, dax_hint: int) -> Outcome:
    """Every file on persistent memory gets a huge-page extent size hint."""
    hint = hint_bytes(ctx, dax_hint)
    return hint_outcome(ctx, "extszinherit", hint, lambda blocks: (
        f"{ctx.device.name} is DAX-capable (queue/dax = 1): every file inherits a "
        f"{format_size(hint)} extent size hint ({blocks} blocks), so each allocation is a "
        f"{format_size(hint)} extent on a {format_size(hint)} boundary, whatever the write "
        "size, and a mapped file faults in huge pages; the stripe unit alone aligns only "
        "allocations at the end of a file. xfsprogs' own mkfs/dax_x86_64.conf sets the same: "
        "su=2m,sw=1,extszinherit=512"))
