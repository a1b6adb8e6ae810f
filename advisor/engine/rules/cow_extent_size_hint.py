"""Copy-on-write extent size hint for reflinked files written in place (issue 15)."""

from __future__ import annotations

from pydantic import Field

from advisor.engine.allocation import hint_bytes
from advisor.engine.context import Change, Context, Outcome
from advisor.engine.registry import decider
from advisor.models.base import Model
from advisor.models.units import ByteSize, format_size


class CowExtentSizeHintParams(Model):
    """The copy-on-write hint for cloned files."""

    hint: ByteSize = Field(gt=0)
    """The hint (the kernel's own is 32 blocks); rounded like the extent size hint."""


def reflink_off(ctx: Context) -> str | None:
    """Why the filesystem will have no reflink, or None when it will."""
    chosen = ctx.chosen.get("-m features")
    if chosen and any("reflink=0" in o for o in chosen.options):
        return "the feature set the target kernel needs has reflink off"
    if chosen is None and ctx.geometry.features.get("reflink") == 0:
        return "this mkfs.xfs makes no reflink by default"
    return None


@decider(CowExtentSizeHintParams)
def cow_extent_size_hint(ctx: Context, params: CowExtentSizeHintParams) -> Outcome:
    w = ctx.workload
    if not w.reflink_clones:
        return Outcome(keep_reason="no reflink clones written in place (reflink_clones "
                       + ("= false)" if w.reflink_clones is False else "not answered)"))
    off = reflink_off(ctx)
    if off:
        return Outcome(keep_reason=f"{off}: there is no copy-on-write to hint")
    if w.write_pattern not in ("random", "mixed"):
        return Outcome(keep_reason="clones are not written in place (write_pattern is "
                       f"{w.write_pattern or 'not answered'}): copy-on-write stays rare")
    hint = hint_bytes(ctx, params.hint)
    blocks = hint // ctx.geometry.block_size
    return Outcome(change=Change(
        f"cowextsize={blocks}", ["-d", f"cowextsize={blocks}"],
        f"reflinked files written in place (reflink_clones, write_pattern = {w.write_pattern})"
        f": each write into a shared extent copies it; a {format_size(hint)} copy-on-write hint "
        f"({blocks} blocks, the kernel's own is 32) allocates the new copies in extents that "
        "large, so a clone written randomly does not end up in thousands of small pieces"))
