"""Which processes hold a block device, or a loop device's backing file, open: /proc/*/fd.

An exclusive opener (mount, md, LVM, mkfs) is refused by O_EXCL; a plain one is not: a VM on a raw
disk, a database on a raw device, a `dd`, or a program writing into a loop device's backing file
all hold it with an ordinary open, which the kernel lets any other program share. Only the
processes' file tables tell. Each fd is stat()ed through /proc/PID/fd, which reaches the open
file itself whatever path opened it, even renamed or deleted; one stat per fd (relative to the
open fd folder), as fuser does, is the whole cost.

The command name (`comm`) is chosen by the process: it is untrusted text and is escaped before it
is shown.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Opener:
    """One process holding a device or file open."""

    pid: int
    command: str
    """Its command name (/proc/PID/comm), escaped: control characters shown as `\\xNN`."""

    def describe(self) -> str:
        return f"pid {self.pid} ({self.command})"


@dataclass
class Openers:
    """Processes by what they hold open: block devices by device number (st_rdev), files by
    (st_dev, st_ino)."""

    devices: dict[int, list[Opener]] = field(default_factory=dict)
    files: dict[tuple[int, int], list[Opener]] = field(default_factory=dict)
    unreadable: int = 0
    """Processes whose file table could not be read (they ended meanwhile, or no permission)."""


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


def scan(files: frozenset[tuple[int, int]] = frozenset(), *,
         skip: frozenset[int] = frozenset()) -> Openers:
    """Every process's open block devices, and which of `files` ((st_dev, st_ino)) each holds;
    processes in `skip` (this one) are left out."""
    found = Openers()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) in skip:
            continue
        try:
            fd_dir = os.open(f"/proc/{pid}/fd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            found.unreadable += 1
            continue
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
            found.unreadable += 1
            continue
        finally:
            os.close(fd_dir)
        if not held:
            continue
        opener = Opener(pid=int(pid), command=_command(pid))
        for kind, key in held:
            if kind == "dev" and isinstance(key, int):
                found.devices.setdefault(key, []).append(opener)
            elif isinstance(key, tuple):
                found.files.setdefault(key, []).append(opener)
    return found
