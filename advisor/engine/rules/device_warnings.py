"""What the device itself says before anything is formatted."""

from __future__ import annotations

from advisor.engine.context import Context, Outcome
from advisor.engine.registry import NoParams, decider


@decider(NoParams)
def device_warnings(ctx: Context, params: NoParams) -> Outcome:
    d = ctx.device
    out: list[str] = []
    if d.alignment_offset.value:
        out.append(f"{d.name} starts {d.alignment_offset.value} bytes off its physical alignment: "
                   "every IO straddles sectors and mkfs.xfs refuses without -f; re-create the "
                   "partition aligned (1 MiB boundaries)")
    nonvolatile = ctx.workload.storage.nonvolatile_write_cache
    if d.write_cache.value == "write back" and nonvolatile is True:
        out.append(f"{d.name} reports a write-back cache and the answers say it is "
                   "non-volatile: the kernel still sends cache flushes. If the cache truly "
                   "survives power loss, a udev rule setting queue/write_cache to \"write "
                   f"through\" stops them (ACTION==\"add|change\", KERNEL==\"{d.name}\", "
                   "ATTR{queue/write_cache}=\"write through\"), the modern replacement for "
                   "nobarrier (removed in Linux 4.19). Risk: if it is not (a failed battery, a "
                   "drive without power-loss protection), a power failure loses or corrupts "
                   "what XFS was told is on stable storage")
    elif d.write_cache.value == "write back" and d.fua.value is False:
        out.append(f"{d.name} has a volatile write cache without FUA: every log commit costs a "
                   "full cache flush, which hurts metadata-heavy and fsync-heavy work "
                   "(LKML 2008, XFS vs elevators); "
                   "a non-volatile cache or FUA support avoids it. Never mount with nobarrier "
                   "(removed in Linux 4.19)")
    if d.zoned.value == "host-aware":
        out.append(f"{d.name} is a host-aware zoned device: it takes random writes, so a "
                   "conventional XFS works, but XFS does not write its zones sequentially and "
                   "the drive's own handling of that may make writes slow and uneven")
    if d.usage.mountpoints:
        out.append(f"{d.name} is mounted on {', '.join(d.usage.mountpoints)}: unmount it first; "
                   "mkfs.xfs destroys what is on it")
    elif d.usage.swap:
        out.append(f"{d.name} is in use as swap")
    elif d.usage.signatures or d.usage.fstype.value:
        found = ", ".join(str(s.value) for s in d.usage.signatures if s.value) \
            or str(d.usage.fstype.value)
        out.append(f"{d.name} holds data ({found}): mkfs.xfs refuses without -f and destroys it")
    if d.holders:
        out.append(f"{d.name} is used by {', '.join(d.holders)}: format that device instead")
    partitions = [c for c in d.children if c not in d.holders]
    if partitions:
        out.append(f"{d.name} has partitions ({', '.join(partitions)}): formatting the whole "
                   "device destroys them; format a partition instead")
    if d.read_only.value:
        out.append(f"{d.name} is read-only")
    return Outcome(warnings=out)
