"""-K: mkfs.xfs without its whole-device discard, where that discard is slow or does harm (thin
storage, SAN LUNs, very large devices)."""

from __future__ import annotations

from pydantic import Field

from advisor.engine.context import Change, Context, Outcome
from advisor.engine.registry import decider
from advisor.models.base import Model
from advisor.models.units import ByteSize, human_size

#: Buses over which a disk is a LUN of a storage array.
SAN_TRANSPORTS = {"fc": "Fibre Channel", "iscsi": "iSCSI"}
AFTER = ("a new filesystem needs none of it: its free space can be trimmed later, at a quiet "
         "time, with fstrim (fstrim.timer)")


class MkfsDiscardParams(Model):
    """From which size a whole-device discard is too long to wait for at mkfs."""

    large_device: ByteSize = Field(gt=0)
    """Devices at least this large that take discards get -K."""


@decider(MkfsDiscardParams)
def mkfs_discard(ctx: Context, params: MkfsDiscardParams) -> Outcome:
    d = ctx.device
    granularity = d.discard_granularity.value
    if granularity == 0 or d.discard_below.value or d.discard_max_bytes.value == 0:
        return Outcome(keep_reason="the device takes no discards (queue/discard_granularity or "
                       "discard_max_bytes = 0): mkfs.xfs has nothing to discard")
    if granularity is None and d.rotational.value and d.thin.value is None \
            and d.transport not in SAN_TRANSPORTS:
        return Outcome(keep_reason="a rotating disk takes no discards: mkfs.xfs skips it")
    before = ("mkfs.xfs discards the whole device before it writes anything (mkfs.xfs(8) -K: "
              "'Do not attempt to discard blocks at mkfs time')")
    thin = d.thin.value
    if thin is not None:
        what = {"dm-thin": "an LVM thin volume", "lbpme": "a thin-provisioned LUN (LBPME)"}[thin]
        return Outcome(change=Change("-K", ["-K"], reason=(
            f"{d.display_name} is {what}: {before}, which on thin storage unmaps every block "
            "of the volume, including space the pool or the array had allocated or "
            f"preallocated to it, and on a large volume takes long; {AFTER}")))
    if d.transport in SAN_TRANSPORTS:
        return Outcome(change=Change("-K", ["-K"], reason=(
            f"{d.display_name} is a {SAN_TRANSPORTS[d.transport]} LUN: {before}; an array "
            "turns it into UNMAP commands over the whole LUN, which can take hours and "
            "releases space the array may have preallocated (a thick LUN); " + AFTER)))
    size = ctx.size
    if size >= params.large_device:
        return Outcome(change=Change("-K", ["-K"], reason=(
            f"{before}; on {human_size(size)} (at least {human_size(params.large_device)}) "
            "that can take from minutes to hours on storage that discards slowly (RAID "
            f"arrays, SATA SSDs), with nothing to show meanwhile; {AFTER}")))
    return Outcome(keep_reason=(
        f"{before}: on {human_size(size)} (under {human_size(params.large_device)}), not thin, "
        "not a SAN LUN, that is quick and tells an SSD every block is free"))
