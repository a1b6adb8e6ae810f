"""-i maxpct: room for the inodes of a small-file store."""

from __future__ import annotations

import math

from pydantic import Field

from advisor.engine.context import Change, Context, Outcome, TiB, round_up
from advisor.engine.registry import decider
from advisor.models.base import Model
from advisor.models.units import format_size, human_size


class InodeSpaceParams(Model):
    """How much room beyond the estimate inodes get."""

    headroom: float = Field(ge=1, le=4)
    """The estimated inode share is multiplied by this."""
    dir_entry_bytes: int = Field(ge=0, le=4096)
    """What each file's name costs in its directory: the entry and its hash (leaf) entry."""


def per_file_bytes(ctx: Context, median: int, dir_entry_bytes: int) -> int:
    """The space one file of `median` bytes takes: its data rounded up to whole blocks, its
    inode and its directory entry (2 KiB files: 4096 + 512 + 40 = 4648 B; measured on XFS with
    4 KiB blocks and 512-byte inodes: 4646 B)."""
    return round_up(median, ctx.geometry.block_size) + ctx.geometry.inode_size + dir_entry_bytes


def default_maxpct(ctx: Context) -> int:
    """What mkfs.xfs sets: its dry run says; else its table (xfsprogs mkfs/xfs_mkfs.c
    calculate_imaxpct: 25% under 1 TiB, 5% under 50 TiB, 1% above; binary units: 1023 GiB gets
    25, 1024 GiB 5, checked with mkfs.xfs -N)."""
    if ctx.geometry.imaxpct is not None:
        return ctx.geometry.imaxpct
    return 25 if ctx.size < TiB else 5 if ctx.size < 50 * TiB else 1


@decider(InodeSpaceParams)
def inode_space(ctx: Context, params: InodeSpaceParams) -> Outcome:
    w = ctx.workload
    planned = ctx.eventual_size or ctx.size
    isize = ctx.geometry.inode_size
    if w.file_count is not None:
        count, how = w.file_count, f"{w.file_count:,} files (file_count)"
    elif w.median_file_size:
        each = per_file_bytes(ctx, w.median_file_size, params.dir_entry_bytes)
        count = planned // each
        how = (f"{count:,} files of the median {format_size(w.median_file_size)} filling "
               f"{human_size(planned)} at {each:,} bytes each (data in whole "
               f"{format_size(ctx.geometry.block_size)} blocks, the inode, the directory entry)")
    else:
        return Outcome(keep_reason="neither the number of files nor their size is answered")
    keep = f"the default maxpct of {default_maxpct(ctx)}% stays"
    if w.file_count is not None and w.median_file_size:
        each = per_file_bytes(ctx, w.median_file_size, params.dir_entry_bytes)
        if count * each > planned:
            return Outcome(keep_reason=f"the answered files do not fit; {keep}", warnings=[
                f"{count:,} files (file_count) of the median {format_size(w.median_file_size)} "
                f"(median_file_size) take {each:,} bytes each (data in whole "
                f"{format_size(ctx.geometry.block_size)} blocks, the inode, the directory "
                f"entry), {human_size(count * each)} in all: more than the "
                f"{human_size(planned)} filesystem holds; check both answers (the inode space "
                f"is kept at the default)"])
    if count * isize > planned:
        return Outcome(keep_reason=f"inodes alone would not fit; {keep}", warnings=[
            f"{how} x {isize}-byte inodes = {human_size(count * isize)}: more than the "
            f"{human_size(planned)} filesystem holds, before any data; check the answer (the "
            "inode space is kept at the default)"])
    share = count * isize / planned
    wanted = math.ceil(share * params.headroom * 100)
    default = default_maxpct(ctx)
    what = (f"{how} x {isize}-byte inodes = {human_size(count * isize)}, {share:.1%} of "
            f"{human_size(planned)}")
    if default == 0 or wanted <= default:
        return Outcome(keep_reason=f"{what}: within the default maxpct of {default}%")
    if wanted >= 100:
        return Outcome(change=Change("maxpct=0", ["-i", "maxpct=0"], (
            f"{what}, with {params.headroom:g}x headroom more than the whole filesystem: "
            "maxpct=0 lifts the limit (any free space can become inodes)")), warnings=[
            f"{what}: inodes alone take most of the filesystem; little room is left for data"])
    return Outcome(change=Change(f"maxpct={wanted}", ["-i", f"maxpct={wanted}"], (
        f"{what}; with {params.headroom:g}x headroom {wanted}%, over the default {default}%: "
        "without it file creation fails with ENOSPC while df still shows free space (xfs_growfs"
        " -m changes it later)")))
