"""The XFS superblock's identity, read straight from the device: which filesystem a validation
round made, so that the guard can tell it from anyone else's data."""

from __future__ import annotations

import mmap
import os

_XFS_MAGIC = b"XFSB"


def _read_head(device: str, size: int) -> bytes | None:
    """The first `size` (<= 4096) bytes of `device`, read with O_DIRECT (None: unreadable)."""
    try:
        fd = os.open(device, os.O_RDONLY | os.O_DIRECT | os.O_CLOEXEC)
    except OSError:
        return None
    buf = mmap.mmap(-1, 4096)
    try:
        if os.readv(fd, [buf]) < size:
            return None
        return bytes(buf[:size])
    except OSError:
        return None
    finally:
        os.close(fd)
        buf.close()


def read_ag_shift(device: str) -> int | None:
    """How far an inode number shifts right to give its allocation group: sb_agblklog +
    sb_inopblog (superblock bytes 124 and 123), None when no XFS is there."""
    data = _read_head(device, 128)
    if data is None or data[:4] != _XFS_MAGIC:
        return None
    return data[124] + data[123]


def read_xfs_uuid(device: str) -> str | None:
    """The UUID in the XFS superblock at the start of `device` (None: no XFS there). Read with
    O_DIRECT: the page cache may still hold what was there before mkfs."""
    data = _read_head(device, 48)
    return data[32:48].hex() if data is not None and data[:4] == _XFS_MAGIC else None
