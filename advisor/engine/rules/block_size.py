"""A block size matching a drive's write unit, where the kernel mounts it."""

from __future__ import annotations

from pydantic import Field

from advisor.engine.context import Change, Context, Outcome, mkfs_size
from advisor.engine.registry import decider
from advisor.models.base import Model
from advisor.models.environment import parse_version
from advisor.models.workload import mount_target


class BlockSizeParams(Model):
    """When a block larger than 4 KiB is proposed."""

    large_blocks_since: str
    """First kernel that mounts blocks larger than its page size (large block size support)."""
    min_unit: int = Field(ge=8192)
    """Smallest physical write unit (queue/physical_block_size) worth matching."""
    max_block: int = Field(le=65536)
    """Largest block mkfs.xfs makes."""


def _target(ctx: Context) -> tuple[tuple[int, int] | None, str]:
    """The oldest kernel that must mount the filesystem (None: unknown), and who says so."""
    wanted = ctx.workload.must_mount_on_kernel
    if wanted is not None:
        return parse_version(wanted), f"{wanted} must mount it"
    if ctx.env.kernel:
        target = mount_target(ctx.env.kernel)
        return parse_version(target), f"kernel {ctx.env.kernel}"
    return None, "the kernel is unknown"


@decider(BlockSizeParams)
def block_size(ctx: Context, params: BlockSizeParams) -> Outcome:
    d = ctx.device
    page = ctx.env.page_size
    pages = f"{mkfs_size(page)} pages" if page else "an unknown page size"
    if d.dax.value:
        return Outcome(keep_reason=f"DAX maps file blocks straight into memory, a page at a "
                       f"time: the block size must be the page size ({pages}); the default")
    unit = d.physical_sector.value or 0
    if unit < params.min_unit:
        bigger = (f"; {pages} would allow blocks up to {mkfs_size(page)}, but nothing asks for "
                  "them, and every small file would take a whole block" if page and page > 4096
                  else "")
        return Outcome(keep_reason=f"the device writes in units of {unit or 'unknown'} bytes "
                       f"(queue/physical_block_size): nothing larger than the 4 KiB default to "
                       f"match{bigger}")
    block = min(unit, params.max_block)
    kernel, who = _target(ctx)
    since = parse_version(params.large_blocks_since) or (99, 0)
    if page and block <= page:
        why = f"{pages}: a block up to a page mounts on any kernel"
    elif kernel is not None and kernel >= since:
        why = (f"{who}, which mounts blocks larger than its {pages} (large block sizes, Linux "
               f"{params.large_blocks_since})")
    else:
        wanted = ctx.workload.must_mount_on_kernel
        page_text = f"{mkfs_size(page)} pages" if page else "page size not known"
        if wanted is not None:
            mounter = f"{wanted}, which must mount it ({page_text}), predates them"
        elif kernel is not None:
            mounter = f"kernel {ctx.env.kernel} ({page_text}) predates them"
        else:
            mounter = f"the kernel that will mount it is not known ({page_text})"
        return Outcome(keep_reason=f"the device writes in {mkfs_size(unit)} units, but blocks "
                       f"larger than a page mount only from Linux {params.large_blocks_since} "
                       f"(large block sizes) and {mounter}: 4 KiB blocks stay, and the drive "
                       "merges smaller writes itself (read-modify-write inside it)")
    return Outcome(change=Change(
        mkfs_size(block), ["-b", f"size={mkfs_size(block)}"], values={"size": block}, reason=
        f"the device writes in {mkfs_size(unit)} units (queue/physical_block_size: a QLC "
        f"drive's indirection unit): {mkfs_size(block)} blocks make every filesystem write a "
        f"whole unit, so the drive does no read-modify-write of its own; {why}. Every file "
        f"takes at least {mkfs_size(block)}"))
