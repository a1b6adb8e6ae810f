"""dax=always on persistent memory laid out for it."""

from __future__ import annotations

from advisor.engine.context import Change, Context, Outcome
from advisor.engine.registry import NoParams, decider
from advisor.engine.rules.dax_alignment import not_dax
from advisor.models.environment import parse_version


@decider(NoParams)
def dax_mount(ctx: Context, params: NoParams) -> Outcome:
    why = not_dax(ctx)
    if why:
        return Outcome(keep_reason=why, applies=False)
    features = ctx.chosen.get("-m features")
    if ctx.decided("-m features", "reflink") in (None, True) or features is None:
        by = f" ({features.value} wins there)" if features else ""
        return Outcome(keep_reason="reflink stays on" + by + ": DAX with reflink is refused "
                       "before Linux 6.0 and experimental after, so no dax=always")
    wanted = ctx.must_mount_version()
    if wanted is not None and wanted < (5, 8):
        name = ctx.workload.must_mount_on_kernel or ""
        kernel = "kernel " + name if parse_version(name) else \
            f"{name} (kernel {wanted[0]}.{wanted[1]})"
        return Outcome(change=Change(
            "dax", ["dax"],
            f"{kernel} must mount it, and knows only the old "
            "`dax` option (dax=always came with Linux 5.8, which still takes `dax` as its "
            "alias): every file's reads and writes go straight to the persistent memory"))
    return Outcome(change=Change(
        "dax=always", ["dax=always"],
        "every file's reads and writes go straight to the persistent memory, bypassing the "
        "page cache (dax=always, Linux 5.8+; without it, only files with the DAX flag do)"))
