"""-i maxpct: room for the inodes of a small-file store."""

from __future__ import annotations

import math

from pydantic import Field

from advisor.engine.context import Change, Context, Outcome
from advisor.engine.registry import decider
from advisor.models.base import Model
from advisor.models.units import format_size, human_size

TB = 10**12


class InodeSpaceParams(Model):
    """How much room beyond the estimate inodes get."""

    headroom: float = Field(ge=1, le=4)
    """The estimated inode share is multiplied by this."""


def default_maxpct(ctx: Context) -> int:
    """What mkfs.xfs sets: its dry run says; else mkfs.xfs(8)'s table."""
    if ctx.geometry.imaxpct is not None:
        return ctx.geometry.imaxpct
    return 25 if ctx.size < TB else 5 if ctx.size < 50 * TB else 1


@decider(InodeSpaceParams)
def inode_space(ctx: Context, params: InodeSpaceParams) -> Outcome:
    w = ctx.workload
    planned = ctx.eventual_size or ctx.size
    isize = ctx.geometry.inode_size
    if w.file_count is not None:
        count, how = w.file_count, f"{w.file_count:,} files (file_count)"
    elif w.median_file_size:
        count = planned // w.median_file_size
        how = (f"{count:,} files of the median {format_size(w.median_file_size)} filling "
               f"{human_size(planned)}")
    else:
        return Outcome(keep_reason="neither the number of files nor their size is answered")
    share = count * isize / planned
    wanted = math.ceil(share * params.headroom * 100)
    default = default_maxpct(ctx)
    what = (f"{how} x {isize}-byte inodes = {human_size(count * isize)}, {share:.1%} of "
            f"{human_size(planned)}")
    if default == 0 or wanted <= default:
        return Outcome(keep_reason=f"{what}: within the default maxpct of {default}%")
    if wanted >= 100:
        return Outcome(change=Change("maxpct=0", ["-i", "maxpct=0"], (
            f"{what}, {params.headroom:g}x that is over 100%: maxpct=0 lifts the limit (any "
            "free space can become inodes)")), warnings=[
            f"{what}: inodes alone would fill the filesystem; the files will not fit"])
    return Outcome(change=Change(f"maxpct={wanted}", ["-i", f"maxpct={wanted}"], (
        f"{what}; with {params.headroom:g}x headroom {wanted}%, over the default {default}%: "
        "without it file creation fails with ENOSPC while df still shows free space (xfs_growfs"
        " -m changes it later)")))
