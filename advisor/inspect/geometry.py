"""The stripe geometry mkfs.xfs (xfsprogs 6.1) detects on its own, and why it sometimes ignores it.

mkfs.xfs reads minimum_io_size as the stripe unit and optimal_io_size as the stripe width (through
libblkid, which reads the same queue limits sysfs shows). It drops them when either equals the
physical sector size, when only one is non-zero, when the width is not a multiple of the unit, and
for filesystems under 1 GiB.
"""

from __future__ import annotations

from advisor.models.device import StripeGeometry, reports_nothing

#: mkfs.xfs ignores device geometry for filesystems smaller than this.
MIN_FS_FOR_GEOMETRY = 1 << 30


def mkfs_detected_stripe(
    *,
    min_io: int | None,
    opt_io: int | None,
    physical_sector: int | None,
    logical_sector: int | None,
    size_bytes: int | None,
    source: str,
) -> StripeGeometry:
    """The geometry mkfs.xfs 6.1 would take from a device reporting these limits (pure)."""
    if reports_nothing(min_io, opt_io, logical_sector, physical_sector):
        return StripeGeometry(source="none")
    # here: a scan of plain disks never formats a size, and advisor.models.units costs ~9 M
    # instructions to import
    from advisor.models.units import format_size

    unit, width = min_io or 0, opt_io or 0
    seen = f"min io {format_size(unit)}, opt io {format_size(width)}" if width else \
        f"min io {format_size(unit)}, no opt io"
    reason: str | None = None
    if physical_sector and physical_sector in (unit, width):
        reason = f"{seen}: one equals the physical sector size ({physical_sector} B)"
    elif not unit or not width:
        reason = f"{seen}: only one of the two is reported"
    elif width % unit:
        reason = f"{seen}: the width is not a multiple of the unit"
    elif size_bytes is not None and size_bytes < MIN_FS_FOR_GEOMETRY:
        reason = f"{seen}: device under 1 GiB, mkfs.xfs ignores geometry there"
    if reason is not None:
        return StripeGeometry(sunit_bytes=unit or None, swidth_bytes=width or None,
                              data_disks=width // unit if unit and width and not width % unit
                              else None, source=source, used_by_mkfs=False, ignored_reason=reason)
    return StripeGeometry(sunit_bytes=unit, swidth_bytes=width, data_disks=width // unit,
                          source=source, used_by_mkfs=True)


def md_stripe(chunk_bytes: int | None, data_disks: int | None) -> tuple[int, int] | None:
    """(stripe unit, stripe width) an md array implies, or None (raid1, or unknown facts)."""
    if not chunk_bytes or not data_disks or data_disks < 2:
        return None
    return chunk_bytes, chunk_bytes * data_disks


def with_origin(stripe: StripeGeometry, origin: str) -> StripeGeometry:
    """The same geometry, naming the device it really comes from (an md array under a dm volume)."""
    return stripe.model_copy(update={"source": origin})


def hidden_below(md_geometry: tuple[int, int], origin: str, through: str) -> StripeGeometry:
    """An md array's geometry that the dm device above it does not report: mkfs.xfs will not see
    it, so it has to be given with -d su=,sw=."""
    unit, width = md_geometry
    return StripeGeometry(
        sunit_bytes=unit, swidth_bytes=width, data_disks=width // unit, source=origin,
        used_by_mkfs=False,
        ignored_reason=f"{through} does not report the geometry of {origin}: pass -d su=,sw=",
    )
