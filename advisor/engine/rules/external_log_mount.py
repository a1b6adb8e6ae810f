"""logdev= at mount, for a filesystem whose log the proposal puts on another device."""

from __future__ import annotations

from advisor.engine.context import Change, Context, Outcome
from advisor.engine.registry import NoParams, decider


@decider(NoParams)
def external_log_mount(ctx: Context, params: NoParams) -> Outcome:
    chosen = ctx.chosen.get("-l logdev")
    if chosen is None:
        return Outcome(keep_reason="the log is internal: no logdev= at mount")
    path = chosen.source
    return Outcome(change=Change(f"logdev={path}", [f"logdev={path}"],
                                 f"the log is on {path} (-l logdev): the kernel mounts the "
                                 "filesystem only when told where its log is"))
