"""noatime/relatime (guide 2.2)."""

from __future__ import annotations

from advisor.engine.context import Change, Context, Outcome
from advisor.engine.registry import NoParams, decider


@decider(NoParams)
def atime(ctx: Context, params: NoParams) -> Outcome:
    needed = ctx.workload.atime_needed
    if needed is False:
        return Outcome(change=Change("noatime", ["noatime"], values={"noatime": True}, reason=
                                     "nothing relies on access times: noatime saves the inode "
                                     "writes relatime still makes once a day per file read"))
    if needed:
        return Outcome(keep_reason="access times are needed: relatime keeps them useful (newer "
                       "than mtime, updated daily)")
    return Outcome(keep_reason="whether anything needs access times is unknown: relatime is the "
                   "safe default")
