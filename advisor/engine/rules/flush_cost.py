"""A volatile write cache without FUA: every log commit costs two whole-cache flushes (the one
XFS asks for before each log write, and the one the block layer adds after it in place of FUA)."""

from __future__ import annotations

from advisor.engine.context import Context, Outcome
from advisor.engine.registry import NoParams, decider


@decider(NoParams)
def flush_cost(ctx: Context, params: NoParams) -> Outcome:
    d = ctx.device
    if d.write_cache.value != "write back" or d.fua.value is not False or \
            ctx.workload.storage.nonvolatile_write_cache is True:
        return Outcome()
    return Outcome(warnings=[
        f"{d.name} has a volatile write cache without FUA: XFS flushes the cache before every "
        "log write (REQ_PREFLUSH, FUA or not), and without FUA the block layer flushes it again "
        "after the write in place of a FUA write, so every log commit costs two whole-cache "
        "flushes (a loop device without FUA: 400 flushes for 200 fsyncs), which hurts "
        "metadata-heavy and fsync-heavy work. FUA support removes only the second flush; a "
        "cache that survives power loss, reported as write through (see nonvolatile-cache), "
        "removes both. Never mount with nobarrier (removed in Linux 4.19)"])
