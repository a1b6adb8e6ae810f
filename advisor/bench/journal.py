"""The run journal: a validation run's state file, which records what the run made on the host
(temporary folders, backing files, loop devices, mounts, test filesystems) before it exists, so
that nothing outlives the run (advisor.bench.cleanup undoes it; advisor.bench.resources makes it).

The state file lives in /run/xfs-advisor (a tmpfs: emptied by a reboot, which also drops every
loop device and mount it could name). XFS_ADVISOR_STATE_DIR moves it, for tests.

Recovery runs as root on what a file says, so it trusts neither the file nor the paths in it: the
folder and the file must be ours and writable by nobody else, and every record carries the
identity of what was made (device numbers, inodes, the mount's ID). Paths are canonical when
recorded.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, Field, ValidationError

from advisor.errors import DeviceProblem, ToolProblem
from advisor.models.base import Model

STATE_DIR_ENV = "XFS_ADVISOR_STATE_DIR"
DEFAULT_STATE_DIR = "/run/xfs-advisor"


def state_dir() -> Path:
    return Path(os.environ.get(STATE_DIR_ENV) or DEFAULT_STATE_DIR)


# ---- the records ----

class _Record(Model):
    model_config = ConfigDict(extra="forbid", strict=True)


class PathRecord(_Record):
    """A folder or file the run made."""

    path: str
    """Canonical path."""
    dev: int
    """st_dev when it was made."""
    ino: int
    """st_ino when it was made."""
    empty_only: bool = False
    """A missing parent of the loop folder, made for the run: removed only while empty."""

    def name(self) -> str:
        return self.path


class LoopRecord(_Record):
    """A loop device over a backing file the run made."""

    backing: str
    """Canonical path of the backing file."""
    dev: int
    """st_dev of the backing file: the kernel reports it for an attached loop (BACK-MAJ:MIN)."""
    ino: int
    """st_ino of the backing file (BACK-INO)."""
    device: str = ""
    """The loop device, once losetup has named it."""

    def name(self) -> str:
        return self.device or f"the loop device over {self.backing}"


class MountRecord(_Record):
    """A mount the run made."""

    device: str
    """What was mounted."""
    source: str
    """major:minor of the mounted device, as mountinfo's third field shows it."""
    mountpoint: str
    """Canonical mountpoint."""
    mount_id: int | None = None
    """mountinfo's mount ID, once the mount exists."""

    def name(self) -> str:
        return self.mountpoint


class FilesystemRecord(_Record):
    """A test filesystem the run made on a scratch device given with --device."""

    device: str
    """The device."""
    source: str
    """Its major:minor."""
    uuid: str
    """The filesystem's UUID (hex, from the superblock): names the one made (a copy of it, or
    the same filesystem written since, has it too)."""
    fingerprint: str = ""
    """advisor.system.superblock.xfs_fingerprint after the run's last unmount of it (empty
    until then): equal now, nothing mounted it read-write or wrote to it since."""
    mounted: bool = False
    """The run had it mounted (or was about to): what happened to it since cannot be told."""


class RunState(_Record):
    """Everything one run has made, in creation order."""

    version: Literal[2] = 2
    """Shape of this file."""
    pid: int
    """The run's process."""
    started: str | None
    """Its start time (field 22 of /proc/PID/stat): tells a live run from a reused pid."""
    dirs: list[PathRecord] = Field(default_factory=list)
    """Folders."""
    files: list[PathRecord] = Field(default_factory=list)
    """Files."""
    loops: list[LoopRecord] = Field(default_factory=list)
    """Loop devices."""
    mounts: list[MountRecord] = Field(default_factory=list)
    """Mounts."""
    filesystems: list[FilesystemRecord] = Field(default_factory=list)
    """Test filesystems on a --device (left in place: reported, never wiped)."""

    def empty(self) -> bool:
        return not (self.dirs or self.files or self.loops or self.mounts)


# ---- trust ----

def untrusted(st: os.stat_result, what: str) -> str | None:
    """Why a state folder or file cannot be trusted (None: it can)."""
    if st.st_uid != os.geteuid():
        return f"{what} is owned by uid {st.st_uid}, not by uid {os.geteuid()} (this run)"
    if st.st_mode & 0o022:
        return f"{what} is writable by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def open_state_dir(directory: Path, *, create: bool) -> int | None:
    """The state folder, opened without following a symlink and checked: ours and writable by
    nobody else. DeviceProblem otherwise: recovery acts as root on what the folder holds, so an
    untrusted one stops the run the way an unsafe device does (exit 3). None: it does not
    exist and `create` is False."""
    if create:
        try:
            directory.parent.mkdir(parents=True, exist_ok=True)
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass
        except OSError as err:
            raise ToolProblem(
                f"cannot create the state folder {directory}: {err.strerror}") from None
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as err:
        if os.path.islink(directory):
            raise DeviceProblem(f"refusing the state folder {directory}: it is a symbolic link "
                                f"(set {STATE_DIR_ENV} to a real folder)") from None
        raise DeviceProblem(f"refusing the state folder {directory}: {err.strerror}") from None
    why = untrusted(os.fstat(fd), "it")
    if why:
        os.close(fd)
        raise DeviceProblem(f"refusing the state folder {directory}: {why}; nothing was undone "
                            "or made (fix its owner and mode, or remove it)")
    return fd


class Ignored(Exception):
    """A state file recovery does not act on; `remove`: it is ours but unreadable."""

    def __init__(self, reason: str, *, remove: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.remove = remove


def read_state(dir_fd: int, name: str) -> RunState:
    """A state file, opened without following a symlink; Ignored when it is not ours (owner,
    mode, kind) or not readable as this version's."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as err:
        raise Ignored(str(err.strerror)) from None
    try:
        st = os.fstat(fd)
        why = untrusted(st, "it") if stat.S_ISREG(st.st_mode) else "it is not a regular file"
        if why:
            raise Ignored(f"{why}: not this tool's")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(1 << 20)
    finally:
        os.close(fd)
    try:
        return RunState.model_validate(json.loads(data))
    except (ValueError, ValidationError):
        raise Ignored("not a state file of this version", remove=True) from None


active_runs: set[str] = set()
"""State files of runs going on in this process (the TUI runs one after another)."""


def write_state(dir_fd: int, name: str, state: RunState) -> None:
    """Write the state file whole (a temporary file renamed over it). A full or failing state
    folder is a ToolProblem naming it; neither that nor a signal (raised as the open returns,
    or while it waits) leaves the temporary file behind."""
    tmp = name + ".tmp"
    try:
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(state.model_dump_json())
                f.flush()
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
    except OSError as err:
        raise ToolProblem(f"cannot write the run's state file in {state_dir()}: "
                          f"{err.strerror or err} (set {STATE_DIR_ENV} to another folder)") \
            from None

