"""The log stripe unit (guide 2.1.6)."""

from __future__ import annotations

from advisor.engine.context import Change, Context, Outcome, mkfs_size
from advisor.engine.load import FsyncCostParams, fsync_load
from advisor.engine.registry import decider


class LogStripeParams(FsyncCostParams):
    """When synchronous log writes make a log stripe unit a cost."""


def default_log_stripe_unit(ctx: Context) -> int:
    """The log stripe unit in bytes mkfs.xfs makes with the options decided so far: the data
    stripe unit up to 256 KiB, 32 KiB above it, one block when the log sector is over 512 B
    (read from its dry run, not predicted)."""
    return ctx.geometry.log_sunit_blocks * ctx.geometry.block_size


@decider(LogStripeParams)
def log_stripe_unit(ctx: Context, params: LogStripeParams) -> Outcome:
    lsu = default_log_stripe_unit(ctx)
    block = ctx.geometry.block_size
    if lsu <= block:
        if ctx.stripe() is None:
            return Outcome(keep_reason="no data stripe: log writes are not padded to a stripe "
                           "unit")
        sector = ctx.geometry.sector_size
        return Outcome(keep_reason=f"mkfs.xfs already makes the log stripe unit one block "
                       f"({mkfs_size(block)})" + (f": it does so for {sector}-byte sectors "
                       "whatever the data stripe" if sector > 512 else ""))
    load = fsync_load(ctx, params)
    if load is None:
        return Outcome(keep_reason=f"fsync rate not given: log writes stay aligned to the "
                       f"{mkfs_size(lsu)} stripe unit")
    if load[0] < params.heavy_utilisation:
        return Outcome(keep_reason=f"{load[1]}: under {params.heavy_utilisation:.0%}, so "
                       f"aligned {mkfs_size(lsu)} log writes cost little")
    return Outcome(change=Change(
        mkfs_size(block), ["-l", f"su={mkfs_size(block)}"],
        values={"su": block}, reason=
        f"{load[1]}: fsync latency dominates, and each log write an fsync forces (for a new "
        f"size, an allocation, new timestamps) is padded to the {mkfs_size(lsu)} log stripe "
        "unit, however little it holds (more bytes per fsync in as many writes); one block "
        "lets small log writes go out at once"))
