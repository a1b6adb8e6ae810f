"""One reader for /sys and /proc, live or from a captured tree (lsblk's --sysroot meaning).

Everything else parses the strings this returns. A `SysRoot` can record what it read, which is how
`xfs-advisor capture` writes exactly the files the advisor needs and no more.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from advisor.errors import BadInput


@dataclass
class SysRoot:
    """A root directory holding `sys/` and `proc/`: `/` for the live system, or a captured tree."""

    root: Path = Path("/")
    #: When not None, every path read (relative to root) is added here, for capture.
    recorded: set[str] | None = field(default=None, repr=False)

    @classmethod
    def open(cls, root: str | os.PathLike[str] | None) -> SysRoot:
        """Check that `root` looks like a system root and return a reader for it."""
        path = Path(root) if root else Path("/")
        if not path.is_dir():
            raise BadInput(f"sysroot {path} is not a readable directory")
        if not (path / "sys" / "block").is_dir() and not (path / "sys" / "dev" / "block").is_dir():
            raise BadInput(f"sysroot {path} has no sys/block: not a system root or a capture")
        if not os.access(path / "sys", os.R_OK | os.X_OK):
            raise BadInput(f"sysroot {path}/sys is not readable")
        return cls(path)

    @functools.cached_property
    def live(self) -> bool:
        """True when reading the running system (libblkid and udev can then be asked too).
        Resolved once: a scan asks a dozen times, and resolving a captured tree's path costs a
        system call per component (the fleet report asks for every host): a root that is not
        the file / is, with one stat, not the live system; only one that is (/, a symlink to
        it, or a bind mount of it, which is not) is resolved."""
        try:
            if not os.path.samestat(os.stat(self.root), _slash()):
                return False
        except OSError:
            pass
        return self.root.resolve() == Path("/")

    def path(self, rel: str) -> Path:
        return self.root / rel.lstrip("/")

    def _abs(self, rel: str) -> str:
        """path() as a string, without pathlib's parsing (hot in large scans)."""
        return f"{self._prefix}/{rel.lstrip('/')}"

    @functools.cached_property
    def _prefix(self) -> str:
        return str(self.root).rstrip("/")

    def _note(self, rel: str) -> None:
        if self.recorded is not None:
            self.recorded.add(rel.lstrip("/"))

    def read(self, rel: str) -> str | None:
        """The stripped text of a file, or None when it is missing or unreadable."""
        self._note(rel)
        return _read_at(None, self._abs(rel), to_eof=True)

    def read_many(self, folder: str, names: Sequence[str]) -> list[str | None]:
        """read(folder/name) for each sysfs attribute name (which may hold a slash), opening the
        folder once: a scan reads ~25 attributes per device, and walking the symlinked sysfs
        path again for each costs as much as the read itself. Attributes (at most a page) come
        in one read; /proc tables, which may need several, go through read()."""
        folder = folder.strip("/")
        if self.recorded is not None:
            self.recorded.update(f"{folder}/{name}" for name in names)
        try:
            dir_fd = os.open(self._abs(folder), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return [None] * len(names)
        try:
            return _read_attributes(dir_fd, names)
        finally:
            os.close(dir_fd)

    def folder(self, rel: str) -> Folder:
        """`rel` opened once, for a caller that asks several things of one folder (a /sys/block
        entry: its attributes, holders, slaves, mq and partitions): each is then looked up from
        the open folder instead of walking the whole path, through sysfs' symlinks, from the
        root again. Use it in a with block. A recording root (capture) and a folder that cannot
        be opened answer through this SysRoot's own methods with the whole paths, as before."""
        if self.recorded is not None:
            return Folder(self, rel.strip("/"), None)
        try:
            fd = os.open(self._abs(rel), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            fd = None
        return Folder(self, rel.strip("/"), fd)

    def listdir(self, rel: str) -> list[str]:
        """Sorted entries of a directory; empty when it is missing or unreadable."""
        self._note(rel)
        try:
            return sorted(os.listdir(self._abs(rel)))
        except OSError:
            return []

    def iter_names(self, rel: str) -> Iterator[str]:
        """The entries of a directory one at a time, in the order the file system gives them
        (not sorted: a host's 100,000 /sys/block entries are never all held); none when it is
        missing or unreadable."""
        self._note(rel)
        try:
            with os.scandir(self._abs(rel)) as found:
                for entry in found:
                    yield entry.name
        except OSError:
            return

    def has_entry(self, rel: str, name: str) -> bool:
        """Whether `name` is an entry of the directory `rel` (a dangling link counts): `name in
        listdir(rel)` with one lstat instead of the listing. Recorded as listdir is (the
        folder), since that is what it asks of."""
        self._note(rel)
        if not name or "/" in name or name in (".", ".."):
            return False
        return os.path.lexists(f"{self._abs(rel)}/{name}")

    def readlink(self, rel: str) -> str | None:
        """The target of a symlink, or None."""
        self._note(rel)
        try:
            return os.readlink(self._abs(rel))
        except OSError:
            return None

    def exists(self, rel: str) -> bool:
        self._note(rel)
        return os.path.lexists(self._abs(rel))


@functools.cache
def _slash() -> os.stat_result:
    return os.stat("/")


class Folder:
    """A folder of a SysRoot opened once (SysRoot.folder): read_many, listdir and exists of the
    paths under it, each the answer SysRoot's method gives for the whole path."""

    def __init__(self, root: SysRoot, rel: str, fd: int | None) -> None:
        self.root = root
        self.rel = rel
        self.fd = fd

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _path(self, sub: str) -> str:
        return f"{self.rel}/{sub}" if sub else self.rel

    def read_many(self, names: Sequence[str]) -> list[str | None]:
        """SysRoot.read_many(this folder, names)."""
        if self.fd is None:
            return self.root.read_many(self.rel, names)
        return _read_attributes(self.fd, names)

    def listdir(self, sub: str = "") -> list[str]:
        """SysRoot.listdir(this folder / sub): sorted entries, empty when missing. By the whole
        path: os.listdir of an open folder takes twice the system calls (a dup, fcntl, lseek)
        that opening the path again does."""
        return self.root.listdir(self._path(sub))

    def exists(self, sub: str) -> bool:
        """SysRoot.exists(this folder / sub): lexists, a dangling link counts."""
        if self.fd is None:
            return self.root.exists(self._path(sub))
        try:
            os.stat(sub, dir_fd=self.fd, follow_symlinks=False)
        except OSError:
            return False
        return True

    def folder(self, sub: str) -> Folder:
        """A folder under this one, opened from it."""
        if self.fd is None:
            return Folder(self.root, self._path(sub), None) if self.root.recorded is not None \
                else self.root.folder(self._path(sub))
        try:
            fd = os.open(sub, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=self.fd)
        except OSError:
            fd = None
        return Folder(self.root, self._path(sub), fd)


#: O_NONBLOCK: a FIFO planted in a captured tree opens at once (and reads as empty) instead of
#: waiting for a writer; the fstat below then refuses anything that is not a regular file.
_READ_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY


def _read_attributes(dir_fd: int, names: Sequence[str]) -> list[str | None]:
    """_read_at(dir_fd, name, to_eof=False) for each name, with two system calls fewer per file
    in the common case (the loop runs ~120,000 times on a SAN host): a read that returns some
    bytes but less than a full buffer is a sysfs attribute's whole value, and only a regular file
    answers like that (a FIFO without a writer reads as empty, a device node fills the buffer or
    refuses), so only an empty or a full read is looked at again, by _read_at with its checks."""
    found: list[str | None] = []
    append, open_, read, close = found.append, os.open, os.read, os.close
    for name in names:
        try:
            fd = open_(name, _READ_FLAGS, dir_fd=dir_fd)
        except OSError:
            append(None)
            continue
        try:
            data = read(fd, 65536)
        except OSError:
            data = b""
        finally:
            close(fd)
        if data and len(data) < 65536:
            append(data.decode("utf-8", "replace").strip())
        else:
            append(_read_at(dir_fd, name, to_eof=False))
    return found


def _read_at(dir_fd: int | None, path: str, *, to_eof: bool) -> str | None:
    """Up to 1 MiB of a regular file (sysfs attributes and /proc tables are; a FIFO, a device
    node or a folder in a captured tree reads as missing). `to_eof` False: a short read is the
    end (true of sysfs attributes, and it saves a syscall per attribute); True: read until
    read() returns nothing (procfs)."""
    # os.read, not open().read(1 << 20): a buffered read allocates the whole 1 MiB every time,
    # which dominates a scan of thousands of small sysfs files.
    try:
        fd = os.open(path, _READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = chunk = os.read(fd, 65536)
        while chunk and (to_eof or len(chunk) == 65536) and len(data) < (1 << 20):
            chunk = os.read(fd, 65536)
            data += chunk
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8", "replace").strip()
