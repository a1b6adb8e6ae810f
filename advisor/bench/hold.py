"""Holding the scratch device from the guard's check to the end of the run.

A guard verdict is only true while nothing changes; a person typing the device's name can take a
minute. So the run keeps two file descriptors on the device:

- a plain one, for the whole run: the device node cannot be re-bound under it (the kernel defers
  `losetup -d` of an open loop device until the last close, and refuses LOOP_SET_FD on a bound
  one), and the device number and loop binding it was checked with can be compared at any time;
- an exclusive one (O_EXCL), whenever the run itself does not need the device: while it is held
  the kernel refuses mounts, md/LVM/dm assembly and other exclusive openers (mkfs, mount of the
  block device). mkfs.xfs and mount claim the device exclusively themselves, so the run lets go of
  its claim just before each mkfs and takes it back after each umount.

`verify()` proves the node still names the device that was checked and confirmed: same device
number and size, and for a loop device the same backing file (st_dev, st_ino) at the same offset.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass

from advisor.errors import DeviceProblem
from advisor.system.loopdev import LoopStatus, dev_name, loop_status_fd

#: linux/fs.h: BLKGETSIZE64, the device size in bytes.
BLKGETSIZE64 = 0x80081272


@dataclass(frozen=True)
class Identity:
    """What the device was when it was checked."""

    rdev: int
    size: int
    loop: LoopStatus | None

    def describe(self) -> str:
        text = f"device {dev_name(self.rdev)}, {self.size} bytes"
        if self.loop is not None:
            text += (f", loop over {self.loop.file_name or '?'} "
                     f"(inode {self.loop.backing_ino} on {dev_name(self.loop.backing_dev)}, "
                     f"offset {self.loop.offset})")
        return text


def _size(fd: int) -> int:
    buf = bytearray(8)
    fcntl.ioctl(fd, BLKGETSIZE64, buf)
    return int(struct.unpack("=Q", bytes(buf))[0])


def _identity(fd: int) -> Identity:
    st = os.fstat(fd)
    return Identity(rdev=st.st_rdev, size=_size(fd), loop=loop_status_fd(fd))


class DeviceHold:
    """Open `path` exclusively now; DeviceProblem (exit 3) when something else holds it."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lent = False
        flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK
        try:
            self._fd = os.open(path, flags)
        except OSError as err:
            raise DeviceProblem(f"cannot open {path}: {err.strerror}") from None
        if not stat.S_ISBLK(os.fstat(self._fd).st_mode):
            os.close(self._fd)
            raise DeviceProblem(f"{path} is not a block device")
        self._excl: int | None = None
        try:
            self.identity = _identity(self._fd)
            self.claim()
        except BaseException:
            self.close()
            raise

    @property
    def exclusive(self) -> bool:
        return self._excl is not None

    def claim(self, *, attempts: int = 10) -> None:
        """Take the exclusive claim (again). Right after an umount the kernel may still be
        letting go of the device: a few short retries before calling it busy."""
        if self._excl is not None:
            return
        for attempt in range(attempts):
            try:
                self._excl = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_EXCL)
                break
            except OSError as err:
                if err.errno != errno.EBUSY:
                    raise DeviceProblem(f"cannot open {self.path}: {err.strerror}") from None
                if attempt == attempts - 1:
                    raise DeviceProblem(
                        f"{self.path} is busy: mounted, or held by another program (md, LVM, "
                        "device-mapper, another mkfs or validation run)") from None
                time.sleep(0.05 * (attempt + 1))
        self.verify()

    def release(self) -> None:
        """Let go of the exclusive claim (mkfs.xfs or mount is about to take it)."""
        if self._excl is not None:
            os.close(self._excl)
            self._excl = None

    def verify(self) -> None:
        """DeviceProblem unless the node still names the device that was checked."""
        now = _identity(self._fd)
        try:
            node = os.stat(self.path).st_rdev
        except OSError as err:
            raise DeviceProblem(f"{self.path} has vanished ({err.strerror})") from None
        # A loop device's status includes its flags: autoclear appearing means somebody asked
        # for it to be detached (deferred while we hold it open).
        changed = node != self.identity.rdev or now != self.identity
        if changed:
            raise DeviceProblem(
                f"refusing to go on: {self.path} changed since it was checked (was "
                f"{self.identity.describe()}; now {now.describe()}"
                f"{'' if node == self.identity.rdev else f', node names {dev_name(node)}'})")

    @contextlib.contextmanager
    def lent(self) -> Iterator[DeviceHold]:
        """The hold for a run that closes what it is given (advisor.bench.run.execute), kept
        past it: close() does nothing meanwhile, so the device stays held between runs (validate
        --attribute runs several on it). The lender closes it."""
        self._lent = True
        try:
            yield self
        finally:
            self._lent = False

    def close(self) -> None:
        if self._lent:
            return
        self.release()
        with contextlib.suppress(OSError):
            os.close(self._fd)
        self._fd = -1

    def __enter__(self) -> DeviceHold:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
