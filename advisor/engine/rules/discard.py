"""Online discard or periodic fstrim (guide 2.2); on thin-provisioned storage, from the delete
rate."""

from __future__ import annotations

from pydantic import Field

from advisor.engine.context import Change, Context, Outcome
from advisor.engine.registry import decider
from advisor.models.base import Model
from advisor.models.units import human_size

FSTRIM = "systemctl enable --now fstrim.timer"


class DiscardParams(Model):
    """How much freed space thin storage may hold back before it is trimmed."""

    untrimmed_share: float = Field(gt=0, lt=1)
    """Share of the filesystem's size that may sit deleted but untrimmed (space the thin pool
    cannot give to others meanwhile)."""
    timer_days: int = Field(ge=1)
    """How often fstrim.timer runs by default (weekly)."""


@decider(DiscardParams)
def discard(ctx: Context, params: DiscardParams) -> Outcome:
    granularity = ctx.device.discard_granularity.value
    thin = ctx.device.thin.value
    if thin is None:
        if granularity == 0:
            return Outcome(keep_reason="the device does not support discard")
        return Outcome(keep_reason="online discard slows deletes; run fstrim periodically "
                       f"instead ({FSTRIM})")
    what = {"dm-thin": "an LVM thin volume", "lbpme": "a thin-provisioned LUN (LBPME)"}[thin]
    if granularity == 0 or ctx.device.discard_below.value:
        return Outcome(keep_reason=f"{what}, but the device takes no discards: freed space "
                       "never goes back to the pool, whatever is mounted (see the warnings)")
    deleted = ctx.workload.deleted_per_day
    if deleted is None:
        return Outcome(keep_reason=f"{what}: space goes back to the pool only when trimmed; "
                       f"the weekly fstrim.timer ({FSTRIM}) returns a week of deletes at once "
                       "(answer deleted_per_day to size it)")
    if deleted == 0:
        return Outcome(keep_reason=f"{what}, and nothing is deleted: fstrim.timer ({FSTRIM}) "
                       "is plenty")
    room = params.untrimmed_share * ctx.size
    days = room / deleted
    said = (f"{what}: {human_size(deleted)} deleted a day fills the {params.untrimmed_share:.0%}"
            f" of the filesystem ({human_size(room)}) allowed to sit untrimmed in {days:.1f} "
            "days")
    if days >= params.timer_days:
        return Outcome(keep_reason=f"{said}: the weekly fstrim.timer keeps up ({FSTRIM})")
    if days >= 1:
        return Outcome(keep_reason=f"{said}: run fstrim daily, not weekly ({FSTRIM}, then "
                       "`systemctl edit fstrim.timer`: [Timer] OnCalendar= (empty) and "
                       "OnCalendar=daily)")
    return Outcome(change=Change(
        "discard", ["discard"],
        f"{said}: even a daily fstrim falls behind, so the pool gets space back as files are "
        "deleted (online discard; it costs some delete speed, and the weekly fstrim.timer "
        "still catches what it misses)"))
