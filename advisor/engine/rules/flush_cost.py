"""A volatile write cache without FUA: every log commit costs a full cache flush."""

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
        f"{d.name} has a volatile write cache without FUA: every log commit costs a full cache "
        "flush, which hurts metadata-heavy and fsync-heavy work (LKML 2008, XFS vs elevators); a "
        "non-volatile cache or FUA support avoids it. Never mount with nobarrier (removed in "
        "Linux 4.19)"])
