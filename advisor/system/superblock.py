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


#: Bytes read at the start of every allocation group: the superblock, AGF, AGI and AGFL sectors
#: (4 sectors of up to 4 KiB) and, with small sectors, the free-space and inode btree roots.
_AG_HEAD = 16384
_CHUNK = 4 << 20


def xfs_fingerprint(device: str) -> str | None:
    """A digest of everything an XFS changes when it is mounted read-write or written: the
    superblock and the headers of every allocation group (free block and inode counts, btree
    roots) and the whole internal log (every mount writes records there, every clean unmount an
    unmount record). Equal digests: nothing mounted it read-write or wrote to it in between.
    None when no XFS is there or it cannot be read. Read with O_DIRECT, as read_xfs_uuid."""
    import hashlib
    import struct

    head = _read_head(device, 512)
    if head is None or head[:4] != _XFS_MAGIC:
        return None
    blocksize, = struct.unpack_from(">I", head, 4)
    logstart, = struct.unpack_from(">Q", head, 48)
    agblocks, agcount, _rbmblocks, logblocks = struct.unpack_from(">IIII", head, 84)
    agblklog = head[124]
    if not (blocksize and agblocks and agcount and agcount < 1 << 20):
        return None
    digest = hashlib.sha256()
    ranges = [(ag * agblocks * blocksize, _AG_HEAD) for ag in range(agcount)]
    if logstart:  # an internal log: AG number and block in it, packed as an fsblock number
        agno, agbno = logstart >> agblklog, logstart & ((1 << agblklog) - 1)
        ranges.append(((agno * agblocks + agbno) * blocksize, logblocks * blocksize))
    try:
        fd = os.open(device, os.O_RDONLY | os.O_DIRECT | os.O_CLOEXEC)
    except OSError:
        return None
    buf = mmap.mmap(-1, _CHUNK)
    try:
        for start, length in ranges:
            done = 0
            while done < length:
                want = min(_CHUNK, length - done)
                got = os.preadv(fd, [memoryview(buf)[:want]], start + done)
                if got <= 0:
                    return None
                digest.update(buf[:got])
                done += got
    except OSError:
        return None
    finally:
        os.close(fd)
        buf.close()
    return digest.hexdigest()
