"""The log size (guide 2.1.5)."""

from __future__ import annotations

import math

from pydantic import Field

from advisor.engine.context import (
    Change,
    Context,
    MiB,
    Outcome,
    log_size_text,
    mkfs_size,
    round_up,
)
from advisor.engine.load import metadata_writers
from advisor.engine.registry import decider
from advisor.engine.rules.log_stripe_unit import default_log_stripe_unit
from advisor.models.base import Model
from advisor.models.environment import parse_version
from advisor.models.units import human_size


class LogSizeParams(Model):
    """How much log concurrent metadata work holds at once, and the log's limits."""

    reservation_bytes_per_writer: int = Field(ge=1)
    """Log space one namespace transaction (create, mkdir, symlink, rename, remove) reserves
    while it runs: its log reservation times its log count (the largest, measured with
    `xfs_db -c logres`)."""
    log_count: int = Field(ge=1)
    """That transaction's log count: the kernel reserves its unit that many times over
    (xfs_db logres `logcount`, the xfs:xfs_log_reserve tracepoint's `t_cnt`)."""
    unit_overhead_bytes: int = Field(ge=0)
    """What the kernel adds to each unit of a reservation besides the stripe padding: log
    record and operation headers (fs/xfs/xfs_log.c xlog_calc_unit_res; measured with 32 KiB
    log buffers, the xfs:xfs_log_reserve tracepoint's `t_unit_res` less logres and padding)."""
    usable_log_percent: int = Field(ge=1, le=100)
    """Share of the log that reservations may fill before the kernel pushes metadata out to make
    room (fs/xfs/xfs_log.c xlog_grant_push_threshold keeps a quarter free)."""
    max_log_bytes: int = Field(ge=64 * MiB)
    """Largest internal log mkfs.xfs makes (2 GiB - 10 MiB)."""
    old_xfsprogs_min_bytes: int = Field(ge=MiB)
    """Log size to ask for when xfsprogs <= 5.14 would make a small one (5.15's minimum)."""
    size_per_log_byte: int = Field(ge=1)
    """mkfs.xfs makes a log of 1/this of the filesystem (up to max_log_bytes): the log a
    filesystem made at its eventual size would have."""
    grown_log_share: int = Field(ge=1)
    """A log sized for growth takes at most 1/this of the filesystem as made."""


@decider(LogSizeParams)
def log_size(ctx: Context, params: LogSizeParams) -> Outcome:
    w = ctx.workload
    default = ctx.geometry.log_bytes
    # The mkfs.xfs that will run the command decides the default log: a captured host's own.
    progs = ctx.env.command_xfsprogs
    old = progs is not None and (parse_version(progs) or (0, 0)) < (5, 15)
    small_there = old and ctx.env.xfsprogs_at_least(5, 15)
    writers, who = metadata_writers(w)
    if writers is not None and w.access != "read-heavy":
        lsu = default_log_stripe_unit(ctx)
        per_writer = reservation_per_writer(params, lsu)
        want = math.ceil(writers * per_writer * 100 / params.usable_log_percent)
        padded = (f" (with the {mkfs_size(lsu)} log stripe unit, which pads each of its "
                  f"{params.log_count} units twice)" if lsu > 512 else "")
        why = (f"{who}: each holds up to {human_size(per_writer)} of log reservation{padded}, "
               f"and reservations may fill {params.usable_log_percent}% of the log "
               f"before metadata is pushed out, so {human_size(want)} of log lets all of them "
               "run at once")
        if old and want < params.old_xfsprogs_min_bytes:
            want = params.old_xfsprogs_min_bytes
            why += f"; xfsprogs {progs} makes small logs"
    elif old:
        want = params.old_xfsprogs_min_bytes
        why = f"xfsprogs {progs} makes small logs"
    else:
        want, why = 0, (f"{who if writers is None else 'read-heavy access'}: the default "
                        f"{log_size_text(default)} log is enough")
    grown = _grown_log(ctx, params)
    if grown is not None and grown[0] > max(want, default):
        want, why = grown
    elif want == 0:
        return Outcome(keep_reason=why + (f"; {grown[1]}" if grown else ""))
    limits = []
    if want > min(params.max_log_bytes, ctx.geometry.agsize_bytes // 2):
        want = min(params.max_log_bytes, ctx.geometry.agsize_bytes // 2)
        limits.append("limited by the maximum log size and the AG size")
    # mkfs.xfs wants the log a whole number of log stripe units.
    want = round_up(want, math.lcm(MiB, default_log_stripe_unit(ctx) or 1))
    if want > min(params.max_log_bytes, ctx.geometry.agsize_bytes // 2):
        want -= math.lcm(MiB, default_log_stripe_unit(ctx) or 1)
    if want <= default and small_there:
        want = default
        why += (f"; the {log_size_text(default)} log shown as the default is what the local "
                f"xfsprogs {ctx.env.xfsprogs_version} makes, the captured host's xfsprogs {progs} "
                "makes a smaller one unless asked")
    elif want <= default:
        return Outcome(keep_reason=f"{why}: the default {log_size_text(default)} log is already "
                       f"that large" + (f" ({'; '.join(limits)})" if limits else ""))
    return Outcome(change=Change(
        mkfs_size(want), ["-l", f"size={mkfs_size(want)}"],
        values={"size": want}, reason=
        f"{why}: a {log_size_text(want)} log (default {log_size_text(default)})"
        + (f" ({'; '.join(limits)})" if limits else "")))


def reservation_per_writer(params: LogSizeParams, log_stripe_unit: int) -> int:
    """The log space one writer's largest namespace transaction holds, as the kernel grants it
    (fs/xfs/xfs_log.c xlog_calc_unit_res): each of its log count's units is the transaction's
    log reservation plus headers plus two paddings to the log stripe unit (512 bytes without
    one). A 256 KiB log stripe unit makes it 2.1 MiB instead of 646 KiB."""
    padding = 2 * max(log_stripe_unit, 512)
    return (params.reservation_bytes_per_writer
            + params.log_count * (params.unit_overhead_bytes + padding))


def _grown_log(ctx: Context, params: LogSizeParams) -> tuple[int, str] | None:
    """The log mkfs.xfs would make at the eventual size, and why it matters (an internal log
    cannot grow: xfs_growfs(8)); None when no growth is planned."""
    eventual = ctx.eventual_size
    if eventual is None or eventual <= ctx.size:
        return None
    bs = ctx.geometry.block_size
    grown = min(params.max_log_bytes, eventual // params.size_per_log_byte // bs * bs,
                ctx.size // params.grown_log_share // MiB * MiB)
    return grown, (f"growing to {human_size(eventual)}: an internal log cannot grow "
                   f"(xfs_growfs(8)), and mkfs.xfs makes a {log_size_text(grown)} log at that "
                   f"size (1/{params.size_per_log_byte} of it, at most "
                   f"{log_size_text(params.max_log_bytes)}) where it makes "
                   f"{log_size_text(ctx.geometry.log_bytes)} at {human_size(ctx.size)}")
