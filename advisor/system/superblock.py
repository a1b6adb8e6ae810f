"""The XFS superblock's identity, read straight from the device: which filesystem a validation
round made, so that the guard can tell it from anyone else's data."""

from __future__ import annotations

import mmap
import os

_XFS_MAGIC = b"XFSB"


def read_xfs_uuid(device: str) -> str | None:
    """The UUID in the XFS superblock at the start of `device` (None: no XFS there). Read with
    O_DIRECT: the page cache may still hold what was there before mkfs."""
    try:
        fd = os.open(device, os.O_RDONLY | os.O_DIRECT | os.O_CLOEXEC)
    except OSError:
        return None
    buf = mmap.mmap(-1, 4096)
    try:
        if os.readv(fd, [buf]) < 48:
            return None
        data = bytes(buf[:48])
    except OSError:
        return None
    finally:
        os.close(fd)
        buf.close()
    return data[32:48].hex() if data[:4] == _XFS_MAGIC else None
