"""Larger log buffers for log-intensive work (guide 2.2)."""

from __future__ import annotations

from advisor.engine.context import Change, Context, Outcome, mkfs_size
from advisor.engine.load import (
    FsyncCostParams,
    fsync_load,
    impossible_fsync_rate,
    metadata_writers,
)
from advisor.engine.registry import decider
from advisor.engine.rules.log_stripe_unit import default_log_stripe_unit


class LogbsizeParams(FsyncCostParams):
    """When bigger log buffers pay off."""

    value_bytes: int
    """The log buffer size to use (256 KiB, the maximum)."""


def _log_intensive(ctx: Context, params: LogbsizeParams) -> str | None:
    """Why the work is log-IO intensive (guide 2.2.2): writers answered as modifying metadata,
    or fsyncs that keep the storage busy; None when neither is declared (a number of writers
    alone does not say they modify metadata, and the default stays when in doubt)."""
    writers, who = metadata_writers(ctx.workload)
    load = fsync_load(ctx, params)
    if load is not None and load[0] >= params.heavy_utilisation:
        return load[1]
    if writers is not None and ctx.workload.writer_activity is not None:
        return who
    return None


@decider(LogbsizeParams)
def logbsize(ctx: Context, params: LogbsizeParams) -> Outcome:
    w = ctx.workload
    impossible = impossible_fsync_rate(ctx, params)
    if impossible:
        return Outcome(keep_reason=impossible, warnings=[impossible])
    intensive = _log_intensive(ctx, params)
    if intensive is None:
        load = fsync_load(ctx, params)
        said = [f"{load[1]}: under {params.heavy_utilisation:.0%}"] if load else []
        if ctx.workload.concurrent_writers and ctx.workload.writer_activity is None:
            said.append("writer_activity not answered")
        return Outcome(keep_reason="no log-intensive work declared"
                       + (f" ({'; '.join(said)})" if said else ""))
    nv = w.storage.nonvolatile_write_cache
    cache = ctx.device.write_cache.value
    if nv is True:
        return Outcome(keep_reason="the answers say the write cache is non-volatile: it absorbs "
                       "small log writes, so bigger buffers make little difference")
    if nv is None and cache is None:
        return Outcome(keep_reason="whether the write cache is non-volatile is unknown")
    storage = ("the answers say the cache is not non-volatile" if nv is False else
               "a volatile write-back cache" if cache == "write back" else
               "write through: every log write waits for the media; a controller in "
               "write-through mode, or with a failed battery, gains most")
    chosen_lsu = ctx.decided("-l su", "su")
    lsu = chosen_lsu if isinstance(chosen_lsu, int) else default_log_stripe_unit(ctx)
    if lsu and params.value_bytes % lsu:
        return Outcome(keep_reason=f"{mkfs_size(params.value_bytes)} is not a multiple of the "
                       f"{mkfs_size(lsu)} log stripe unit")
    return Outcome(change=Change(
        mkfs_size(params.value_bytes), [f"logbsize={mkfs_size(params.value_bytes)}"],
        values={"logbsize": params.value_bytes}, reason=
        f"{intensive}, on storage without a non-volatile cache ({storage}): "
        f"{mkfs_size(params.value_bytes)} log buffers need fewer log IOs (fsync-heavy work does "
        "not need smaller ones: buffers are written partly full)"))
