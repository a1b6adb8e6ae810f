"""The inode size that keeps the answered extended attributes inline (guide 2.1.3)."""

from __future__ import annotations

import math

from pydantic import Field

from advisor.engine.context import Change, Context, Outcome
from advisor.engine.registry import decider
from advisor.models.base import Model


class InodeParams(Model):
    """The on-disk format that decides how many attribute bytes stay in the inode, and the
    assumptions the rule makes where the answers are silent."""

    inode_sizes: list[int] = Field(min_length=1)
    """Inode sizes the rule may choose, smallest first (only those up to half a block exist)."""
    inode_core_bytes: int = Field(ge=1)
    """Bytes of the V5 (CRC) inode core before the literal area (struct xfs_dinode: 176)."""
    v4_inode_core_bytes: int = Field(ge=1)
    """The same for V4 inodes (crc=0, older xfsprogs: 100)."""
    min_data_fork_bytes: int = Field(ge=0)
    """Room the data fork always keeps: a bmap btree root of 3 records, 4 + 3 x 16 bytes rounded
    up to 8 (xfs_attr_shortform_bytesfit's minforkoff: 56)."""
    fork_header_bytes: int = Field(ge=0)
    """Header of the inline (shortform) attribute fork: total size, count, padding (4)."""
    entry_overhead_bytes: int = Field(ge=0)
    """Per attribute: name length, value length, flags (3)."""
    assumed_bytes_per_attribute: int = Field(ge=1)
    """When xattrs_per_file is not answered: assume one attribute per this many bytes of
    name+value (rounded up). Small on purpose: more attributes mean more overhead, so the count
    errs high (and the reason says how many attributes each inode size would take)."""
    headroom_percent: int = Field(ge=0, le=50)
    """Share of the inline space left free for attributes that grow or are added later."""
    max_inline_value: int
    """Values longer than this never go inline (254 bytes: the length is one byte and 255 is
    reserved)."""


def inline_capacity(inode_size: int, v5: bool, params: InodeParams) -> int:
    """Bytes the inline attribute fork can take in an inode of this size (header and entries
    included): the literal area less the data fork's minimum, as the kernel computes it."""
    core = params.inode_core_bytes if v5 else params.v4_inode_core_bytes
    return inode_size - core - params.min_data_fork_bytes


def assumed_attributes(name_value_bytes: int, params: InodeParams) -> int:
    """How many attributes `name_value_bytes` are taken to be (no answer gives the count)."""
    return max(1, math.ceil(name_value_bytes / params.assumed_bytes_per_attribute))


def fork_bytes(name_value_bytes: int, attributes: int, params: InodeParams) -> int:
    """Bytes an inline attribute fork needs for these names and values."""
    return (params.fork_header_bytes + name_value_bytes
            + attributes * params.entry_overhead_bytes)


def usable_capacity(capacity: int, params: InodeParams) -> int:
    """The inline capacity less the headroom the rule keeps."""
    return capacity * (100 - params.headroom_percent) // 100


def most_attributes(name_value_bytes: int, room: int, params: InodeParams) -> int:
    """The most attributes sharing `name_value_bytes` that fit in `room` bytes of fork (0: not
    even one)."""
    spare = room - params.fork_header_bytes - name_value_bytes
    return max(0, spare // params.entry_overhead_bytes)


def _range(need: int, sizes: list[int], v5: bool, params: InodeParams) -> str:
    """How many attributes of `need` bytes in all each inode size keeps inline (with the
    headroom), for a reason that has no count to go on."""
    said = []
    for size in sizes:
        most = min(most_attributes(need, usable_capacity(inline_capacity(size, v5, params),
                                                         params), params), need)
        said.append(f"a {size}-byte inode " + (
            f"keeps them inline as up to {most:,} attribute{'s' if most != 1 else ''}" if most
            else "cannot keep them inline"))
    return ", ".join(said)


@decider(InodeParams)
def inode_size(ctx: Context, params: InodeParams) -> Outcome:
    w = ctx.workload
    warnings: list[str] = []
    if w.largest_xattr_value is not None and w.largest_xattr_value > params.max_inline_value:
        warnings.append(f"an xattr value of {w.largest_xattr_value} bytes is over "
                        f"{params.max_inline_value}: that inode's attributes all go to a separate "
                        "block whatever the inode size")
    if w.xattr_bytes_per_file is None and w.xattrs_per_file:
        return Outcome(keep_reason=f"{w.xattrs_per_file} attributes per file are answered, but "
                       "not their size (xattr_bytes_per_file)", warnings=warnings)
    if w.xattr_bytes_per_file is None or w.xattr_bytes_per_file == 0:
        return Outcome(keep_reason="no extended attributes declared", warnings=warnings)
    if warnings:
        return Outcome(keep_reason="values too large to go inline: a larger inode would not "
                       "help", warnings=warnings)
    need = w.xattr_bytes_per_file
    v5 = ctx.geometry.features.get("crc", 1) == 1
    default = ctx.geometry.inode_size
    sizes = sorted({default, *params.inode_sizes})
    sizes = [s for s in sizes if default <= s <= ctx.geometry.block_size // 2]
    if w.xattrs_per_file is not None:
        count = w.xattrs_per_file
        taken = f"in {count} attribute{'s' if count != 1 else ''} (xattrs_per_file)"
    else:
        count = assumed_attributes(need, params)
        taken = (f"taken as {count} attribute{'s' if count > 1 else ''} (xattrs_per_file is not "
                 f"answered: one per {params.assumed_bytes_per_attribute} B assumed; with the "
                 f"headroom below, {_range(need, sizes, v5, params)})")
    want = fork_bytes(need, count, params)
    fits = [s for s in sizes if usable_capacity(inline_capacity(s, v5, params), params) >= want]
    why = (f"{need} B of attribute names and values per file, {taken}, need "
           f"{params.fork_header_bytes} + {need} + {count} x {params.entry_overhead_bytes} = "
           f"{want} B of inline attribute fork")
    held = ", ".join(f"a {s}-byte inode holds {inline_capacity(s, v5, params)} B" for s in sizes)
    core = params.inode_core_bytes if v5 else params.v4_inode_core_bytes
    rule_of = (f"{held} (inode size - {core} B core - {params.min_data_fork_bytes} B kept for "
               "the data fork); "
               f"{params.headroom_percent}% is kept free for attributes that grow")
    if not fits:
        warnings.append(f"{why}: more than any inode size holds inline ({rule_of}): attributes "
                        "will live in separate blocks")
        return Outcome(keep_reason="no inode size holds them inline", warnings=warnings)
    best = fits[0]
    if best <= default:
        return Outcome(keep_reason=f"{why}; {rule_of}: they fit inline in the default "
                       f"{default}-byte inode")
    return Outcome(change=Change(str(best), ["-i", f"size={best}"], values={"size": best}, reason=
                                 f"{why}; {rule_of}: {best}-byte inodes keep them inline (up to "
                                 "10x faster than an attribute block)"))
