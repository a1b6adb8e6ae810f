"""Which processes hold a block device, or a loop device's backing file, open: /proc/*/fd.

An exclusive opener (mount, md, LVM, mkfs) is refused by O_EXCL; a plain one is not: a VM on a raw
disk, a database on a raw device, a `dd`, or a program writing into a loop device's backing file
all hold it with an ordinary open, which the kernel lets any other program share. Only the
processes' file tables tell. Each fd is stat()ed through /proc/PID/fd, which reaches the open
file itself whatever path opened it, even renamed or deleted; one stat per fd (relative to the
open fd folder), as fuser does, is the whole cost. A process may also hold a device or file only
through a memory mapping (mmap, then close): /proc/PID/maps names each mapped file by (st_dev,
st_ino), which answers for files at once; whether a mapped file is a block device (a node in
/dev, or anywhere else) is asked once per distinct file through /proc/PID/map_files (root only).

The command name (`comm`) is chosen by the process: it is untrusted text and is escaped before it
is shown.
"""

from __future__ import annotations

import os
import re
import stat


class Opener:
    """One process holding a device or file open. (Plain classes, not dataclasses: making a
    frozen dataclass compiles five methods, a hundredth of `devices --json`'s start.)"""

    __slots__ = ("command", "mapped", "pid")

    def __init__(self, pid: int, command: str, mapped: bool = False) -> None:
        self.pid = pid
        self.command = command
        """Its command name (/proc/PID/comm), escaped: control characters shown as `\\xNN`."""
        self.mapped = mapped
        """True when it holds it only through a memory mapping (no open descriptor)."""

    def __repr__(self) -> str:
        return f"Opener(pid={self.pid}, command={self.command!r}, mapped={self.mapped})"

    def describe(self) -> str:
        return f"pid {self.pid} ({self.command}{', mapped' if self.mapped else ''})"


class Openers:
    """Processes by what they hold open: block devices by device number (st_rdev), files by
    (st_dev, st_ino)."""

    __slots__ = ("devices", "files", "unreadable")

    def __init__(self) -> None:
        self.devices: dict[int, list[Opener]] = {}
        self.files: dict[tuple[int, int], list[Opener]] = {}
        self.unreadable = 0
        """Processes whose file table could not be read (they ended meanwhile, or no
        permission)."""


def shown(text: str) -> str:
    """Untrusted text as it may reach a terminal: every non-printable character escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 0x100
                   else f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}"
                   for c in text)


def _command(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/comm", "rb") as f:
            raw = f.read(64)
    except OSError:
        return "?"
    return shown(raw.rstrip(b"\n").decode("utf-8", "replace"))


#: A line of /proc/PID/maps that maps a file: `start-end perms offset MAJ:MIN inode path`
#: (an inode of 0 is anonymous memory).
_MAPPING = re.compile(rb"^([0-9a-f]+-[0-9a-f]+) \S+ \S+ ([0-9a-f]+:[0-9a-f]+ [1-9][0-9]*) ",
                      re.MULTILINE)


def _mapped(pid_fd: int, files: frozenset[tuple[int, int]],
            kinds: dict[tuple[int, int], int | None]) -> set[tuple[str, int | tuple[int, int]]]:
    """What the process maps (/proc/PID/maps): block devices by st_rdev, and which of `files`.
    `kinds` caches, per mapped (st_dev, st_ino), the block device it is (its st_rdev) or None,
    so each shared library is asked about once per scan, not once per process."""
    held: set[tuple[str, int | tuple[int, int]]] = set()
    try:
        fd = os.open("maps", os.O_RDONLY | os.O_CLOEXEC, dir_fd=pid_fd)
    except OSError:
        return held
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    except OSError:
        return held
    finally:
        os.close(fd)
    seen: set[bytes] = set()
    for start_end, dev_ino in _MAPPING.findall(b"".join(chunks)):
        if dev_ino in seen:  # a library maps several ranges of one file
            continue
        seen.add(dev_ino)
        numbers, _, inode = dev_ino.partition(b" ")
        major, _, minor = numbers.partition(b":")
        key = (os.makedev(int(major, 16), int(minor, 16)), int(inode))
        if key in files:
            held.add(("file", key))
            continue
        if key not in kinds:
            try:
                st = os.stat(f"map_files/{start_end.decode()}", dir_fd=pid_fd)
            except OSError:
                continue  # not root, or unmapped meanwhile: asked again in the next process
            kinds[key] = st.st_rdev if stat.S_ISBLK(st.st_mode) else None
        rdev = kinds[key]
        if rdev is not None:
            held.add(("dev", rdev))
    return held


def _opened(pid_fd: int, files: frozenset[tuple[int, int]]
            ) -> set[tuple[str, int | tuple[int, int]]] | None:
    """What the process holds by descriptor (/proc/PID/fd); None when that cannot be read."""
    try:
        fd_dir = os.open("fd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=pid_fd)
    except OSError:
        return None
    held: set[tuple[str, int | tuple[int, int]]] = set()
    try:
        # One stat per fd, relative to the open folder: no path walk, no readlink.
        for fd in os.listdir(fd_dir):
            try:
                st = os.stat(fd, dir_fd=fd_dir)
            except OSError:
                continue  # closed meanwhile
            if stat.S_ISBLK(st.st_mode):
                held.add(("dev", st.st_rdev))
            elif files and (st.st_dev, st.st_ino) in files:
                held.add(("file", (st.st_dev, st.st_ino)))
    except OSError:
        return None
    finally:
        os.close(fd_dir)
    return held


def scan(files: frozenset[tuple[int, int]] = frozenset(), *,
         skip: frozenset[int] = frozenset()) -> Openers:
    """Every process's open (or memory-mapped) block devices, and which of `files` ((st_dev,
    st_ino)) each holds; processes in `skip` (this one) are left out."""
    found = Openers()
    kinds: dict[tuple[int, int], int | None] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) in skip:
            continue
        try:
            pid_fd = os.open(f"/proc/{pid}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            found.unreadable += 1
            continue
        try:
            opened = _opened(pid_fd, files)
            if opened is None:
                found.unreadable += 1
                continue
            mapped = _mapped(pid_fd, files, kinds) - opened
        finally:
            os.close(pid_fd)
        if not opened and not mapped:
            continue
        command = _command(pid)
        for keys, only_mapped in ((opened, False), (mapped, True)):
            opener = Opener(pid=int(pid), command=command, mapped=only_mapped)
            for kind, key in keys:
                if kind == "dev" and isinstance(key, int):
                    found.devices.setdefault(key, []).append(opener)
                elif isinstance(key, tuple):
                    found.files.setdefault(key, []).append(opener)
    return found
