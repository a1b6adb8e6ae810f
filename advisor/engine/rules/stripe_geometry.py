"""RAID stripe geometry: detected, hidden below dm, or answered (guide 2.1.4)."""

from __future__ import annotations

from advisor.engine.context import Change, Context, Outcome, mkfs_size
from advisor.engine.registry import NoParams, decider
from advisor.models.device import stripe_hidden_below


@decider(NoParams)
def stripe_geometry(ctx: Context, params: NoParams) -> Outcome:
    s = ctx.workload.storage
    g = ctx.device.stripe
    detected = (g.sunit_bytes, g.data_disks) if g.used_by_mkfs and g.sunit_bytes else None
    if s.raid_stripe_unit and s.raid_data_disks:
        return _answered_stripe(ctx, s.raid_stripe_unit, s.raid_data_disks, detected)
    if detected:
        return Outcome(keep_reason=f"mkfs.xfs detects su={mkfs_size(g.sunit_bytes or 0)}, "
                       f"sw={g.data_disks} from {g.source} on its own")
    if stripe_hidden_below(ctx.device) and (g.data_disks or 0) > 1:
        su, sw = g.sunit_bytes or 0, g.data_disks or 0
        return Outcome(change=Change(
            f"su={mkfs_size(su)},sw={sw}", ["-d", f"su={mkfs_size(su)},sw={sw}"],
            values={"su": su, "sw": sw}, reason=
            f"{ctx.device.display_name} does not pass up the geometry of {g.source}, so "
            f"mkfs.xfs would see no stripe: su={mkfs_size(su)},sw={sw} from the array aligns "
            "allocation to its full stripes", source=g.source))
    if g.sunit_bytes and g.ignored_reason:
        return Outcome(keep_reason=f"the device reports a stripe that mkfs.xfs ignores: "
                       f"{g.ignored_reason}")
    return Outcome(keep_reason="no stripe geometry reported or answered (hardware RAID that "
                   "hides it: answer raid_stripe_unit and raid_data_disks)")


def _answered_stripe(ctx: Context, su: int, sw: int,
                     detected: tuple[int | None, int | None] | None) -> Outcome:
    """The stripe the RAID answers give, unless it cannot be one."""
    g = ctx.device.stripe
    if sw < 2:
        return Outcome(keep_reason="raid_data_disks = 1: one data disk is no stripe",
                       warnings=["raid_data_disks = 1 describes a mirror (RAID1) or a single "
                                 "disk, not a stripe: no -d su=,sw= is given, so mkfs.xfs does "
                                 "not pad the log or align allocation for striping. For RAID10 "
                                 "the data disks are the disks / 2 (8 disks: 4); RAID5 n-1, "
                                 "RAID6 n-2"])
    if su % ctx.geometry.block_size or su % ctx.geometry.sector_size:
        return Outcome(keep_reason="the RAID answers cannot be used",
                       warnings=[f"raid_stripe_unit {su} is not a multiple of the "
                                 f"{ctx.geometry.block_size}-byte block: ignored"])
    if detected == (su, sw):
        return Outcome(keep_reason=f"mkfs.xfs detects the same geometry (su={mkfs_size(su)},"
                       f" sw={sw}) from {g.source}")
    warnings = []
    known = detected or ((g.sunit_bytes, g.data_disks) if stripe_hidden_below(ctx.device)
                         else None)
    if known:
        warnings.append(f"the answers (su={mkfs_size(su)}, sw={sw}) disagree with what "
                        f"{g.source} reports (su={mkfs_size(known[0] or 0)}, "
                        f"sw={known[1]}): the answers are used; check the RAID set-up")
    return Outcome(change=Change(
        f"su={mkfs_size(su)},sw={sw}", ["-d", f"su={mkfs_size(su)},sw={sw}"],
        values={"su": su, "sw": sw}, reason=
        f"hardware RAID geometry from the answers ({sw} data disks of "
        f"{mkfs_size(su)}): aligns allocation to full stripes", source="answers"),
        warnings=warnings)
