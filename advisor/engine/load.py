"""How hard the answered workload drives the storage: metadata writers and fsync load. Shared by
the rules that size the log and its buffers."""

from __future__ import annotations

from typing import get_args

from pydantic import Field, model_validator

from advisor.engine.context import Context
from advisor.models.base import Model
from advisor.models.workload import StorageKind, Workload


class FsyncCostParams(Model):
    """How long one fsync keeps the storage busy, per storage kind, and from what share of its
    time fsyncs make the work latency-bound."""

    fsync_ms: dict[StorageKind, float]
    """Milliseconds one fsync (a data write and a log write) takes without a non-volatile
    cache, per storage.kind value (every kind is given; the sources are in the rule file)."""
    nonvolatile_fsync_ms: float = Field(gt=0)
    """The same behind a cache that survives power loss (a write lands in it)."""
    heavy_utilisation: float = Field(gt=0, lt=1)
    """Share of the storage's time taken by fsyncs from which they queue behind one another."""

    @model_validator(mode="after")
    def _every_kind(self) -> FsyncCostParams:
        missing = set(get_args(StorageKind)) - set(self.fsync_ms)
        if missing:
            raise ValueError(f"fsync_ms lacks {', '.join(sorted(missing))}")
        return self


#: An answered fsync rate this many times what the storage completes is not a load but a
#: mistake in the answers (a rate per day given per second, a count given as a rate): the rules
#: keep their defaults and say so, rather than build on it.
IMPOSSIBLE_LOAD = 100


def _fsync_cost(ctx: Context, params: FsyncCostParams) -> tuple[float, str]:
    """Milliseconds one fsync takes on this storage, and on what (as the reasons say it)."""
    kind, said_by = ctx.storage()
    if kind in ("md-raid", "hardware-raid", "unknown") and ctx.device.rotational.value is False:
        kind, said_by = "ssd", f"{said_by}; queue/rotational = 0: solid-state members"
    if ctx.workload.storage.nonvolatile_write_cache:
        return params.nonvolatile_fsync_ms, "behind a non-volatile cache"
    return params.fsync_ms[kind], f"on {kind} storage ({said_by})"


def impossible_fsync_rate(ctx: Context, params: FsyncCostParams) -> str | None:
    """Why the answered fsync rate cannot be (None: it can, or none is answered)."""
    fsyncs = ctx.workload.fsyncs_per_second
    if fsyncs is None:
        return None
    cost, what = _fsync_cost(ctx, params)
    most = 1000 / cost
    if fsyncs <= most * IMPOSSIBLE_LOAD:
        return None
    return (f"fsyncs_per_second = {fsyncs:g} is more than {IMPOSSIBLE_LOAD} times what the "
            f"storage completes (about {most:g} fsyncs/s at {cost:g} ms each {what}): taken as "
            "a mistake in the answers, so no rule builds on it and the log settings keep their "
            "defaults; check the rate (fsyncs per second, all writers together)")


def fsync_load(ctx: Context, params: FsyncCostParams) -> tuple[float, str] | None:
    """The share of the storage's time the answered fsync rate takes (above 1: more than it
    completes, the fsyncs queue), and how that was worked out; None when no rate is answered or
    the rate cannot be (impossible_fsync_rate)."""
    fsyncs = ctx.workload.fsyncs_per_second
    if fsyncs is None or impossible_fsync_rate(ctx, params):
        return None
    cost, what = _fsync_cost(ctx, params)
    load = fsyncs * cost / 1000
    if load > 1:
        return load, (f"{fsyncs:g} fsyncs/s at about {cost:g} ms each {what}: more than it "
                      f"completes (about {1000 / cost:g}/s), so fsyncs queue behind one another "
                      "and their latency decides")
    return load, (f"{fsyncs:g} fsyncs/s at about {cost:g} ms each {what} keep it busy "
                  f"{load:.0%} of the time")

def metadata_writers(w: Workload) -> tuple[int | None, str]:
    """The writers that modify metadata (create, delete, rename, xattrs), and how the answers
    say so; None when there are none or none are declared."""
    if w.concurrent_writers is None:
        return None, "number of concurrent writers not given"
    if w.writer_activity == "data":
        return None, (f"{w.concurrent_writers} concurrent writers, but they write into existing "
                      "files: data-intensive work is not limited by space management (guide "
                      "2.1.2), directory and attribute changes are")
    if w.writer_activity is None:
        return w.concurrent_writers, (f"{w.concurrent_writers} concurrent writers, taken as "
                                      "creating, deleting or renaming files (writer_activity not "
                                      "answered)")
    what = ("creating, deleting or renaming files and setting xattrs"
            if w.writer_activity == "metadata" else "modifying metadata and writing data")
    return w.concurrent_writers, f"{w.concurrent_writers} concurrent writers {what} (answered)"
