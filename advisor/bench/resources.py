"""The acquirer: what a validation run creates on the host (temporary folders, backing files,
loop devices, mounts, test filesystems on a scratch device), each recorded in the run journal
(advisor.bench.journal) before it exists, so that nothing outlives the run: the run undoes it on
every path (success, a failing tool, Ctrl-C, SIGTERM, SIGHUP, SIGQUIT; advisor.bench.cleanup),
and the next run removes what a SIGKILLed one left (advisor.bench.cleanup.recover_leftovers).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from itertools import count

from advisor.bench.cleanup import (
    check_bound,
    find_mount,
    remains,
    stop_our_fio,
    undo,
    unmount,
)
from advisor.bench.journal import (
    FilesystemRecord,
    LoopRecord,
    MountRecord,
    PathRecord,
    RunState,
    active_runs,
    open_state_dir,
    state_dir,
    write_state,
)
from advisor.errors import DeviceProblem, ToolProblem
from advisor.signals import signals_held
from advisor.system import argv
from advisor.system.loopdev import dev_name
from advisor.system.openers import shown as printable
from advisor.system.processes import process_start
from advisor.system.runner import run
from advisor.system.superblock import read_xfs_uuid, xfs_fingerprint
from advisor.system.sysroot import SysRoot


def failure(message: str) -> ToolProblem | DeviceProblem:
    """A failed mkfs.xfs or mount: the device's problem (exit 3) when it was busy, held by
    something else (another run, a mount), else the tool's (exit 4)."""
    if "Device or resource busy" in message:
        return DeviceProblem(f"{message} (the device is busy: another program or another "
                             "validate run holds it)")
    return ToolProblem(message)


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
        fd = open_state_dir(directory, create=True)
        assert fd is not None  # created above
        self._dir_fd = fd
        self.name = f"run-{pid}-{next(_serial)}.json"
        self.path = directory / self.name
        self.remaining = ""
        """What clean-up could not undo, for people (its records stay for a later run)."""

    def _save(self) -> None:
        write_state(self._dir_fd, self.name, self.state)

    def __enter__(self) -> Resources:
        try:
            self._save()
            active_runs.add(str(self.path))
        except BaseException:
            # Not entered, so no __exit__: a signal that lands once the file exists (or a
            # failed write) must not leave it for a later run to find.
            self.close()
            raise
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
                    with contextlib.suppress(FileNotFoundError):  # never written
                        os.unlink(self.name, dir_fd=self._dir_fd)
                else:
                    self._save()
                    self.remaining = (f"{'; '.join(log)}; still there: {remains(self.state)} "
                                      f"(kept in {self.path}: the next run removes it)")
                    if self.say:
                        self.say(f"could not remove everything: {self.remaining}")
        finally:
            active_runs.discard(str(self.path))
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
            mine, _ = find_mount(self.proc, entry)
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
                gone = unmount(self.proc, entry, log)
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
