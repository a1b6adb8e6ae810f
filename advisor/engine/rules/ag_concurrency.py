"""Enough allocation groups for the metadata writers (guide 2.1.2)."""

from __future__ import annotations

from pydantic import Field

from advisor.engine.context import Change, Context, GiB, MiB, Outcome, mkfs_size
from advisor.engine.load import metadata_writers
from advisor.engine.registry import decider
from advisor.models.base import Model
from advisor.models.units import human_size


class AgConcurrencyParams(Model):
    """How far to raise the AG count, and the limit for filesystems that will grow."""

    target_agcount: int = Field(ge=2)
    """AG count to reach (guide 2.1.2: at least 32)."""
    max_agcount_when_grown: int = Field(ge=2)
    """Most AGs once grown (guide 2.1.2.2: a few hundred)."""


def multidisk_agcount(size: int) -> int:
    """The AG count mkfs.xfs itself makes when it sees multi-disk storage of `size` bytes
    (xfsprogs mkfs/xfs_mkfs.c calc_default_ag_geometry): 32, halved at <= 512 GiB, <= 8 GiB,
    < 128 MiB, < 64 MiB and < 32 MiB. Used as the cap on small filesystems, instead of a
    minimum AG size of our own."""
    if size > 512 * GiB:
        return 32
    if size > 8 * GiB:
        return 16
    for shift, floor in ((3, 128 * MiB), (2, 64 * MiB), (1, 32 * MiB)):
        if size >= floor:
            return 1 << shift
    return 1




@decider(AgConcurrencyParams)
def ag_concurrency(ctx: Context, params: AgConcurrencyParams) -> Outcome:
    writers, who = metadata_writers(ctx.workload)
    default = ctx.geometry.agcount
    if writers is None:
        return Outcome(keep_reason=who)
    if writers <= default:
        return Outcome(keep_reason=f"{who}: no more than the {default} AGs, each of which "
                       "allocates on its own (guide 2.1.2)")
    if default >= params.target_agcount:
        return Outcome(keep_reason=f"mkfs.xfs already makes {default} AGs")
    stripe = ctx.stripe()
    if stripe:
        return Outcome(keep_reason=f"with a stripe (su={mkfs_size(stripe[0])}, sw={stripe[1]}, "
                       f"from {stripe[2]}) mkfs.xfs treats the storage as multi-disk and picks "
                       "the AG count for it")
    kind, said_by = ctx.storage()
    if kind == "single-disk":
        return Outcome(keep_reason=f"a single spinning disk ({said_by}) cannot serve more "
                       "concurrency: more AGs only spread its seeks (LKML 2015, XFS on a single "
                       "spindle)")
    # mkfs.xfs's multi-disk count for this size, raised to one AG per writer up to the target:
    # guide 2.1.2 asks for at least 32 AGs when a highly concurrent workload runs on a
    # filesystem of limited size (200 GiB and 64 writers: 32, not the table's 16).
    multidisk = min(params.target_agcount, max(multidisk_agcount(ctx.size), writers))
    # The internal log lives inside one AG: an AG must be larger than it (mkfs.xfs refuses
    # "Log size must be at least 64MB" otherwise; measured: agcount=8 fails at 512 MiB with the
    # 64 MiB log, works from 513 MiB). A MiB more than the log leaves room for the AG headers.
    log = ctx.geometry.log_bytes
    holds_log = max(1, ctx.size // (log + MiB))
    target = min(multidisk, holds_log)
    eventual = ctx.eventual_size
    if eventual:
        target = min(target, max(2, params.max_agcount_when_grown * ctx.size // eventual))
    if target <= default:
        # Here the multi-disk count is above the default (the writers and the target both are),
        # so a target of holds_log is below it: the log is what held the count.
        limit = (f"no more than {target} AGs each larger than the {human_size(log)} log fit"
                 if target == holds_log else f"mkfs.xfs itself makes no more than "
                 f"{target} AGs even for multi-disk storage")
        return Outcome(keep_reason=f"{who}; at {human_size(ctx.size)} {limit}: the default "
                       f"{default} stays")
    storage = (f"storage of unknown kind ({said_by}): guide 2.1.2 says to ensure at least "
               f"{params.target_agcount} AGs when mkfs.xfs cannot detect it"
               if kind == "unknown" else f"{kind} storage ({said_by}) that mkfs.xfs sees as a "
               "single device")
    how_many = (f"{target} AGs, the most that each stay larger than the {human_size(log)} log"
                if target == holds_log < multidisk else
                f"{target} AGs, as mkfs.xfs makes for multi-disk storage of "
                f"{human_size(ctx.size)}" if target == multidisk_agcount(ctx.size) else
                f"{target} AGs, one per writer up to {params.target_agcount} (guide 2.1.2: at "
                f"least {params.target_agcount} for highly concurrent work on a filesystem of "
                "limited size)")
    why = (f"{who} on {storage} ({default} AGs by default): {how_many}, let that many "
           "allocations proceed at once")
    if ctx.env.mkfs_knows(6, 8):
        return Outcome(change=Change(f"concurrency={target}", ["-d", f"concurrency={target}"],
                                     values={"concurrency": target}, reason=
                                     why + " (xfsprogs >= 6.8 sizes AGs for it: -d concurrency)"))
    return Outcome(change=Change(f"agcount={target}", ["-d", f"agcount={target}"], why,
                                     values={"agcount": target}))
