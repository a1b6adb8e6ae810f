"""What sits between the filesystem and a striped array must start on a full stripe."""

from __future__ import annotations

from advisor.engine.context import Context, Outcome, mkfs_size, round_up
from advisor.engine.registry import NoParams, decider


@decider(NoParams)
def stack_alignment(ctx: Context, params: NoParams) -> Outcome:
    stripe = ctx.stripe()
    if stripe is None:
        return Outcome()
    unit, disks, source = stripe
    width = unit * disks
    stripe_text = (f"the full stripe width {mkfs_size(width)} ({mkfs_size(unit)} x {disks}, "
                   f"from {source})")
    d = ctx.device
    out: list[str] = []
    start = d.partition_start.value
    if d.kind == "part" and start is not None and start % width:
        aligned = round_up(start, width)
        out.append(
            f"{d.name} starts at byte {start} (sector {start // 512}), not a multiple of "
            f"{stripe_text}: XFS aligns its writes to the stripe from the start of the "
            f"filesystem, so every full-stripe write straddles two stripes on the disks "
            f"(read-modify-write on parity RAID). Re-create the partition starting at sector "
            f"{aligned // 512} ({mkfs_size(aligned)}), e.g. parted: mkpart NAME {aligned // 512}s "
            "END")
    elif d.kind == "dm" and d.dm_kind == "lvm":
        out.append(
            f"{d.display_name} is an LVM volume on striped storage: sysfs does not show where "
            f"its extents start. Check that `pvs -o +pe_start --units b` is a multiple of "
            f"{stripe_text}, and the extent size (`vgs -o +vg_extent_size --units b`) too; "
            f"otherwise re-create the physical volume with `pvcreate --dataalignment "
            f"{width // 1024}k` (and `vgcreate -s` a multiple of it)")
    elif d.kind == "dm" and d.dm_kind == "crypt":
        out.append(
            f"{d.display_name} is dm-crypt on striped storage: its data starts after the LUKS "
            f"header (`cryptsetup luksDump`: the segment's offset), which must be a multiple of "
            f"{stripe_text}; otherwise re-create it with `cryptsetup luksFormat "
            f"--align-payload={width // 512}` (512-byte sectors)")
    return Outcome(warnings=out)
