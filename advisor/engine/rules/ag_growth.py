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
from advisor.models.units import human_size


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
        return Outcome(keep_reason="no growth planned (answer eventual_size or growth_factor)")
    if eventual <= ctx.size:
        return Outcome(keep_reason="the eventual size is not larger than the device")
    factor = eventual / ctx.size
    warnings = [f"XFS can grow but never shrink: size it for {human_size(eventual)} now only "
                "if that growth is real"]
    if factor > params.warn_growth_factor:
        warnings.append(f"growth of {factor:.1f}x is beyond the ~{params.warn_growth_factor:g}x "
                        "the guide recommends (2.1.2.2): AGs sized for the end are huge now, or "
                        "there are too many AGs later; consider a new filesystem at some point")
    if ctx.stripe():
        warnings.append("growing on RAID: add storage of the same geometry, and keep the device "
                        "size a whole number of AGs so that new AGs start stripe-aligned "
                        "(guide 2.1.2.2)")
    default_agsize = ctx.geometry.agsize_bytes
    grown = math.ceil(eventual / default_agsize)
    if grown <= params.max_agcount_when_grown or default_agsize >= params.max_ag_bytes - 4 * KiB:
        return Outcome(keep_reason=f"the default AGs ({human_size(default_agsize)}) make "
                       f"{grown} AGs at {human_size(eventual)}: within the few hundred the guide "
                       "allows", warnings=warnings)
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
    if stripe and agsize % (stripe[0] * stripe[1]) == 0:
        # AGs a multiple of the stripe width all start on the same disk (mkfs.xfs warns): one
        # stripe unit more moves each to the next disk; less only when more does not fit.
        grown_larger = agsize + stripe[0]
        fits = grown_larger <= min(params.max_ag_bytes, ctx.size - room)
        agsize = grown_larger if fits else agsize - stripe[0]
    if math.ceil(eventual / agsize) > params.max_agcount_when_grown:
        limit = (f"AGs cannot exceed {human_size(params.max_ag_bytes)}"
                 if needed > round_down(params.max_ag_bytes, align) else
                 f"{human_size(ctx.size)} now is too small for larger AGs")
        warnings.append(f"{human_size(eventual)} needs more than "
                        f"{params.max_agcount_when_grown} AGs: {limit}, so the largest possible "
                        "are used")
    return Outcome(change=Change(
        f"agsize={mkfs_size(agsize)}", ["-d", f"agsize={mkfs_size(agsize)}"],
        values={"agsize": agsize}, reason=
        f"growing {factor:.1f}x to {human_size(eventual)}: the default "
        f"{human_size(default_agsize)} AGs would become {grown} AGs; AG size cannot change after "
        f"mkfs, so {human_size(agsize)} AGs keep it to "
        f"{math.ceil(eventual / agsize)}"), warnings=warnings)
