"""Copy-on-write extent size hint for reflinked files written in place."""

from __future__ import annotations

from pydantic import Field

from advisor.engine.allocation import hint_bytes, hint_outcome
from advisor.engine.context import Context, Outcome
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
        return ("reflink is off for persistent memory mounted with DAX" if
                ctx.device.dax.value and not ctx.workload.must_mount_on_kernel else
                "the feature set the target kernel needs has reflink off")
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
        chosen = ctx.chosen.get("-m features")
        by = f" ({chosen.value})" if chosen else ""
        return Outcome(keep_reason=f"{off}: there is no copy-on-write to hint", warnings=[
            f"reflink clones are wanted (reflink_clones), but the filesystem will have no "
            f"reflink: {off}{by}. `cp --reflink=always` and clone ioctls fail on it "
            "(EOPNOTSUPP) and copies take full space. The choice: " + (
                "do without clones, or keep reflink and DAX per file only (a site rule that "
                "keeps reflink: DAX with reflink is refused before Linux 6.0 and experimental "
                "after)" if "DAX" in off else
                "a newer kernel that must mount it (must_mount_on_kernel), or do without "
                "clones")])
    hint = hint_bytes(ctx, params.hint)
    return hint_outcome(ctx, "cowextsize", hint, lambda blocks: (
        f"reflink clones written in place (reflink_clones): each write into a shared block "
        f"copies it, into copy-on-write extents of the hint's size; a {format_size(hint)} hint "
        f"({blocks} blocks, the kernel's own is 32) keeps clones rewritten in runs, several at "
        "once, in extents that large instead of 128 KiB pieces (scattered single-block writes "
        "make one extent each either way)"))
