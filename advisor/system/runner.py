"""Every external command goes through here: argv lists (never a shell string), a timeout, and
stderr captured for the error message. Built on the standard library's subprocess: `sh` would
cost 20-45 ms of import (asyncio, importlib.metadata) and a fork in Python per command, most of
a proposal's start-up, for features the runner does not use."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

from advisor.errors import ToolProblem
from advisor.signals import STOPPING_SIGNALS, install_handlers, restore_handlers

DEFAULT_TIMEOUT = 60.0
#: How long a command killed because the advisor is ending is waited for (it is SIGKILLed; only
#: a process stuck in the kernel takes longer).
KILLED_WAIT = 2.0
#: A waiter re-checks whether the command is done at least this often (Process.wait); it wakes at
#: once when the command is done, unless another waiter took the wake-up.
WAIT_SLICE = 1.0

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
    handler called once the block is done. A command is started in one block: an interrupt
    raised halfway through (between the fork and the moment the process is known to the runner;
    or, for a command in its own group, forked in Python, inside the interpreter's at-fork
    callbacks, where it is printed as "Exception ignored" and dropped) would lose the process or
    the interrupt. Deferred, it is raised right after the start (_start), where the command is
    known, and `finally` and main() see it. Signals
    without a Python handler (SIG_DFL, SIG_IGN) are the kernel's business and stay as they
    are."""
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


class Done:
    """A flag another thread sets once, which the main thread (where Ctrl-C is raised) waits
    for on a bare lock, not on a threading.Event (Process's docstring says why). The lock is
    only a wake-up: held until set(), which sets the flag first and then releases it, once. A
    waiter never releases it, so an interrupt landing just after the lock is taken (before the
    waiter knows) loses nothing, and any other waiter sees the flag within a WAIT_SLICE."""

    __slots__ = ("_set", "_wake")

    def __init__(self) -> None:
        self._set = False
        self._wake = threading.Lock()
        self._wake.acquire()

    def set(self) -> None:
        self._set = True
        self._wake.release()

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float | None = None) -> bool:
        """Until set() (True) or for `timeout` seconds (False)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._set:
            left = WAIT_SLICE if deadline is None else deadline - time.monotonic()
            if left <= 0:
                return False
            self._wake.acquire(timeout=min(left, WAIT_SLICE))
        return True


def start_thread(thread: threading.Thread) -> None:
    """Start `thread` with the ending signals deferred (signals_deferred): Thread.start waits
    in threading's Condition.wait until the thread runs, where an interrupt can leave a lock
    released by the wrong thread (see Process). The wait is short: the new thread's start."""
    with signals_deferred():
        thread.start()


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


class Process:
    """A started command, its output collected by a thread as it runs (a command that fills a
    pipe is never blocked by a reader that waits for its exit first). That thread also kills it
    at its timeout: no timer thread is started per command.

    The thread that waits for it (the main one, where Ctrl-C is raised) waits on a bare lock,
    not on a threading.Event: an Event's wait is Python code (Condition.wait) that takes its
    lock back in a `finally`, and a second interrupt landing there left the lock released by
    the wrong thread (CPython gh-118433): the other thread's set() then failed ("cannot notify
    on un-acquired lock"; a timer thread died so in its start-up), or the waiter's own release
    raised RuntimeError in place of the interrupt. A lock's acquire, in C, is either cut before
    it takes the lock or not at all."""

    def __init__(self, argv: list[str], input: str | None, cwd: str | None,
                 own_group: bool, shielded: bool = False, timeout: float | None = None
                 ) -> None:
        # Its own group is made in the child before it runs the command (process_group=0, no
        # Python in the child: safe beside other threads, unlike a preexec_fn). Until then the
        # child is in the advisor's group, with default handlers: a Ctrl-C sent to the whole
        # group in that instant would kill it. Clean-up's commands (`shielded`) must not die
        # so (its `losetup` died of the second of a stream of Ctrl-Cs, 2 runs in 4): the ending
        # signals are blocked in this thread while it starts, the child inherits the mask, and
        # a Ctrl-C meant for the advisor waits until the start is done (or lands in another
        # thread). The command keeps them blocked: it is out of the terminal's reach anyway,
        # and a kill is SIGKILL. Not for a Background command: perf stat ends on SIGINT.
        blocked = (signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING_SIGNALS) if shielded
                   else None)
        try:
            popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=command_env(),
                cwd=cwd,
                process_group=0 if own_group else None,
            )
        finally:
            if blocked is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        self.pid = popen.pid
        self._popen: subprocess.Popen[bytes] | None = popen
        self._returncode: int | None = None
        self._output: tuple[bytes, bytes] = (b"", b"")
        #: Killed at its timeout (by the reader).
        self.timed_out = False
        #: Set once the command has exited and its output is read.
        self._exited = Done()
        threading.Thread(target=self._collect, args=(popen, input, timeout), daemon=True,
                         name=f"output of {os.path.basename(argv[0])}").start()

    def _collect(self, popen: subprocess.Popen[bytes], input: str | None,
                 timeout: float | None) -> None:
        try:
            try:
                self._output = popen.communicate(None if input is None else input.encode(),
                                                 timeout=timeout)
            except subprocess.TimeoutExpired:
                self.timed_out = True
                with contextlib.suppress(ProcessLookupError, OSError):
                    self.kill()
                self._output = popen.communicate()  # what it wrote before; reaped
        finally:
            self._returncode = popen.returncode
            # The Popen is let go here, so that its finalizer (Python code) runs in this thread:
            # in the main one, a Ctrl-C landing inside it would be printed and dropped.
            self._popen = None
            self._exited.set()

    def is_alive(self) -> bool:
        return not self._exited.is_set()

    def kill(self) -> None:
        """SIGKILL to the command and every process below it, unless it has been reaped (the
        reader reaps it). The processes it started go too (fio's jobs, xfs_info's xfs_db): one
        left running would hold the output pipes, so the command would not be seen to end
        (a timed-out fio ran on for its jobs' whole runtime), and keep its files open (a
        scratch mount stays busy). Each is stopped before its children are listed, so none
        starts another unseen. By its pid, as Popen.kill() does, without taking a reference to
        the Popen: taken here, the last one could be dropped in the caller's thread, the killed
        process's reader being done."""
        if self._exited.is_set():
            return
        os.kill(self.pid, signal.SIGSTOP)
        tree = [self.pid]
        try:
            for pid in tree:  # grows as it goes: breadth-first
                for child in _children(pid):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(child, signal.SIGSTOP)
                        tree.append(child)
        finally:  # interrupted or not, none is left stopped
            for pid in tree:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> None:
        """Until the command has exited and its output is read; TimeoutError after `timeout`
        seconds. Interruptible: Ctrl-C (and an ending signal) is raised here at once, and
        leaves nothing half-done (Done)."""
        if not self._exited.wait(timeout):
            raise TimeoutError(f"pid {self.pid} still running after {timeout}s")

    @property
    def exit_code(self) -> int:
        """The exit status, or minus the signal that ended it (once wait() has returned)."""
        return -1 if self._returncode is None else self._returncode

    @property
    def stdout(self) -> str:
        return _text(self._output[0])

    @property
    def stderr(self) -> str:
        return _text(self._output[1])


def _children(pid: int) -> list[int]:
    """The processes `pid` started that are still its own (/proc/PID/task/*/children: each
    child is listed under the thread that started it)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as f:
                found += [int(p) for p in f.read().split()]
        except (OSError, ValueError):
            continue
    return found


def _spawn(exe: str, argv: list[str], input: str | None, cwd: str | None,
           own_group: bool, shielded: bool = False, timeout: float | None = None) -> Process:
    """Start the command in the background, in command_env(). A command ended by a signal
    (SIGKILL at its timeout, or the terminal's SIGINT or SIGHUP, which reaches the whole
    process group) is a failed result, not an exception: clean-up retries it."""
    return Process([exe, *argv[1:]], input, cwd, own_group, shielded, timeout)


def _start(exe: str, argv: list[str], input: str | None, cwd: str | None, own_group: bool, *,
           keep: bool, timeout: float | None = None) -> Process:
    """_spawn, with the ending signals deferred until the command is started (signals_deferred).
    One held meanwhile is raised here, before the caller knows the command: it is killed, with
    what it started, and reaped, not left running on its own; unless `keep` (clean-up's
    commands, which must finish: started shielded from the ending signals, see Process)."""
    started: list[Process] = []
    try:
        with signals_deferred():
            started.append(_spawn(exe, argv, input, cwd, own_group, keep, timeout))
    except BaseException:
        if started and not keep:
            with contextlib.suppress(ProcessLookupError, OSError):
                started[0].kill()
            with contextlib.suppress(Exception):
                started[0].wait(timeout=KILLED_WAIT)
        raise
    return started[0]


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
    # The reader kills the command at the timeout, and wait() returns as soon as it exits.
    try:
        proc = _start(exe, argv, input, cwd, own_group, keep=own_group, timeout=timeout or None)
    except OSError as err:  # found by which() but not runnable (permissions, a bad binary)
        raise ToolProblem(f"{argv[0]}: cannot run {exe}: {err.strerror or err}") from None
    # From here an interrupt may land anywhere: all of it is in the `try`.
    try:
        if not own_group:
            _running[id(proc)] = proc
            if _stopping.is_set():  # the advisor is ending: stop_children may have missed it
                with contextlib.suppress(ProcessLookupError, OSError):
                    proc.kill()
        proc.wait()
    except BaseException:
        # Interrupted (an ending signal raised in this thread): the command is not left
        # running on its own, unless it is clean-up, kept out of reach on purpose (own_group).
        if not own_group:
            with contextlib.suppress(ProcessLookupError, OSError):
                proc.kill()
            # Reaped before the signal goes on: a command still exiting holds what it had
            # open (a loop device that clean-up is about to detach is busy until then).
            with contextlib.suppress(Exception):
                proc.wait(timeout=KILLED_WAIT)
        raise
    finally:
        _running.pop(id(proc), None)
    if proc.timed_out:
        raise ToolProblem(f"{' '.join(argv)} timed out after {timeout:g}s")
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
        self._proc = _start(exe, argv, None, None, True, keep=False)

    @property
    def pid(self) -> int:
        return int(self._proc.pid)

    def running(self) -> bool:
        return bool(self._proc.is_alive())

    def wait(self, timeout: float) -> Result:
        """Its result once it exits; after `timeout` seconds it is stopped first."""
        try:
            self._proc.wait(timeout)
        except TimeoutError:
            self.stop()
            self._proc.wait()
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
