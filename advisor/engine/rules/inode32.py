"""inode32 only where 32-bit clients would otherwise get inode numbers they cannot take (2.2)."""

from __future__ import annotations

import math

from advisor.engine.context import Change, Context, Outcome
from advisor.engine.registry import NoParams, decider
from advisor.models.units import human_size

#: XFS_MAXINUMBER_32: the largest inode number 32-bit stat() and NFSv2/v3 clients can take.
MAX_INUMBER_32 = (1 << 32) - 1


def largest_inode_number(agcount: int, agblocks: int, block_size: int, inode_size: int) -> int:
    """The last possible inode number of a geometry, as the kernel computes it to decide whether
    inode32 changes anything (xfs_set_inode_alloc): AG number << (agblklog + inopblog) | the
    AG-relative number of the AG's last block. agblklog is the bits of agblocks - 1 (rounded up
    to a power of two), inopblog log2 of inodes per block."""
    agblklog = (agblocks - 1).bit_length()
    inopblog = (block_size // inode_size).bit_length() - 1
    return ((agcount - 1) << (agblklog + inopblog)) | ((agblocks - 1) << inopblog)


def inode32_ags(agblocks: int, block_size: int, inode_size: int) -> int:
    """How many AGs inode32 lets hold inodes: those whose last inode number fits in 32 bits."""
    agblklog = (agblocks - 1).bit_length()
    inopblog = (block_size // inode_size).bit_length() - 1
    last_agino = (agblocks - 1) << inopblog
    return (MAX_INUMBER_32 - last_agino) // (1 << (agblklog + inopblog)) + 1


@decider(NoParams)
def inode32(ctx: Context, params: NoParams) -> Outcome:
    if not ctx.workload.nfs_32bit_clients:
        return Outcome(keep_reason="no 32-bit NFS clients or applications declared")
    g = ctx.geometry
    agcount = g.agcount
    eventual = ctx.eventual_size
    grown = ""
    if eventual and eventual > ctx.size:
        agcount = max(agcount, math.ceil(eventual / g.agsize_bytes))
        grown = f" once grown to {human_size(eventual)}"
    largest = largest_inode_number(agcount, g.agsize_blocks, g.block_size, g.inode_size)
    geometry = (f"{agcount} AGs of {g.agsize_blocks} blocks, {g.inode_size}-byte inodes in "
                f"{g.block_size}-byte blocks")
    if largest <= MAX_INUMBER_32:
        return Outcome(keep_reason=f"the largest possible inode number{grown} is {largest:,} "
                       f"({geometry}): under 2^32, so every inode number fits in 32 bits and "
                       "inode32 would change nothing")
    allowed = inode32_ags(g.agsize_blocks, g.block_size, g.inode_size)
    return Outcome(
        change=Change("inode32", ["inode32"], values={"inode32": True}, reason=
                      f"32-bit clients, and the largest possible inode number{grown} is "
                      f"{largest:,} ({geometry}), over 2^32 - 1: inode32 keeps inode numbers "
                      "under 32 bits"),
        warnings=[f"inode32 costs performance: new inodes may only go in the first {allowed} "
                  f"AGs ({human_size(allowed * g.agsize_bytes)}), away from their data, and that "
                  "space can fill up (ENOSPC on create with free space elsewhere)"])
