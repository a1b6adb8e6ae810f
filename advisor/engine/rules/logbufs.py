"""logbufs: today's default is the guide's advice (guide 2.2)."""

from __future__ import annotations

from advisor.engine.context import Context, Outcome
from advisor.engine.registry import NoParams, decider


@decider(NoParams)
def logbufs(ctx: Context, params: NoParams) -> Outcome:
    return Outcome(keep_reason="8 log buffers is the default and the fastest; fewer only saves "
                   "memory with many filesystems in little memory")
