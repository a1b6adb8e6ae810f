"""Is a device blank where filesystems and partition tables keep their data? Read, never written.

libblkid (and mkfs.xfs, which asks it) names what it finds a valid signature for; a damaged one is
invisible to it: an ext4 whose primary superblock was zeroed (its group descriptors and backup
superblocks intact, e2fsck -b recovers it all), an XFS whose sector 0 was zeroed (xfs_repair finds
the secondary superblocks), a GPT without its protective MBR. So the guard also looks at the bytes:
the first and the last MiB (boot sectors, partition tables and their backups, superblocks, RAID and
ZFS labels), the places ext2/3/4 keeps backup superblocks, and those where an XFS keeps a
secondary superblock at the start of each allocation group. The scratch device the advisor makes
itself is a new sparse file: zeros everywhere.
"""

from __future__ import annotations

import os

MIB = 1 << 20
#: ext2/3/4 superblock magic (s_magic, little-endian, at byte 56 of the superblock).
EXT_MAGIC = b"\x53\xef"
EXT_MAGIC_AT = 56
#: XFS superblock magic, at byte 0 of every allocation group.
XFS_MAGIC = b"XFSB"
#: XFS allocation group counts: mkfs.xfs divides the device's blocks by a power of two (4 on a
#: single disk, up to 32 on striped storage); -d agcount= asks for any count, small ones
#: usually.
XFS_AGCOUNTS = (*range(2, 17), 32, 64, 128, 256)
#: The AG size of a filesystem of 4 TiB or more: the largest AG, 1 TiB.
XFS_AGSIZES = (1 << 40,)


def _ext_backups(size: int) -> list[int]:
    """Byte offsets of every ext2/3/4 backup superblock a filesystem of any block size could
    have on a device of `size` bytes (sparse_super: groups 1 and the powers of 3, 5 and 7; the
    first groups only, where any of them would be)."""
    offsets: list[int] = []
    for block in (1024, 2048, 4096):
        group_bytes = 8 * block * block
        groups = {1}
        for base in (3, 5, 7):
            g = base
            while g * group_bytes < size:
                groups.add(g)
                g *= base
        first_data_block = 1 if block == 1024 else 0
        offsets += [(g * 8 * block + first_data_block) * block for g in sorted(groups)]
    return [o for o in offsets if o + 1024 <= size]


def _xfs_secondaries(size: int) -> list[int]:
    """Byte offsets where allocation groups 1, 2 and 3 would start, for the AG sizes mkfs.xfs
    could have chosen on `size` bytes."""
    blocks = size // 4096
    sizes = {(blocks // count) * 4096 for count in XFS_AGCOUNTS if blocks // count} | set(
        XFS_AGSIZES)
    return sorted({k * agsize for agsize in sizes for k in (1, 2, 3) if k * agsize + 512 <= size})


def _nonzero(data: bytes) -> int | None:
    """Index of the first non-zero byte, None when all are zero."""
    stripped = data.lstrip(b"\0")
    return len(data) - len(stripped) if stripped else None


def leftover_data(path: str, size: int) -> str | None:
    """Where the device at `path` holds data libblkid may not have named, in a few words; None
    when it is blank in every place looked at. OSError when it cannot be read."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        head = os.pread(fd, min(MIB, size), 0)
        at = _nonzero(head)
        if at is not None:
            return f"its first MiB is not empty (non-zero bytes from byte {at})"
        if size > MIB:
            tail_start = max(MIB, size - MIB)
            at = _nonzero(os.pread(fd, size - tail_start, tail_start))
            if at is not None:
                return (f"its last MiB is not empty (non-zero bytes at byte {tail_start + at}, "
                        "where a backup GPT, md or ZFS label lives)")
        for offset in _ext_backups(size):
            if os.pread(fd, 2, offset + EXT_MAGIC_AT) == EXT_MAGIC:
                return f"an ext2/3/4 backup superblock at byte {offset}"
        for offset in _xfs_secondaries(size):
            if os.pread(fd, 4, offset) == XFS_MAGIC:
                return f"an XFS secondary superblock at byte {offset}"
    finally:
        os.close(fd)
    return None
