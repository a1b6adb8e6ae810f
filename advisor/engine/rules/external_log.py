"""The log on a faster device for fsync-heavy work on disk storage."""

from __future__ import annotations

from advisor.engine.context import Change, Context, Outcome, mkfs_size
from advisor.engine.load import FsyncCostParams, fsync_load
from advisor.engine.registry import decider

#: Storage kinds whose fsyncs wait for spinning disks (an SSD log gains them most).
DISK_KINDS = ("single-disk", "hardware-raid", "md-raid")


def _log_bytes(ctx: Context) -> int:
    """The log size the proposal makes (the log-size decision, measured), which the external
    log gets too: mkfs.xfs would otherwise take the whole log device and refuse one larger
    than the biggest log."""
    return ctx.geometry.log_bytes


def lost_log_warning(path: str, size: int) -> str:
    return (f"the log lives on {path}: the filesystem cannot be mounted, nor repaired "
            f"(xfs_repair -l {path}), without it; losing it loses the metadata changes not yet "
            f"written home and, in practice, the filesystem. Use a mirrored device at least "
            f"{mkfs_size(size)} large, give `logdev={path}` at every mount (fstab), and prefer "
            "a stable name (/dev/disk/by-id/...) to one that can change at boot")


@decider(FsyncCostParams)
def external_log(ctx: Context, params: FsyncCostParams) -> Outcome:
    w = ctx.workload
    path = w.storage.log_device
    if path is None:
        return Outcome(keep_reason="no faster log device named (storage.log_device): the log "
                       "stays inside the data section, where it needs no device of its own")
    if path in (ctx.device.path, f"/dev/{ctx.device.name}"):
        return Outcome(keep_reason=f"storage.log_device names {path}, the device being "
                       "formatted: an external log must be another device")
    kind, said_by = ctx.storage()
    named = f"{path} is answered as the log device (storage.log_device)"
    if ctx.device.rotational.value is False or kind not in DISK_KINDS:
        what = ("the data device is solid-state (queue/rotational = 0)"
                if ctx.device.rotational.value is False else f"the storage is {kind} ({said_by})"
                + ("; answer storage.kind if it is disk RAID" if kind == "unknown" else ""))
        return Outcome(keep_reason=f"{named}, but {what}: an external log pays on "
                       "spinning disks, where every log write waits for a seek; elsewhere it "
                       "adds a device whose loss loses the filesystem, for little gain")
    load = fsync_load(ctx, params)
    if load is None:
        return Outcome(keep_reason=f"{named}, but no fsync rate is answered "
                       "(fsyncs_per_second): an external log pays for fsync-heavy work only")
    if load[0] < params.heavy_utilisation:
        return Outcome(keep_reason=f"{named}, but {load[1]}: under "
                       f"{params.heavy_utilisation:.0%}, log writes do not queue behind data "
                       "writes enough to pay for a second device whose loss loses the filesystem")
    parts = [f"logdev={path}"]
    if "-l size" not in ctx.chosen:
        parts.append(f"size={mkfs_size(_log_bytes(ctx))}")
    size = _log_bytes(ctx)
    return Outcome(
        change=Change(f"logdev={path}", ["-l", ",".join(parts)],
                      f"{load[1]}: each fsync's log write waits behind data IO on the same "
                      f"disks; on {path} it goes to a faster device of its own, and the disks "
                      "keep the data writes", source=path),
        warnings=[lost_log_warning(path, size)])
