"""What a validation run creates on the host (temporary folders, backing files, loop devices,
mounts, test filesystems on a scratch device), recorded in a state file so that nothing outlives
the run: the run undoes it on every path (success, a failing tool, Ctrl-C, SIGTERM, SIGHUP,
SIGQUIT), and the next run removes what a SIGKILLed one left.

The state file lives in /run/xfs-advisor (a tmpfs: emptied by a reboot, which also drops every
loop device and mount it could name). XFS_ADVISOR_STATE_DIR moves it, for tests.

Recovery runs as root on what a file says, so it trusts neither the file nor the paths in it: the
folder and the file must be ours and writable by nobody else, and every record carries the
identity of what was made (device numbers, inodes, the mount's ID); only what still has that
identity is undone. Paths are canonical when recorded and compared after mountinfo's escapes are
undone, so a symlinked, relative or oddly named --loop-dir cannot hide a mount from clean-up.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from types import FrameType
from typing import Literal, TypeVar

from pydantic import ConfigDict, Field, ValidationError

from advisor.errors import DeviceProblem, ToolProblem
from advisor.inspect.parsers import unescape_mount_path
from advisor.models.base import Model
from advisor.models.device import Device
from advisor.system import argv
from advisor.system.loopdev import dev_name
from advisor.system.openers import shown as printable
from advisor.system.processes import alive, process_start
from advisor.system.runner import run
from advisor.system.superblock import read_xfs_uuid, xfs_fingerprint
from advisor.system.sysroot import SysRoot

STATE_DIR_ENV = "XFS_ADVISOR_STATE_DIR"
DEFAULT_STATE_DIR = "/run/xfs-advisor"
#: Signals that end the process: each must let the clean-up run first.
ENDING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


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


# ---- signals ----

def failure(message: str) -> ToolProblem | DeviceProblem:
    """A failed mkfs.xfs or mount: the device's problem (exit 3) when it was busy, held by
    something else (another run, a mount), else the tool's (exit 4)."""
    if "Device or resource busy" in message:
        return DeviceProblem(f"{message} (the device is busy: another program or another "
                             "validate run holds it)")
    return ToolProblem(message)


class Terminated(KeyboardInterrupt):
    """A signal that ends the process, turned into an exception so that every `finally` runs."""


_held: list[int] | None = None
"""Signals caught while clean-up holds them (None: not holding)."""


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _install(handler: Callable[[int, FrameType | None], None]) -> dict[int, object]:
    """Install `handler` for every ending signal the process has not chosen to ignore (nohup's
    SIGHUP stays ignored). Returns the previous handlers."""
    previous: dict[int, object] = {}
    for signum in ENDING_SIGNALS:
        current = signal.getsignal(signum)
        if current is signal.SIG_IGN:
            continue
        previous[signum] = current
        signal.signal(signum, handler)
    return previous


def _restore(previous: dict[int, object]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler if callable(handler) or isinstance(handler, int)
                      else signal.SIG_DFL)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block, SIGINT, SIGTERM, SIGHUP and SIGQUIT raise Terminated (a
    KeyboardInterrupt) in the main thread, so a closed terminal or a `kill` cleans up too."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Terminated(signal.Signals(signum).name)

    if not _main_thread():  # a worker: the caller handles termination
        yield
        return
    previous = _install(handler)
    try:
        yield
    finally:
        _restore(previous)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Within the block, ending signals are held, not lost: clean-up (or making a resource and
    recording it) cannot be cut in half by a second Ctrl-C. When the block ends, a held signal
    is raised as Terminated, so the exit still says interrupted. Re-entrant."""
    global _held
    if _held is not None or not _main_thread():
        yield
        return

    def hold(signum: int, frame: FrameType | None) -> None:
        if _held is not None:
            _held.append(signum)

    caught: list[int] = []
    _held = caught
    previous = _install(hold)
    try:
        yield
    finally:
        _restore(previous)
        _held = None
        if caught:
            raise Terminated(f"{signal.Signals(caught[0]).name} (held until clean-up ended)")


# ---- reading the host ----

def _same_name(recorded: str, shown: str) -> bool:
    """mountinfo is read as UTF-8 with replacement: compare the recorded path the same way."""
    return os.fsencode(recorded).decode("utf-8", "replace") == shown


@dataclass(frozen=True)
class _Mount:
    mount_id: int
    parent_id: int
    source: str
    mountpoint: str


def _mounts(proc: SysRoot) -> list[_Mount]:
    found = []
    for line in (proc.read("proc/self/mountinfo") or "").splitlines():
        fields = line.split()
        if len(fields) > 4 and fields[0].isdigit() and fields[1].isdigit():
            found.append(_Mount(int(fields[0]), int(fields[1]), fields[2],
                                unescape_mount_path(fields[4])))
    return found


def _find_mount(proc: SysRoot, rec: MountRecord) -> tuple[_Mount | None, bool]:
    """Our mount as mountinfo shows it now (same device numbers, mountpoint and, once known,
    mount ID), and whether something else is mounted over it."""
    mounts = _mounts(proc)
    ours = [m for m in mounts if m.source == rec.source and _same_name(rec.mountpoint, m.mountpoint)
            and (rec.mount_id is None or m.mount_id == rec.mount_id)]
    if not ours:
        return None, False
    mine = ours[-1]
    covered = any(m.parent_id == mine.mount_id and m.mountpoint == mine.mountpoint
                  for m in mounts)
    return mine, covered


def _loops() -> list[dict[str, str]]:
    """Every attached loop device: name, backing file and its device and inode. ToolProblem
    when losetup cannot tell: an unknown answer must not read as "nothing attached"."""
    result = run(argv.losetup_list(), check=False, timeout=20, own_group=True)
    if not result.ok:
        raise ToolProblem(f"cannot list loop devices: {result.first_error_line()}")
    if not result.stdout.strip():
        return []
    entries = json.loads(result.stdout).get("loopdevices", [])
    return [{k: str(v if v is not None else "").strip() for k, v in e.items()} for e in entries]


def _loops_of(rec: LoopRecord) -> list[str]:
    """Loop devices attached now over the backing file we made, found by the file's identity
    (device and inode: a path can be re-used, a deleted file shows as "(deleted)"), whatever
    name losetup printed: a name can be wrong (re-bound in between), the binding cannot. While
    the file is still there with that identity, every loop device over it is ours to detach;
    once it is gone the inode number may name another file, and only the recorded device is."""
    backing = (str(rec.ino), dev_name(rec.dev))
    ours = _identity(rec.backing) == (rec.dev, rec.ino)
    return [e["name"] for e in _loops() if e.get("name")
            and (e.get("back-ino"), e.get("back-maj:min")) == backing
            and (ours or (rec.device and e["name"] == rec.device))]


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def check_bound(device: str, backing: str, identity: tuple[int, int]) -> None:
    """DeviceProblem unless `device` is a loop device bound, from its start, to the file whose
    (st_dev, st_ino) is `identity`."""
    from advisor.system.loopdev import loop_status

    shown = printable(device)
    try:
        status = loop_status(device) if device.startswith("/dev/") else None
    except OSError as err:
        raise DeviceProblem(f"refusing to use {shown}: the kernel cannot say what it is bound "
                            f"to ({err.strerror})") from None
    if status is None or status.on_block_device or status.offset or \
            (status.backing_dev, status.backing_ino) != identity:
        now = "nothing" if status is None else (
            f"{status.file_name or '?'} (inode {status.backing_ino} on "
            f"{dev_name(status.backing_dev)}, offset {status.offset})")
        raise DeviceProblem(
            f"refusing to use {shown}: losetup named it for {backing} (inode {identity[1]} on "
            f"{dev_name(identity[0])}), but it is bound to {printable(now)}; nothing was "
            "written to it")


def without_test_filesystem(device: Device, left: dict[str, str]) -> Device:
    """`device` as the guard should judge it after recovery: when it still holds the test
    filesystem a dead run left on it (same device numbers, same XFS UUID as recorded), that
    XFS signature is the killed run's, not data, and is dropped; every other fact stays."""
    try:
        source = dev_name(os.stat(device.path).st_rdev)
    except OSError:
        return device
    if source not in left or read_xfs_uuid(device.path) != left[source]:
        return device
    usage = device.usage.model_copy(update={"signatures": [
        s for s in device.usage.signatures if s.value != "xfs"]})
    return device.model_copy(update={"usage": usage})


def stop_our_fio(proc: SysRoot | None = None, sig: int = signal.SIGTERM) -> None:
    """Signal the fio runs this process started (a running fio keeps the filesystem busy; a
    cancel need not wait for the round to end: the run then fails and cleans up). Only fio: in
    the TUI other workers' children share this parent."""
    proc = proc or SysRoot()
    me = str(os.getpid())
    for entry in proc.listdir("proc"):
        if not entry.isdigit():
            continue
        stat_text = proc.read(f"proc/{entry}/stat") or ""
        name = stat_text.partition("(")[2].rpartition(")")[0]
        if name == "fio" and stat_text.rsplit(")", 1)[-1].split()[1:2] == [me]:
            with contextlib.suppress(OSError):
                os.kill(int(entry), sig)


# ---- undoing, one kind of resource at a time; each says whether it is gone ----

def _unmount(proc: SysRoot, rec: MountRecord, log: list[str]) -> bool:
    for attempt in range(5):
        mine, covered = _find_mount(proc, rec)
        if mine is None:
            return True
        if covered:
            log.append(f"left {rec.mountpoint} mounted: something else is mounted over it")
            return False
        result = run(argv.umount(rec.mountpoint), check=False, timeout=60, own_group=True)
        if result.ok and _find_mount(proc, rec)[0] is None:
            log.append(f"unmounted {rec.mountpoint}")
            return True
        time.sleep(0.2 * (attempt + 1))
    # Still busy (a process we do not own holds it): detach it from the tree now, the kernel
    # frees it when the last user goes.
    result = run(argv.umount(rec.mountpoint, lazy=True), check=False, timeout=60,
                 own_group=True)
    if _find_mount(proc, rec)[0] is None:
        log.append(f"lazily unmounted {rec.mountpoint} (it was busy: the kernel frees it when "
                   "its last user goes)")
        return True
    log.append(f"{rec.mountpoint} is still mounted ({result.first_error_line()})")
    return False


def _detach(rec: LoopRecord, log: list[str]) -> bool:
    devices = _loops_of(rec)
    for device in devices:
        for attempt in range(5):
            if run(argv.losetup_detach(device), check=False, timeout=30, own_group=True).ok:
                break
            time.sleep(0.2 * (attempt + 1))
    remaining = _loops_of(rec)
    for device in devices:
        if device in remaining:
            log.append(f"{device} is still attached (busy: set to detach itself when released)")
        else:
            log.append(f"detached {device}")
    return not remaining


def _remove_file(rec: PathRecord, log: list[str]) -> bool:
    try:
        st = os.lstat(rec.path)
    except FileNotFoundError:
        return True
    if (st.st_dev, st.st_ino) != (rec.dev, rec.ino) or not stat.S_ISREG(st.st_mode):
        log.append(f"left {rec.path} alone: it is not the file this tool made")
        return True
    os.unlink(rec.path)
    log.append(f"removed {rec.path}")
    return True


def _remove_dir(proc: SysRoot, rec: PathRecord, log: list[str]) -> bool:
    try:
        st = os.lstat(rec.path)
    except FileNotFoundError:
        return True
    if (st.st_dev, st.st_ino) != (rec.dev, rec.ino) or not stat.S_ISDIR(st.st_mode):
        log.append(f"left {rec.path} alone: it is not the folder this tool made")
        return True
    inside = [m.mountpoint for m in _mounts(proc)
              if _same_name(rec.path, m.mountpoint)
              or m.mountpoint.startswith(os.fsencode(rec.path).decode("utf-8", "replace") + "/")]
    if inside:
        log.append(f"kept {rec.path}: {inside[0]} is mounted in it")
        return False
    if rec.empty_only:
        try:
            os.rmdir(rec.path)
        except OSError:  # someone else put something in it meanwhile: theirs now
            log.append(f"kept {rec.path}: it is not empty")
            return True
        log.append(f"removed {rec.path}")
        return True
    shutil.rmtree(rec.path, ignore_errors=True)
    if os.path.lexists(rec.path):
        log.append(f"could not remove all of {rec.path}")
        return False
    log.append(f"removed {rec.path}")
    return True


def _note_filesystem(rec: FilesystemRecord, log: list[str]) -> dict[str, str]:
    """A test filesystem stays (it is on the user's device). Only one provably unchanged since
    the run last unmounted it (same device, UUID and fingerprint; not mounted when the run died)
    is the run's: said so, and returned as {major:minor: uuid} for the guard of a run on that
    same device. One with the UUID but mounted or written since may hold anybody's data now:
    said so, and left to the guard as data."""
    try:
        same = dev_name(os.stat(rec.device).st_rdev) == rec.source
    except OSError:
        return {}
    if not same or read_xfs_uuid(rec.device) != rec.uuid:
        return {}
    if not rec.mounted and rec.fingerprint and xfs_fingerprint(rec.device) == rec.fingerprint:
        log.append(f"{rec.device} holds the test filesystem it made, unchanged since "
                   f"(wipefs -a {rec.device} removes it)")
        return {rec.source: rec.uuid}
    why = ("it was mounted when that run died" if rec.mounted or not rec.fingerprint
           else "it was mounted or written since that run unmounted it")
    log.append(f"{rec.device} holds an XFS with the UUID of the test filesystem it made, but "
               f"{why}: what it holds now cannot be told from anybody's data, so it is "
               f"treated as data (if nothing on it matters: wipefs -a {rec.device})")
    return {}


_R = TypeVar("_R", PathRecord, LoopRecord, MountRecord)


def _still_there(records: list[_R], undo_one: Callable[[_R], bool], log: list[str]) -> list[_R]:
    """Undo each record, newest first; the records of what is still there, in their order. A
    failure is noted and the record kept: one stubborn resource does not stop the others."""
    kept: list[_R] = []
    for rec in reversed(records):
        try:
            gone = undo_one(rec)
        except (OSError, ToolProblem) as err:
            log.append(f"could not undo {rec.name()}: {err}")
            gone = False
        if not gone:
            kept.append(rec)
    return kept[::-1]


def undo(state: RunState, proc: SysRoot) -> tuple[list[str], dict[str, str]]:
    """Undo what a run made, newest first, keeping in `state` only what is still there. Never
    raises for one stubborn resource: it notes it. Returns what was done and the test
    filesystems left on scratch devices ({major:minor: uuid})."""
    log: list[str] = []
    with signals_held():
        state.mounts = _still_there(state.mounts, lambda m: _unmount(proc, m, log), log)
        state.loops = _still_there(state.loops, lambda lo: _detach(lo, log), log)
        state.files = _still_there(state.files, lambda f: _remove_file(f, log), log)
        state.dirs = _still_there(state.dirs, lambda d: _remove_dir(proc, d, log), log)
        left: dict[str, str] = {}
        for fs in state.filesystems:
            left.update(_note_filesystem(fs, log))
        state.filesystems = []
    return log, left


def _remains(state: RunState) -> str:
    records: list[MountRecord | LoopRecord | PathRecord] = [
        *state.mounts, *state.loops, *state.files, *state.dirs]
    return ", ".join(r.name() for r in records)


# ---- trust ----

def _untrusted(st: os.stat_result, what: str) -> str | None:
    """Why a state folder or file cannot be trusted (None: it can)."""
    if st.st_uid != os.geteuid():
        return f"{what} is owned by uid {st.st_uid}, not by uid {os.geteuid()} (this run)"
    if st.st_mode & 0o022:
        return f"{what} is writable by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _open_state_dir(directory: Path, *, create: bool) -> int | None:
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
    why = _untrusted(os.fstat(fd), "it")
    if why:
        os.close(fd)
        raise DeviceProblem(f"refusing the state folder {directory}: {why}; nothing was undone "
                            "or made (fix its owner and mode, or remove it)")
    return fd


class _Ignored(Exception):
    """A state file recovery does not act on; `remove`: it is ours but unreadable."""

    def __init__(self, reason: str, *, remove: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.remove = remove


def _read_state(dir_fd: int, name: str) -> RunState:
    """A state file, opened without following a symlink; _Ignored when it is not ours (owner,
    mode, kind) or not readable as this version's."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as err:
        raise _Ignored(str(err.strerror)) from None
    try:
        st = os.fstat(fd)
        why = _untrusted(st, "it") if stat.S_ISREG(st.st_mode) else "it is not a regular file"
        if why:
            raise _Ignored(f"{why}: not this tool's")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(1 << 20)
    finally:
        os.close(fd)
    try:
        return RunState.model_validate(json.loads(data))
    except (ValueError, ValidationError):
        raise _Ignored("not a state file of this version", remove=True) from None


@dataclass
class Recovery:
    """What recovery found."""

    done: list[str] = field(default_factory=list)
    """One line per dead run: what it left and what became of it."""
    notes: list[str] = field(default_factory=list)
    """State files ignored, and why."""
    test_filesystems: dict[str, str] = field(default_factory=dict)
    """Test filesystems dead runs left on scratch devices: {major:minor: uuid}."""


_active: set[str] = set()
"""State files of runs going on in this process (the TUI runs one after another)."""


def recover_leftovers(proc: SysRoot | None = None) -> Recovery:
    """Remove what dead runs left behind (their state files name it), as far as it is still
    what they made. A state file whose run left something that cannot be undone yet is kept,
    so a later run tries again."""
    from advisor.system.mkfs import sweep_dry_runs

    proc = proc or SysRoot()
    directory = state_dir()
    found = Recovery()
    found.done += [f"a killed proposal's dry run left {printable(path)} (a sparse image of the "
                   "device's size): removed" for path in sweep_dry_runs()]
    dir_fd = _open_state_dir(directory, create=False)
    if dir_fd is None:
        return found
    try:
        for name in sorted(os.listdir(dir_fd)):
            if name.startswith("run-") and name.endswith(".json.tmp"):
                _sweep_unfinished(proc, dir_fd, directory, name, found)
                continue
            if not (name.startswith("run-") and name.endswith(".json")) \
                    or str(directory / name) in _active:
                continue
            try:
                state = _read_state(dir_fd, name)
            except _Ignored as ignored:
                if ignored.remove:
                    os.unlink(name, dir_fd=dir_fd)
                found.notes.append(f"{'removed' if ignored.remove else 'ignored'} "
                                   f"{directory / name}: {ignored.reason}; nothing it names "
                                   "was touched")
                continue
            if state.pid != os.getpid() and alive(proc, state.pid, state.started):
                continue  # that run is alive: not ours to touch
            _recover_one(proc, dir_fd, name, state, found)
    finally:
        os.close(dir_fd)
    return found


def _sweep_unfinished(proc: SysRoot, dir_fd: int, directory: Path, name: str,
                      found: Recovery) -> None:
    """A state file's temporary copy (run-PID-N.json.tmp) that a run killed between writing it
    and renaming it (or a full state folder) left: removed once that pid is no process at all,
    and only when it is ours; a live pid's may be in the middle of its rename."""
    pid = name.removeprefix("run-").split("-", 1)[0]
    if not pid.isdigit() or int(pid) == os.getpid() or proc.read(f"proc/{pid}/stat"):
        return
    try:
        st = os.lstat(name, dir_fd=dir_fd)
    except OSError:
        return
    why = _untrusted(st, "it") if stat.S_ISREG(st.st_mode) else "it is not a regular file"
    if why:
        found.notes.append(f"ignored {directory / name}: {why}: not this tool's")
        return
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=dir_fd)
    found.done.append(f"a dead run (pid {pid}) left an unfinished state file {directory / name}: "
                      "removed")


def recover_and_say(say: Callable[[str], None] | None) -> Recovery:
    """Recovery as every command that can start a run does it first: each dead run's line
    said as "recovered: ...", each ignored state file said as it is."""
    found = recover_leftovers()
    if say:
        for line in found.done:
            say(f"recovered: {line}")
        for note in found.notes:
            say(note)
    return found


def _recover_one(proc: SysRoot, dir_fd: int, name: str, state: RunState,
                 found: Recovery) -> None:
    actions, left = undo(state, proc)
    found.test_filesystems.update(left)
    if state.empty():
        os.unlink(name, dir_fd=dir_fd)
    else:
        _write_at(dir_fd, name, state)
        actions.append(f"still there: {_remains(state)} (kept for the next run)")
    if actions:
        found.done.append(f"a dead run (pid {state.pid}) left: " + "; ".join(actions))


def _write_at(dir_fd: int, name: str, state: RunState) -> None:
    """Write the state file whole (a temporary file renamed over it). A full or failing state
    folder is a ToolProblem naming it, and leaves no temporary file behind."""
    tmp = name + ".tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600, dir_fd=dir_fd)
        try:
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


_serial = count()


class Resources:
    """The run's ledger: every resource is written to the state file before it exists (or, for
    what gets its identity only when made, together with its making, signals held), and removed
    from it only once it is verified gone, so a SIGKILL at any point leaves a complete list."""

    def __init__(self, proc: SysRoot | None = None,
                 say: Callable[[str], None] | None = None) -> None:
        self.proc = proc or SysRoot()
        self.say = say
        pid = os.getpid()
        self.state = RunState(pid=pid, started=process_start(self.proc, pid))
        directory = state_dir()
        fd = _open_state_dir(directory, create=True)
        assert fd is not None  # created above
        self._dir_fd = fd
        self.name = f"run-{pid}-{next(_serial)}.json"
        self.path = directory / self.name
        self.remaining = ""
        """What clean-up could not undo, for people (its records stay for a later run)."""

    def _save(self) -> None:
        _write_at(self._dir_fd, self.name, self.state)

    def __enter__(self) -> Resources:
        self._save()
        _active.add(str(self.path))
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Undo everything, signals held. The state file goes only when nothing remains."""
        try:
            with signals_held():
                stop_our_fio(self.proc)
                log, _ = undo(self.state, self.proc)
                if self.state.empty():
                    os.unlink(self.name, dir_fd=self._dir_fd)
                else:
                    self._save()
                    self.remaining = (f"{'; '.join(log)}; still there: {_remains(self.state)} "
                                      f"(kept in {self.path}: the next run removes it)")
                    if self.say:
                        self.say(f"could not remove everything: {self.remaining}")
        finally:
            _active.discard(str(self.path))
            os.close(self._dir_fd)

    def make_folders(self, folder: str) -> None:
        """`folder` and its missing parents (like mkdir -p), each recorded as it is made, so
        that the run (or the next one, after a kill) removes them again while they are empty:
        a loop folder that did not exist is not left behind."""
        missing = []
        path = os.path.abspath(folder)
        while not os.path.lexists(path) and path != os.path.dirname(path):
            missing.append(path)
            path = os.path.dirname(path)
        for path in reversed(missing):
            with signals_held():
                try:
                    os.mkdir(path, 0o755)
                except FileExistsError:  # made by someone else meanwhile: theirs
                    continue
                st = os.lstat(path)
                self.state.dirs.append(PathRecord(path=path, dev=st.st_dev, ino=st.st_ino,
                                                  empty_only=True))
                self._save()

    def make_dir(self, parent: str, prefix: str) -> str:
        with signals_held():
            path = tempfile.mkdtemp(prefix=prefix, dir=os.path.realpath(parent))
            st = os.lstat(path)
            self.state.dirs.append(PathRecord(path=path, dev=st.st_dev, ino=st.st_ino))
            self._save()
        return path

    def preallocate(self, path: str, size: int) -> str:
        path = os.path.realpath(path)
        with signals_held():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                         0o600)
            st = os.fstat(fd)
            self.state.files.append(PathRecord(path=path, dev=st.st_dev, ino=st.st_ino))
            self._save()
        try:
            os.posix_fallocate(fd, 0, size)
        except OSError as err:
            raise DeviceProblem(f"cannot preallocate {size} bytes at {path}: {err.strerror} "
                                "(use --loop-size or TMPDIR)") from None
        finally:
            os.close(fd)
        return path

    def attach_loop(self, backing: str, *, direct_io: bool) -> str:
        st = os.stat(backing)
        # Recorded by the backing file's identity first: if we die between losetup and the
        # save, recovery still finds the device.
        entry = LoopRecord(backing=os.path.realpath(backing), dev=st.st_dev, ino=st.st_ino)
        self.state.loops.append(entry)
        self._save()
        with signals_held():
            result = run(argv.losetup_attach(backing, direct_io=direct_io), check=False,
                         timeout=30)
        if not result.ok:
            self.state.loops.remove(entry)
            self._save()
            line = result.first_error_line()
            if "could not find any free loop device" in line or "No such device" in line:
                raise DeviceProblem(f"no free loop device: {line}")
            raise ToolProblem(f"losetup failed: {line}")
        # The name losetup printed is only a name: another program may have re-bound that
        # device in between. The kernel says what it is bound to; until it says our file, the
        # name is not recorded (clean-up finds our device by the file's identity instead).
        named = result.stdout.strip()
        check_bound(named, backing, (st.st_dev, st.st_ino))
        with signals_held():
            entry.device = named
            self._save()
        return entry.device

    def check_loop(self, device: str) -> None:
        """DeviceProblem unless `device` is still bound to the backing file this run made for
        it (attach_loop): asked again once the device is held open, when it can no longer be
        re-bound."""
        for rec in self.state.loops:
            if rec.device == device:
                check_bound(device, rec.backing, (rec.dev, rec.ino))
                return
        raise DeviceProblem(f"refusing to use {printable(device)}: this run did not attach it")

    def mount(self, device: str, mountpoint: str, options: list[str]) -> None:
        mountpoint = os.path.realpath(mountpoint)
        entry = MountRecord(device=device, source=dev_name(os.stat(device).st_rdev),
                            mountpoint=mountpoint)
        self.state.mounts.append(entry)
        for rec in self.state.filesystems:
            if rec.device == device:
                rec.mounted = True
        self._save()
        with signals_held():
            result = run(argv.mount(device, mountpoint, options), check=False, timeout=60)
            mine, _ = _find_mount(self.proc, entry)
            if mine is not None:
                entry.mount_id = mine.mount_id
                self._save()
        if not result.ok:
            if mine is None:
                self.state.mounts.remove(entry)
                self._save()
            raise failure(f"mount -o {','.join(options) or 'defaults'} failed: "
                          f"{result.first_error_line()}")

    def umount(self, mountpoint: str) -> None:
        mountpoint = os.path.realpath(mountpoint)
        for entry in [m for m in self.state.mounts if m.mountpoint == mountpoint]:
            log: list[str] = []
            with signals_held():
                gone = _unmount(self.proc, entry, log)
                if gone:
                    self.state.mounts.remove(entry)
                    self._save()
            if gone:
                self._unmounted(entry.device)
            if not gone:
                raise ToolProblem(f"cannot unmount {mountpoint}: {'; '.join(log)}")

    def made_filesystem(self, device: str) -> None:
        """Record the test filesystem just made on a scratch device (not on our own loop
        device): a later run on the same device knows it for the dead run's, by its UUID."""
        if any(lo.device == device for lo in self.state.loops):
            return
        uuid = read_xfs_uuid(device)
        if uuid is None:
            return
        # Not fingerprinted yet: the mount comes next, and a run that dies before its first
        # unmount leaves a filesystem nobody can vouch for.
        self.state.filesystems = [FilesystemRecord(
            device=device, source=dev_name(os.stat(device).st_rdev), uuid=uuid, mounted=True)]
        self._save()

    def _unmounted(self, device: str) -> None:
        """The test filesystem on `device` was just unmounted by this run: what it is now is
        what this run left."""
        for rec in self.state.filesystems:
            if rec.device == device:
                rec.fingerprint = xfs_fingerprint(device) or ""
                rec.mounted = False
                self._save()
