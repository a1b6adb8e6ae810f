"""What a validation run creates on the host (temporary folders, backing files, loop devices,
mounts), recorded in a state file so that nothing outlives the run: the run undoes it on every path
(success, a failing tool, Ctrl-C, SIGTERM), and the next run removes what a SIGKILLed one left.

The state file lives in /run/xfs-advisor (a tmpfs: emptied by a reboot, which also drops every
loop device and mount it could name). XFS_ADVISOR_STATE_DIR moves it, for tests.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType

from advisor.errors import DeviceProblem, ToolProblem
from advisor.system import argv
from advisor.system.runner import run
from advisor.system.sysroot import SysRoot

STATE_DIR_ENV = "XFS_ADVISOR_STATE_DIR"
DEFAULT_STATE_DIR = "/run/xfs-advisor"


def state_dir() -> Path:
    return Path(os.environ.get(STATE_DIR_ENV) or DEFAULT_STATE_DIR)


def _process_start(proc: SysRoot, pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (start time in ticks): tells a live process from a reused pid."""
    text = proc.read(f"proc/{pid}/stat")
    if not text:
        return None
    after_name = text.rsplit(")", 1)[-1].split()
    return after_name[19] if len(after_name) > 19 else None


@dataclass
class RunState:
    """Everything one run has made, in creation order."""

    pid: int
    started: str | None
    dirs: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    loops: list[dict[str, str]] = field(default_factory=list)
    """[{"device": "/dev/loop3", "backing": "/var/tmp/.../scratch.img"}]"""
    mounts: list[dict[str, str]] = field(default_factory=list)
    """[{"device": "/dev/loop3", "mountpoint": "/var/tmp/.../mnt"}]"""


def _mounted(proc: SysRoot, mountpoint: str) -> bool:
    text = proc.read("proc/self/mountinfo") or ""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) > 4 and parts[4].replace("\\040", " ") == mountpoint:
            return True
    return False


def _loop_backing(device: str) -> str | None:
    """The backing file of an attached loop device (None: not attached)."""
    result = run(argv.losetup_list(), check=False, timeout=20)
    if not result.ok or not result.stdout.strip():
        return None
    for entry in json.loads(result.stdout).get("loopdevices", []):
        if entry.get("name") == device:
            back = entry.get("back-file")
            return str(back).removesuffix(" (deleted)") if back else ""
    return None


def _loops_backed_by(backing: str) -> list[str]:
    result = run(argv.losetup_list(), check=False, timeout=20)
    if not result.ok or not result.stdout.strip():
        return []
    return [str(e["name"]) for e in json.loads(result.stdout).get("loopdevices", [])
            if str(e.get("back-file") or "").removesuffix(" (deleted)") == backing]


def _kill_children(proc: SysRoot) -> None:
    """SIGTERM the fio runs this process started (a running fio keeps the filesystem busy).
    Only fio: in the TUI other workers' children share this parent."""
    me = str(os.getpid())
    for entry in proc.listdir("proc"):
        if not entry.isdigit():
            continue
        stat = proc.read(f"proc/{entry}/stat") or ""
        name = stat.partition("(")[2].rpartition(")")[0]
        if name == "fio" and stat.rsplit(")", 1)[-1].split()[1:2] == [me]:
            with contextlib.suppress(OSError):
                os.kill(int(entry), signal.SIGTERM)


def _unmount(proc: SysRoot, mountpoint: str, log: list[str]) -> None:
    for attempt in range(5):
        if not _mounted(proc, mountpoint):
            return
        result = run(argv.umount(mountpoint), check=False, timeout=60)
        if result.ok:
            log.append(f"unmounted {mountpoint}")
            return
        time.sleep(0.2 * (attempt + 1))
    if _mounted(proc, mountpoint):
        # Still busy (a process we do not own holds it): detach it from the tree now, the kernel
        # frees it when the last user goes.
        run(argv.umount(mountpoint, lazy=True), check=False, timeout=60)
        log.append(f"lazily unmounted {mountpoint} (it was busy)")


def _detach(device: str, backing: str, log: list[str]) -> None:
    current = _loop_backing(device)
    if current is None:
        return
    if backing and current and current != backing:
        log.append(f"left {device} alone: it now belongs to {current}")
        return
    for attempt in range(5):
        if run(argv.losetup_detach(device), check=False, timeout=30).ok:
            break
        time.sleep(0.2 * (attempt + 1))
    if _loop_backing(device) is None:
        log.append(f"detached {device}")
    else:
        log.append(f"{device} is still busy: set to detach itself when released")


def undo(state: RunState, proc: SysRoot) -> list[str]:
    """Undo what a run made, newest first. Never raises for one stubborn resource: it notes it."""
    log: list[str] = []
    for m in reversed(state.mounts):
        _unmount(proc, m["mountpoint"], log)
    for lo in reversed(state.loops):
        devices = [lo["device"]] if lo["device"] else _loops_backed_by(lo["backing"])
        for device in devices:
            _detach(device, lo["backing"], log)
    for f in reversed(state.files):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f)
            log.append(f"removed {f}")
    for d in reversed(state.dirs):
        if os.path.isdir(d) and not _mounted(proc, d):
            shutil.rmtree(d, ignore_errors=True)
            log.append(f"removed {d}")
    return log


def recover_leftovers(proc: SysRoot | None = None) -> list[str]:
    """Remove what dead runs left behind (their state files name it). Returns what was done."""
    proc = proc or SysRoot()
    directory = state_dir()
    done: list[str] = []
    for path in sorted(directory.glob("run-*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            state = RunState(**data)
        except (OSError, ValueError, TypeError):
            path.unlink(missing_ok=True)
            continue
        if state.pid != os.getpid() and _process_start(proc, state.pid) == state.started:
            continue  # that run is alive: not ours to touch
        actions = undo(state, proc)
        path.unlink(missing_ok=True)
        if actions:
            done.append(f"a dead run (pid {state.pid}) left: " + "; ".join(actions))
    return done


def failure(message: str) -> ToolProblem | DeviceProblem:
    """A failed mkfs.xfs or mount: the device's problem (exit 3) when it was busy, held by
    something else (another run, a mount), else the tool's (exit 4)."""
    if "Device or resource busy" in message:
        return DeviceProblem(f"{message} (the device is busy: another program or another "
                             "validate run holds it)")
    return ToolProblem(message)


class Terminated(KeyboardInterrupt):
    """SIGTERM, turned into an exception so that every `finally` runs."""


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises Terminated (a KeyboardInterrupt) in the main thread."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Terminated("terminated")

    try:
        previous: Callable[[int, FrameType | None], object] | int | None = signal.signal(
            signal.SIGTERM, handler)
    except ValueError:  # not the main thread: the caller handles termination
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class Resources:
    """The run's ledger: every resource is written to the state file before it exists, and
    removed from it after it is gone, so a SIGKILL at any point leaves a complete list."""

    def __init__(self, proc: SysRoot | None = None) -> None:
        self.proc = proc or SysRoot()
        pid = os.getpid()
        self.state = RunState(pid=pid, started=_process_start(self.proc, pid))
        directory = state_dir()
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ToolProblem(
                f"cannot create the state folder {directory}: {err.strerror}") from None
        self.path = directory / f"run-{pid}.json"
        self.log: list[str] = []

    def _save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self.state)), encoding="utf-8")
        os.replace(tmp, self.path)

    def __enter__(self) -> Resources:
        self._save()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        _kill_children(self.proc)
        self.log += undo(self.state, self.proc)
        self.path.unlink(missing_ok=True)

    def make_dir(self, parent: str, prefix: str) -> str:
        import tempfile

        path = tempfile.mkdtemp(prefix=prefix, dir=parent)
        self.state.dirs.append(path)
        self._save()
        return path

    def preallocate(self, path: str, size: int) -> str:
        self.state.files.append(path)
        self._save()
        try:
            with open(path, "wb") as f:
                os.posix_fallocate(f.fileno(), 0, size)
        except OSError as err:
            raise DeviceProblem(f"cannot preallocate {size} bytes at {path}: {err.strerror} "
                                "(use --loop-size or TMPDIR)") from None
        return path

    def attach_loop(self, backing: str, *, direct_io: bool) -> str:
        # Record the backing file first: if we die between losetup and the save, recovery still
        # finds the device by its backing file.
        entry = {"device": "", "backing": backing}
        self.state.loops.append(entry)
        self._save()
        result = run(argv.losetup_attach(backing, direct_io=direct_io), check=False, timeout=30)
        if not result.ok:
            self.state.loops.remove(entry)
            self._save()
            line = result.first_error_line()
            if "could not find any free loop device" in line or "No such device" in line:
                raise DeviceProblem(f"no free loop device: {line}")
            raise ToolProblem(f"losetup failed: {line}")
        entry["device"] = result.stdout.strip()
        self._save()
        return entry["device"]

    def mount(self, device: str, mountpoint: str, options: list[str]) -> None:
        entry = {"device": device, "mountpoint": mountpoint}
        self.state.mounts.append(entry)
        self._save()
        result = run(argv.mount(device, mountpoint, options), check=False, timeout=60)
        if not result.ok:
            self.state.mounts.remove(entry)
            self._save()
            raise failure(f"mount -o {','.join(options) or 'defaults'} failed: "
                          f"{result.first_error_line()}")

    def umount(self, mountpoint: str) -> None:
        log: list[str] = []
        _unmount(self.proc, mountpoint, log)
        if _mounted(self.proc, mountpoint):
            raise ToolProblem(f"cannot unmount {mountpoint}")
        self.state.mounts = [m for m in self.state.mounts if m["mountpoint"] != mountpoint]
        self._save()
