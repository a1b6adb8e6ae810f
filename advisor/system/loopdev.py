"""What a loop device is bound to, asked of the kernel (LOOP_GET_STATUS64), not read from a path.

sysfs's `loop/backing_file` is a path string: it goes stale when the file is renamed, says
"(deleted)" when it is unlinked, and cannot tell two files of the same name apart. The ioctl gives
the backing file's identity (st_dev, st_ino, st_rdev) and the offset and size limit, so the guard
can follow a loop device to what really holds its data, and a run can tell whether its device was
re-bound to another file behind its back.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import struct
from dataclasses import dataclass

#: linux/loop.h
LOOP_GET_STATUS64 = 0x4C05
LO_FLAGS_READ_ONLY = 1
LO_FLAGS_AUTOCLEAR = 4
LO_FLAGS_PARTSCAN = 8
LO_FLAGS_DIRECT_IO = 16
LO_NAME_SIZE = 64
#: struct loop_info64: 5 x u64, 4 x u32, file name, crypt name, key (32), 2 x u64 init.
_INFO64 = struct.Struct(f"=5Q4I{LO_NAME_SIZE}s{LO_NAME_SIZE}s32s2Q")


@dataclass(frozen=True)
class LoopStatus:
    """One loop device's binding, as the kernel reports it."""

    backing_dev: int
    """st_dev of the backing file: the filesystem (or, for a block device, devtmpfs) holding it."""
    backing_ino: int
    """st_ino of the backing file."""
    backing_rdev: int
    """st_rdev of the backing file: non-zero when the loop device sits on another block device."""
    offset: int
    sizelimit: int
    flags: int
    file_name: str
    """The backing file's path as given at attach time (informational: paths go stale). The
    kernel's status keeps its first 63 bytes; a longer one is sysfs's loop/backing_file, or
    those bytes and "…" when that cannot be read."""

    @property
    def on_block_device(self) -> bool:
        return self.backing_rdev != 0

    @property
    def autoclear(self) -> bool:
        return bool(self.flags & LO_FLAGS_AUTOCLEAR)


def loop_status_fd(fd: int) -> LoopStatus | None:
    """The binding of the loop device open on `fd`; None when it is not bound (ENXIO) or `fd`
    is not a loop device."""
    buf = bytearray(_INFO64.size)
    try:
        fcntl.ioctl(fd, LOOP_GET_STATUS64, buf)
    except OSError as err:
        if err.errno in (errno.ENXIO, errno.ENOTTY, errno.EINVAL):
            return None
        raise
    dev, ino, rdev, offset, sizelimit, _number, _etype, _ksize, flags, name, *_ = \
        _INFO64.unpack(bytes(buf))
    raw = name.split(b"\0", 1)[0]
    file_name = raw.decode("utf-8", "replace")
    if len(raw) >= LO_NAME_SIZE - 1:  # all the status holds: the path may go on
        file_name = _full_name(fd, raw) or file_name + "…"
    return LoopStatus(backing_dev=dev, backing_ino=ino, backing_rdev=rdev, offset=offset,
                      sizelimit=sizelimit, flags=flags, file_name=file_name)


def _full_name(fd: int, start: bytes) -> str | None:
    """The backing file's whole path as sysfs gives it for the loop device open on `fd`, when it
    begins with what the status gave (`start`); None otherwise."""
    number = os.fstat(fd).st_rdev
    try:
        with open(f"/sys/dev/block/{dev_name(number)}/loop/backing_file", "rb") as f:
            path = f.read(1 << 16).rstrip(b"\n")
    except OSError:
        return None
    return path.decode("utf-8", "replace") if path.startswith(start) else None


def loop_status(path: str) -> LoopStatus | None:
    """The binding of the loop device at `path` (opened read-only, without O_EXCL: asking never
    gets in anybody's way); None when it is not a bound loop device."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as err:
        if err.errno in (errno.ENXIO, errno.ENOENT, errno.ENODEV):
            return None
        raise
    try:
        if not stat.S_ISBLK(os.fstat(fd).st_mode):
            return None
        return loop_status_fd(fd)
    finally:
        os.close(fd)


def dev_name(number: int) -> str:
    """"MAJ:MIN" of a device number, as sysfs's `dev` files spell it."""
    return f"{os.major(number)}:{os.minor(number)}"
