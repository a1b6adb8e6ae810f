"""A dm layer that drops the discards the storage below takes."""

from __future__ import annotations

from advisor.engine.context import Context, Outcome
from advisor.engine.registry import NoParams, decider


@decider(NoParams)
def discard_passdown(ctx: Context, params: NoParams) -> Outcome:
    d = ctx.device
    below = d.discard_below
    if not below.value:
        return Outcome()
    where = (below.path or "").split("/")[2] if below.path else "the device below"
    fix = {
        "crypt": "dm-crypt passes discards only when opened with them allowed: `cryptsetup "
                 "open --allow-discards` (crypttab option `discard`; LUKS2: `cryptsetup "
                 "refresh --allow-discards --persistent`), which reveals which blocks are free",
        "lvm": "a thin pool passes them down only with `lvchange --discards passdown VG/POOL`"
               if d.thin.value == "dm-thin" else
               "check the LVM layers' discard settings (`lvs -o +discards`)",
    }.get(d.dm_kind or "", "check how this dm target is set up (`dmsetup table`)")
    return Outcome(warnings=[
        f"{d.display_name} takes no discards (queue/discard_max_bytes = 0) though {where} "
        f"below does ({below.value} bytes): neither fstrim nor the discard mount option "
        f"reaches the storage, so freed space is never returned to it. {fix}"])
