"""No reflink on persistent memory mounted with DAX."""

from __future__ import annotations

from advisor.engine.context import Change, Context, Outcome
from advisor.engine.registry import NoParams, decider
from advisor.engine.rules.dax_alignment import not_dax


@decider(NoParams)
def dax_reflink(ctx: Context, params: NoParams) -> Outcome:
    why = not_dax(ctx)
    if why:
        return Outcome(keep_reason=why, applies=False)
    return Outcome(change=Change(
        "reflink=0", ["-m", "reflink=0"], values={"reflink": False}, reason=
        "DAX writes go straight to the media, with no page cache to copy shared blocks through: "
        "kernels before 6.0 refuse to mount a reflink filesystem with DAX ('DAX and reflink "
        "cannot be used together!'), and later ones mark fsdax with reflink experimental"))
