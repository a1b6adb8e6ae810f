"""Online discard or periodic fstrim (guide 2.2)."""

from __future__ import annotations

from advisor.engine.context import Context, Outcome
from advisor.engine.registry import NoParams, decider


@decider(NoParams)
def discard(ctx: Context, params: NoParams) -> Outcome:
    granularity = ctx.device.discard_granularity.value
    if granularity == 0:
        return Outcome(keep_reason="the device does not support discard")
    return Outcome(keep_reason="online discard slows deletes; run fstrim periodically instead "
                   "(systemctl enable --now fstrim.timer)")
