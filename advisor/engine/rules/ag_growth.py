"""Allocation groups sized for the filesystem once grown (guide 2.1.2.2)."""

from __future__ import annotations

import math

from pydantic import Field

from advisor.engine.context import (
    Change,
    Context,
    GiB,
    KiB,
    MiB,
    Outcome,
    mkfs_size,
    round_down,
    round_up,
)
from advisor.engine.registry import decider
from advisor.models.base import Model
from advisor.models.units import human_size, parse_size


class AgGrowthParams(Model):
    """Limits for filesystems that will be grown."""

    max_agcount_when_grown: int = Field(ge=2)
    """Most AGs once grown, unless AGs are at their maximum size."""
    warn_growth_factor: float = Field(ge=1)
    """Growth beyond this factor gets a warning (the guide: roughly 10x)."""
    max_ag_bytes: int = Field(ge=16 * MiB)
    """Largest AG mkfs.xfs allows (1 TiB less one block)."""


#: xfsprogs' XFS_AG_MIN_BYTES: the smallest allocation group mkfs.xfs makes (16 MiB).
MIN_AG_BYTES = 16 * MiB
#: xfsprogs' XFS_MAX_LOG_BYTES: the largest internal log (2 GiB, a format limit).
MKFS_MAX_LOG_BYTES = 2 * GiB


@decider(AgGrowthParams)
def ag_growth(ctx: Context, params: AgGrowthParams) -> Outcome:
    eventual = ctx.eventual_size
    if eventual is None:
        return Outcome(keep_reason="no growth planned (answer eventual_size or growth_factor)",
                       applies=False)
    if eventual <= ctx.size:
        return Outcome(keep_reason="the eventual size is not larger than the device")
    factor = eventual / ctx.size
    warnings = [f"XFS can grow but never shrink: size it for {human_size(eventual)} now only "
                "if that growth is real"]
    if factor > params.warn_growth_factor:
        warnings.append(f"growth of {_times(factor)} is beyond the ~{params.warn_growth_factor:g}x "
                        "the guide recommends (2.1.2.2): AGs sized for the end are huge now, or "
                        "there are too many AGs later; consider a new filesystem at some point")
    if ctx.stripe():
        warnings.append("growing on RAID: add storage of the same geometry, and keep the device "
                        "size a whole number of AGs so that new AGs start stripe-aligned "
                        "(guide 2.1.2.2)")
    default_agsize = ctx.geometry.agsize_bytes
    grown = math.ceil(eventual / default_agsize)
    if grown <= params.max_agcount_when_grown or default_agsize >= params.max_ag_bytes - 4 * KiB:
        within = (": within the few hundred the guide allows"
                  if grown <= params.max_agcount_when_grown else
                  ": more than the guide's few hundred, but they are already as large as an "
                  "AG can be")
        return Outcome(keep_reason=f"the default AGs ({human_size(default_agsize)}) make "
                       f"{grown} AGs at {human_size(eventual)}{within}", warnings=warnings)
    stripe = ctx.stripe()
    align = math.lcm(ctx.geometry.block_size, stripe[0] if stripe else 1)
    needed = round_up(math.ceil(eventual / params.max_agcount_when_grown), align)
    agsize = min(needed, round_down(params.max_ag_bytes, align))
    # mkfs.xfs needs two AGs (two superblocks): it accepts `-d agsize=80g` on 100 GiB (80 + 20
    # GiB) and refuses an AG as large as the device. With two AGs the internal log sits in the
    # last one (AG agcount/2), so that one keeps room for the largest log mkfs.xfs makes, twice
    # over, or half the device when it is small.
    room = max(MIN_AG_BYTES, min(ctx.size // 2, 2 * MKFS_MAX_LOG_BYTES))
    agsize = min(agsize, round_down(ctx.size - room, align))
    # No runt last AG: xfs_growfs first extends the last AG to full size, so a short last AG
    # would stretch across the boundary of the old and the new storage (guide 2.1.2.2 asks for
    # AGs that each sit on one). The device is cut into whole AGs: the most that are each at
    # least `needed` (two at least), and never fewer than the largest AG allows; each rounded
    # down to the alignment.
    upper = min(round_down(params.max_ag_bytes, align), round_down(ctx.size - room, align))
    agcount = max(2, math.ceil(ctx.size / upper), ctx.size // needed)
    agsize = round_down(ctx.size // agcount, align)
    shift = ""
    if stripe and agsize % (stripe[0] * stripe[1]) == 0:
        # AGs a multiple of the stripe width all start on the same disk (mkfs.xfs warns): one
        # alignment step less (the stripe unit when it is whole blocks, as mkfs.xfs requires;
        # never a part of a block) moves each to another disk. One more never fits: agsize is
        # already the largest aligned AG of which agcount fit.
        agsize -= align
        shift = (f"{human_size(agsize + align)} AGs less {human_size(align)} ({agsize // KiB} "
                 "KiB, so that they do not all start on the same disk of the stripe)")
    tail = ctx.size - agcount * agsize
    if tail:
        warnings.append(
            f"{human_size(ctx.size)} is not a whole number of {_exact(agsize)} AGs: the "
            f"last {human_size(tail)} stay outside the filesystem (mkfs.xfs makes no AG that "
            f"small); a device of exactly {agcount * agsize} bytes ({agcount} AGs) wastes "
            "nothing. Grow it by whole AGs too, so that every AG sits on one storage")
    if math.ceil(eventual / agsize) > params.max_agcount_when_grown:
        warnings.append(_too_many(ctx.size, eventual, agsize, needed, align, params,
                                  shifted=bool(shift)))
    return Outcome(change=Change(
        f"agsize={mkfs_size(agsize)}", ["-d", f"agsize={mkfs_size(agsize)}"],
        values={"agsize": agsize}, reason=
        f"growing {_times(factor)} to {human_size(eventual)}: the default "
        f"{human_size(default_agsize)} AGs would become {grown} AGs; AG size cannot change after "
        f"mkfs, so {shift or human_size(agsize) + ' AGs'} keep it to "
        f"{math.ceil(eventual / agsize)}; "
        f"{agcount} of them fill the {human_size(ctx.size)} device, so no short last AG "
        "stretches across the old and the new storage when it grows (guide 2.1.2.2)"),
        warnings=warnings)


def _exact(n: int) -> str:
    """A size for reading, with its exact KiB when rounding makes it look whole (80 GiB less
    64 KiB reads as 80 GiB)."""
    rounded = human_size(n)
    return rounded if "." in rounded or parse_size(rounded) == n else f"{rounded} ({n // KiB} KiB)"


def _too_many(size: int, eventual: int, agsize: int, needed: int, align: int,
              params: AgGrowthParams, *, shifted: bool) -> str:
    """Why the grown filesystem still has more AGs than the guide's few hundred."""
    most = params.max_agcount_when_grown
    head = f"{human_size(eventual)} needs more than {most} AGs: "
    if shifted and math.ceil(eventual / (agsize + align)) <= most:
        return (head + f"{human_size(agsize + align)} AGs would make "
                f"{math.ceil(eventual / (agsize + align))}, but they would all start on the same "
                f"disk of the stripe, and {human_size(align)} less makes "
                f"{math.ceil(eventual / agsize)}")
    largest = min(needed, round_down(params.max_ag_bytes, align))
    limit = (f"AGs cannot exceed {human_size(params.max_ag_bytes)}"
             if needed > round_down(params.max_ag_bytes, align) else
             f"{human_size(size)} now holds no whole number of larger AGs")
    # Only when two such AGs do not fit: then they are also larger than the ones used (at least
    # two of those fit).
    whole = (f"; a device of exactly {2 * largest} bytes (two {human_size(largest)} AGs) "
             f"would keep it to {math.ceil(eventual / largest)}" if 2 * largest > size else "")
    return head + f"{limit}, so the largest that fill it whole are used ({_exact(agsize)}){whole}"


def _times(factor: float) -> str:
    """A growth factor as people write it: 2.5x, 4x, 20,480x."""
    return f"{factor:,.1f}".removesuffix(".0") + "x"
