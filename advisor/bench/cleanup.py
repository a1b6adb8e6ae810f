"""Clean-up and recovery: undoing what a validation run made, one kind of resource at a time,
as far as each thing is still what the run made (advisor.bench.journal's records carry the
identity); reading the host for it (/proc liveness, mountinfo, loop bindings); and recovery after
a killed run, from the state files it left.

Paths are compared after mountinfo's escapes are undone, so a symlinked, relative or oddly named
--loop-dir cannot hide a mount from clean-up.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from advisor.bench.journal import (
    FilesystemRecord,
    Ignored,
    LoopRecord,
    MountRecord,
    PathRecord,
    RunState,
    active_runs,
    open_state_dir,
    read_state,
    state_dir,
    untrusted,
    write_state,
)
from advisor.errors import DeviceProblem, ToolProblem
from advisor.inspect.parsers import unescape_mount_path
from advisor.models.device import Device
from advisor.signals import signals_held
from advisor.system import argv
from advisor.system.loopdev import dev_name
from advisor.system.openers import shown as printable
from advisor.system.processes import alive
from advisor.system.runner import run
from advisor.system.superblock import read_xfs_uuid, xfs_fingerprint
from advisor.system.sysroot import SysRoot

# ---- reading the host ----

def _same_name(recorded: str, shown: str) -> bool:
    """mountinfo is read as UTF-8 with replacement: compare the recorded path the same way."""
    return os.fsencode(recorded).decode("utf-8", "replace") == shown


@dataclass(frozen=True)
class LiveMount:
    mount_id: int
    parent_id: int
    source: str
    mountpoint: str


def _mounts(proc: SysRoot) -> list[LiveMount]:
    found = []
    for line in (proc.read("proc/self/mountinfo") or "").splitlines():
        fields = line.split()
        if len(fields) > 4 and fields[0].isdigit() and fields[1].isdigit():
            found.append(LiveMount(int(fields[0]), int(fields[1]), fields[2],
                                unescape_mount_path(fields[4])))
    return found


def find_mount(proc: SysRoot, rec: MountRecord) -> tuple[LiveMount | None, bool]:
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

#: How unmount's log says a busy mount was detached from the tree only (undo reads it back).
LAZILY_UNMOUNTED = "lazily unmounted"


def unmount(proc: SysRoot, rec: MountRecord, log: list[str]) -> bool:
    for attempt in range(5):
        mine, covered = find_mount(proc, rec)
        if mine is None:
            return True
        if covered:
            log.append(f"left {rec.mountpoint} mounted: something else is mounted over it")
            return False
        result = run(argv.umount(rec.mountpoint), check=False, timeout=60, own_group=True)
        if result.ok and find_mount(proc, rec)[0] is None:
            log.append(f"unmounted {rec.mountpoint}")
            return True
        time.sleep(0.2 * (attempt + 1))
    # Still busy (a process we do not own holds it): detach it from the tree now, the kernel
    # frees it when the last user goes.
    result = run(argv.umount(rec.mountpoint, lazy=True), check=False, timeout=60,
                 own_group=True)
    if find_mount(proc, rec)[0] is None:
        log.append(f"{LAZILY_UNMOUNTED} {rec.mountpoint} (it was busy: the kernel frees it when "
                   "its last user goes)")
        return True
    log.append(f"{rec.mountpoint} is still mounted ({result.first_error_line()})")
    return False


#: Seconds clean-up waits for a loop device the kernel set to detach itself once released
#: (`losetup -d` on an open one): a command the ending run killed (mkfs.xfs, the guard's
#: probes, fio) may still be exiting with it open. 3 s was too short on a loaded machine (load
#: ~17: a run ended by SIGQUIT still held it then, and kept its state file for the next run).
#: Not waited for when a mount was lazily unmounted: its filesystem holds the device until its
#: last user goes, which no wait here can hasten.
DETACH_WAIT = 10.0


def _detach(rec: LoopRecord, log: list[str], wait: float = DETACH_WAIT) -> bool:
    devices = _loops_of(rec)
    for device in devices:
        for attempt in range(5):
            if run(argv.losetup_detach(device), check=False, timeout=30, own_group=True).ok:
                break
            time.sleep(0.2 * (attempt + 1))
    remaining = _loops_of(rec)
    deadline = time.monotonic() + wait
    while remaining and time.monotonic() < deadline:
        time.sleep(0.2)
        remaining = _loops_of(rec)
    for device in devices:
        if device in remaining:
            log.append(f"{device} is still attached (busy: set to detach itself when released)")
        else:
            log.append(f"detached {device}")
    return not remaining


def _still_made(rec: PathRecord, kind: Callable[[int], bool], what: str,
                log: list[str]) -> bool:
    """Whether `rec.path` is still what the run made there (same device, inode and `kind` of
    file): gone, or something else now (said in `log`), it is not the run's to remove."""
    try:
        st = os.lstat(rec.path)
    except FileNotFoundError:
        return False
    if (st.st_dev, st.st_ino) != (rec.dev, rec.ino) or not kind(st.st_mode):
        log.append(f"left {rec.path} alone: it is not the {what} this tool made")
        return False
    return True


def _remove_file(rec: PathRecord, log: list[str]) -> bool:
    if not _still_made(rec, stat.S_ISREG, "file", log):
        return True
    os.unlink(rec.path)
    log.append(f"removed {rec.path}")
    return True


def _remove_dir(proc: SysRoot, rec: PathRecord, log: list[str]) -> bool:
    if not _still_made(rec, stat.S_ISDIR, "folder", log):
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
        state.mounts = _still_there(state.mounts, lambda m: unmount(proc, m, log), log)
        wait = 0.0 if any(line.startswith(LAZILY_UNMOUNTED) for line in log) else DETACH_WAIT
        state.loops = _still_there(state.loops, lambda lo: _detach(lo, log, wait), log)
        state.files = _still_there(state.files, lambda f: _remove_file(f, log), log)
        state.dirs = _still_there(state.dirs, lambda d: _remove_dir(proc, d, log), log)
        left: dict[str, str] = {}
        for fs in state.filesystems:
            left.update(_note_filesystem(fs, log))
        state.filesystems = []
    return log, left


def remains(state: RunState) -> str:
    records: list[MountRecord | LoopRecord | PathRecord] = [
        *state.mounts, *state.loops, *state.files, *state.dirs]
    return ", ".join(r.name() for r in records)


@dataclass
class Recovery:
    """What recovery found."""

    done: list[str] = field(default_factory=list)
    """One line per dead run: what it left and what became of it."""
    notes: list[str] = field(default_factory=list)
    """State files ignored, and why."""
    test_filesystems: dict[str, str] = field(default_factory=dict)
    """Test filesystems dead runs left on scratch devices: {major:minor: uuid}."""


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
    dir_fd = open_state_dir(directory, create=False)
    if dir_fd is None:
        return found
    try:
        for name in sorted(os.listdir(dir_fd)):
            if name.startswith("run-") and name.endswith(".json.tmp"):
                _sweep_unfinished(proc, dir_fd, directory, name, found)
                continue
            if not (name.startswith("run-") and name.endswith(".json")) \
                    or str(directory / name) in active_runs:
                continue
            try:
                state = read_state(dir_fd, name)
            except Ignored as ignored:
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
    why = untrusted(st, "it") if stat.S_ISREG(st.st_mode) else "it is not a regular file"
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
        write_state(dir_fd, name, state)
        actions.append(f"still there: {remains(state)} (kept for the next run)")
    if actions:
        found.done.append(f"a dead run (pid {state.pid}) left: " + "; ".join(actions))

