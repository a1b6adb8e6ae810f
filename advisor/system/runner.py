"""Every external command goes through here: argv lists (never a shell string), a timeout, and
stderr captured for the error message. Built on `sh`."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

import sh

from advisor.errors import ToolProblem
from advisor.signals import install_handlers, restore_handlers

DEFAULT_TIMEOUT = 60.0
#: How long a command killed because the advisor is ending is waited for (it is SIGKILLed; only
#: a process stuck in the kernel takes longer).
KILLED_WAIT = 2.0

#: The Debian package of each external command the tool runs, for a "not found" message.
DEBIAN_PACKAGES = {
    **dict.fromkeys(("mkfs.xfs", "xfs_db", "xfs_info", "xfs_io", "xfs_admin", "xfs_growfs",
                     "xfs_repair", "xfs_spaceman"), "xfsprogs"),
    **dict.fromkeys(("losetup", "lsblk", "blkid", "wipefs", "blockdev", "findmnt", "fallocate",
                     "fstrim"), "util-linux"),
    **dict.fromkeys(("mount", "umount"), "mount"),
    **dict.fromkeys(("mkfs.ext4", "mke2fs"), "e2fsprogs"),
    "fio": "fio", "tmux": "tmux", "sync": "coreutils",
}


@dataclass(frozen=True)
class Result:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def first_error_line(self) -> str:
        for line in (self.stderr or self.stdout).splitlines():
            if line.strip():
                return line.strip()
        return f"exit status {self.returncode}"


def which(tool: str) -> str | None:
    """Path of a tool, also looking in the sbin directories a non-root PATH may lack."""
    return shutil.which(tool) or shutil.which(tool, path="/usr/local/sbin:/usr/sbin:/sbin")


def _text(output: str | bytes) -> str:
    """A tool's output as text: bytes that are not UTF-8 (a file name, a device's model string)
    become U+FFFD instead of ending the run."""
    return output if isinstance(output, str) else output.decode("utf-8", "replace")


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Within the block (in the main thread), a signal with a Python handler is noted, and its
    handler called once the block is done. sh forks in Python, and the interpreter runs
    Python callbacks around a fork (logging's _acquireLock/_releaseLock): an exception a
    handler raises inside one is printed as "Exception ignored in: <function _releaseLock>"
    and dropped, so a Ctrl-C there was lost (the run went on and exited 0) and could leave
    logging's lock held. Deferred, it is raised right after the fork, where `finally` and
    main() see it. Signals without a Python handler (SIG_DFL, SIG_IGN) are the kernel's
    business and stay as they are."""
    if threading.current_thread() is not threading.main_thread():
        yield  # handlers run only in the main thread: nothing to defer in a worker
        return
    caught: list[tuple[int, FrameType | None]] = []

    def note(signum: int, frame: FrameType | None) -> None:
        caught.append((signum, frame))

    # The stopping signals' Python handlers raise (KeyboardInterrupt, Terminated).
    previous = install_handlers(note, python_only=True)
    try:
        yield
    finally:
        restore_handlers(previous)
        if caught:  # the first one, as it would have been handled without the deferral
            first, frame = caught[0]
            previous[first](first, frame)


#: Commands running now (in any thread), but for clean-up's own-group ones: stop_children().
_running: dict[int, Any] = {}
#: Set by stop_children: a command a worker thread starts from then on is killed at once.
_stopping = threading.Event()


def stop_children() -> None:
    """Kill every command still running, but for clean-up's: called when the process is ended
    (Ctrl-C, SIGTERM, SIGHUP), so that a worker thread waiting on one (a proposal's mkfs.xfs dry
    run of the defaults) returns at once and removes its temporary files, and the interpreter,
    which waits for its threads, exits. A worker that had just started a command and not yet
    listed it sees the flag once it has (the flag is set before the list is read), so no
    command outlives the advisor (one did, under load, holding its output pipes for a minute)."""
    _stopping.set()
    for proc in list(_running.values()):
        with contextlib.suppress(ProcessLookupError, OSError):
            proc.kill()


#: The locale commands run in: their messages untranslated, as the code matches them ("Device or
#: resource busy", "could not find any free loop device"), whatever the user's LANG, LC_* or
#: LANGUAGE say. C.UTF-8 rather than C, so that a non-ASCII name stays as it is (under C,
#: losetup prints /tmp/dätä.img as /tmp/d\xc3\xa4t\xc3\xa4.img); LANGUAGE goes, because
#: gettext follows it under any locale but C. Where C.UTF-8 is missing, the tools fall back to C.
COMMAND_LOCALE = "C.UTF-8"


def command_env() -> dict[str, str]:
    """The environment a command runs in: the advisor's own, with COMMAND_LOCALE for every
    locale category."""
    env = {k: v for k, v in os.environ.items() if k != "LANGUAGE"}
    env["LC_ALL"] = COMMAND_LOCALE
    return env


def _spawn(cmd: sh.Command, argv: list[str], input: str | None, cwd: str | None,
           own_group: bool) -> Any:
    """Start the command in the background (sh forks and execs it), in command_env()."""
    return cmd(
        *argv[1:],
        _bg=True,
        _env=command_env(),
        # A command ended by a signal (SIGKILL from the timer, or the terminal's SIGINT or
        # SIGHUP, which reaches the whole process group) is a failed result, not an
        # exception: clean-up retries it.
        _ok_code=[*range(256), *(-int(s) for s in signal.valid_signals() if 0 < s < 65)],
        _in=input,
        _cwd=cwd,
        _new_group=own_group,
        _return_cmd=True,
        _tty_out=False,
        _encoding="utf-8",
        _decode_errors="replace",
    )


def run(
    argv: list[str],
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
    check: bool = True,
    input: str | None = None,
    cwd: str | None = None,
    own_group: bool = False,
) -> Result:
    """Run argv and return its output. With check, a non-zero exit raises ToolProblem naming the
    command and the first line of its stderr; a missing tool always raises ToolProblem.
    `own_group`: in a process group of its own, out of reach of the terminal's Ctrl-C and
    hang-up (clean-up's umount and losetup must not die of a second Ctrl-C)."""
    if not argv:
        raise ValueError("empty argv")
    exe = which(argv[0])
    if exe is None:
        package = DEBIAN_PACKAGES.get(os.path.basename(argv[0]))
        raise ToolProblem(f"{argv[0]} not found: install it"
                          + (f" (Debian: apt-get install {package})" if package else ""))
    cmd = sh.Command(exe)
    try:
        # sh's own timeouts poll in 0.1 s steps, adding ~100 ms to every command: a timer kills
        # the command instead, and wait() returns as soon as it exits.
        with signals_deferred():
            proc = _spawn(cmd, argv, input, cwd, own_group)
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            with contextlib.suppress(ProcessLookupError, OSError):
                proc.kill()

        if not own_group:
            _running[id(proc)] = proc
            if _stopping.is_set():  # the advisor is ending: stop_children may have missed it
                with contextlib.suppress(ProcessLookupError, OSError):
                    proc.kill()

        timer = threading.Timer(timeout, kill) if timeout else None
        if timer:
            timer.daemon = True
            timer.start()
        try:
            proc.wait()
        except BaseException:
            # Interrupted while waiting (an ending signal raised in this thread): the command
            # is not left running on its own, unless it is clean-up, kept out of reach on
            # purpose (own_group).
            if not own_group:
                kill()
                # Reaped before the signal goes on: a command still exiting holds what it had
                # open (a loop device that clean-up is about to detach is busy until then).
                with contextlib.suppress(Exception):
                    proc.wait(timeout=KILLED_WAIT)
            raise
        finally:
            _running.pop(id(proc), None)
            if timer:
                timer.cancel()
        if timed_out.is_set():
            raise sh.TimeoutException(None, " ".join(argv))
    except sh.TimeoutException as exc:
        raise ToolProblem(f"{' '.join(argv)} timed out after {timeout:g}s") from exc
    result = Result(
        argv=tuple(argv),
        returncode=int(proc.exit_code),
        stdout=_text(proc.stdout),
        stderr=_text(proc.stderr),
    )
    if check and not result.ok:
        raise ToolProblem(f"{argv[0]} failed: {result.first_error_line()}")
    return result


class Background:
    """A command running beside the advisor (`perf stat` during an observation), in a process
    group of its own: the terminal's Ctrl-C does not reach it; stop() ends the whole group
    (SIGINT, then SIGKILL if it lingers), so nothing is left running."""

    def __init__(self, argv: list[str]) -> None:
        exe = which(argv[0])
        if exe is None:
            raise ToolProblem(f"{argv[0]} not found")
        self.argv = argv
        with signals_deferred():
            self._proc = _spawn(sh.Command(exe), argv, None, None, True)

    @property
    def pid(self) -> int:
        return int(self._proc.pid)

    def running(self) -> bool:
        return bool(self._proc.is_alive())

    def wait(self, timeout: float) -> Result:
        """Its result once it exits; after `timeout` seconds it is stopped first."""
        done = threading.Event()

        def wait() -> None:
            self._proc.wait()
            done.set()

        waiter = threading.Thread(target=wait, daemon=True)
        waiter.start()
        if not done.wait(timeout):
            self.stop()
        waiter.join()
        return Result(argv=tuple(self.argv), returncode=int(self._proc.exit_code),
                      stdout=_text(self._proc.stdout), stderr=_text(self._proc.stderr))

    def stop(self, grace: float = 5.0) -> None:
        """SIGINT to its process group (perf stat prints its counts and ends its workload), then
        SIGKILL after `grace` seconds."""
        for signum, wait in ((signal.SIGINT, grace), (signal.SIGKILL, grace)):
            if not self.running():
                return
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signum)
            deadline = time.monotonic() + wait
            while self.running() and time.monotonic() < deadline:
                time.sleep(0.02)
