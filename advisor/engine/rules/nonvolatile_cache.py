"""A write-back cache the answers call non-volatile: the kernel still flushes it; a udev rule (not
nobarrier) is how to stop that, and what it risks."""

from __future__ import annotations

from advisor.engine.context import Context, Outcome
from advisor.engine.registry import NoParams, decider


@decider(NoParams)
def nonvolatile_cache(ctx: Context, params: NoParams) -> Outcome:
    d = ctx.device
    if d.write_cache.value != "write back" or ctx.workload.storage.nonvolatile_write_cache \
            is not True:
        return Outcome()
    return Outcome(warnings=[
        f"{d.name} reports a write-back cache and the answers say it is non-volatile: the "
        "kernel still sends cache flushes. If the cache truly survives power loss, a udev rule "
        "setting queue/write_cache to \"write through\" stops them (ACTION==\"add|change\", "
        f"KERNEL==\"{d.name}\", ATTR{{queue/write_cache}}=\"write through\"), the modern "
        "replacement for nobarrier (removed in Linux 4.19). Risk: if it is not (a failed "
        "battery, a drive without power-loss protection), a power failure loses or corrupts "
        "what XFS was told is on stable storage"])
