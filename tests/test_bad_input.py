"""Bad input of every kind: one line on stderr, the documented exit code (2 for bad
input), no traceback, no hang (each run has a timeout), and nothing made on the host.

Every run goes through a fresh interpreter, as a user's shell would start it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, require_root_tools, sh
from tests.inspect.sysfs_builder import Dev, write_tree

HOST = str(REPO / "tests" / "engine" / "data" / "hosts" / "nvme-100g.json")
GIB = 1 << 30


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "XFS_ADVISOR_STATE_DIR": str(tmp_path / "state"),
           "XFS_ADVISOR_CALIBRATION": str(tmp_path / "calibration.json"), **extra}
    env.pop("XFS_ADVISOR_DEBUG", None)
    return env


def cli(tmp_path: Path, *args: str, timeout: float = 60, env: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True,
                          text=True, cwd=REPO, env=env or _env(tmp_path), timeout=timeout,
                          stdin=subprocess.DEVNULL)


def one_line(proc: subprocess.CompletedProcess[str], code: int, needle: str) -> str:
    """The run ended with `code` and one line on stderr holding `needle`; that line."""
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert needle in lines[0], lines[0]
    return lines[0]


def nothing_made(tmp_path: Path) -> None:
    """No work folder, no state folder, no loop device over a file of this test, no XFS mounted
    below it (the test's own tmpfs mounts are not the run's)."""
    assert not (tmp_path / "work").exists()
    assert not (tmp_path / "state").exists()
    assert str(tmp_path) not in sh("losetup", "-a", check=False).stdout
    assert not [m for m in Path("/proc/mounts").read_text().splitlines()
                if str(tmp_path) in m and " xfs " in m]


def validate(tmp_path: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return cli(tmp_path, "validate", "--loop-dir", str(tmp_path / "work"), "--loop-size", "1GiB",
               *args, timeout=timeout)


# ---- validate: numbers and names, refused before anything is made ----

@pytest.mark.parametrize(("args", "needle"), [
    (("--budget", "inf"), "--budget"),
    (("--budget", "nan"), "--budget"),
    (("--budget", "1e308"), "--budget"),
    (("--budget", "-1"), "--budget"),
    (("--rounds", "99999999999"), "--rounds must be 4 to 200"),
    (("--rounds", "3"), "--rounds must be 4 to 200"),
    (("--loop-size", "10000000PiB"), "8EiB"),
    (("--loop-size", "9" * 5000), "too long to be a size"),
    (("--device", ""), "--device is empty"),
    (("--device", "sd\x1b[2Ja"), "control characters"),
    (("--sysroot", "/tmp"), "--sysroot cannot apply"),
])
def test_validate_refuses_bad_numbers_and_names(tmp_path: Path, args: tuple[str, ...],
                                                needle: str) -> None:
    started = time.monotonic()
    one_line(validate(tmp_path, *args, timeout=30), 2, needle)
    assert time.monotonic() - started < 20  # --rounds 99999999999 allocated nothing first
    nothing_made(tmp_path)


def test_validate_refuses_a_device_name_that_is_not_utf8(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "advisor", "validate", "--device", b"\xff"],
                          capture_output=True, text=True, cwd=REPO, env=_env(tmp_path),
                          timeout=30)
    one_line(proc, 2, "not valid UTF-8")
    nothing_made(tmp_path)


def test_sysroot_before_the_subcommand_is_refused_too(tmp_path: Path) -> None:
    proc = cli(tmp_path, "--sysroot", str(tmp_path), "validate", "--loop-dir",
               str(tmp_path / "work"))
    one_line(proc, 2, "validate formats and measures devices of this machine")
    nothing_made(tmp_path)


def test_sysroot_given_to_validate_never_touches_the_named_device(tmp_path: Path) -> None:
    """`--sysroot X validate --device LOOP --yes`: refused, the device's content unchanged."""
    require_root_tools("losetup")
    from tests.bench.test_guard import attached, checksum

    backing = tmp_path / "scratch.img"
    with attached(backing, GIB) as dev:
        before = checksum(backing)
        for argv in (("--sysroot", str(tmp_path), "validate", "--device", dev, "--yes"),
                     ("validate", "--device", dev, "--yes", "--sysroot", str(tmp_path))):
            one_line(cli(tmp_path, *argv), 2, "--sysroot cannot apply")
        sh("blockdev", "--flushbufs", dev, check=False)
        assert checksum(backing) == before
    assert str(backing) not in sh("losetup", "-a").stdout


def test_profile_refuses_sysroot(tmp_path: Path) -> None:
    one_line(cli(tmp_path, "--sysroot", str(tmp_path), "profile", str(tmp_path)), 2,
             "profile measures a live tree and does not read --sysroot")


# ---- validate: the folders and the host, after the numbers (needs root and the tools) ----

@pytest.fixture
def root_tools() -> None:
    require_root_tools("losetup", "mkfs.xfs", "fio", "xfs_info", "mount")


@pytest.mark.parametrize(("loop_dir", "needle"), [
    ("/dev/null", "is not a directory"),
    ("/proc", "free"),
    ("FILE", "is not a directory"),
    ("FILE/below", "is not a directory"),
])
def test_validate_refuses_unusable_loop_dirs(tmp_path: Path, root_tools: None, loop_dir: str,
                                             needle: str) -> None:
    (tmp_path / "FILE").write_text("a file\n")
    where = loop_dir.replace("FILE", str(tmp_path / "FILE"))
    proc = cli(tmp_path, "validate", "--loop-dir", where, "--loop-size", "1GiB")
    one_line(proc, 2, needle)
    nothing_made(tmp_path)
    assert (tmp_path / "FILE").read_text() == "a file\n"


def test_non_utf8_tmpdir_is_refused(tmp_path: Path, root_tools: None) -> None:
    odd = os.fsencode(tmp_path) + b"/\xff"
    os.mkdir(odd)
    env = {k.encode(): v.encode() for k, v in _env(tmp_path).items()}
    env[b"TMPDIR"] = odd
    proc = subprocess.run([sys.executable, "-m", "advisor", "validate", "--loop-size", "1GiB"],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=30)
    one_line(proc, 2, "not valid UTF-8")
    assert os.listdir(odd) == []
    nothing_made(tmp_path)


MakeTmpfs = Callable[..., Path]


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[MakeTmpfs]:
    """A tmpfs of a given size under tmp_path, unmounted afterwards whatever happens."""
    mounts: list[Path] = []

    def make(name: str, size: int, *options: str) -> Path:
        where = tmp_path / name
        where.mkdir()
        sh("mount", "-t", "tmpfs", "-o", ",".join((f"size={size}", *options)), "tmpfs",
           str(where))
        mounts.append(where)
        return where

    yield make
    for where in reversed(mounts):
        sh("umount", str(where), check=False)


def test_exactly_the_loop_size_free_is_not_enough(tmp_path: Path, root_tools: None,
                                                 tmpfs: MakeTmpfs) -> None:
    """4 GiB free for a 4 GiB backing file: refused (headroom), before any fallocate."""
    small = tmpfs("small", 4 * GIB)
    proc = cli(tmp_path, "validate", "--loop-dir", str(small), "--loop-size", "4GiB")
    line = one_line(proc, 2, "4 GiB free")
    assert "to spare" in line
    assert os.listdir(small) == []
    nothing_made(tmp_path)


def test_read_only_state_folder_is_refused_before_anything(tmp_path: Path, root_tools: None,
                                                          tmpfs: MakeTmpfs) -> None:
    ro = tmpfs("ro", 1 << 20, "ro")
    env = _env(tmp_path, XFS_ADVISOR_STATE_DIR=str(ro / "state"))
    proc = cli(tmp_path, "validate", "--loop-dir", str(tmp_path / "work"), "--loop-size", "1GiB",
               env=env)
    one_line(proc, 4, "cannot write the state folder")
    assert os.listdir(ro) == []
    nothing_made(tmp_path)


# ---- workload and device files ----

def _workload(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(("name", "text", "needle"), [
    ("g.toml", "growth_factor = 1e308\n", "growth_factor"),
    ("big.json", '{"largest_directory_entries": ' + "9" * 5000 + "}", "digits"),
    ("deep.json", '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    ("deep.toml", "a = " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
    ("tables.toml", "a = " + "{b = " * 100_000 + "1" + "}" * 100_000 + "\n", "nested too deeply"),
    ("bool.toml", "largest_directory_entries = true\n", "not true/false"),
    ("nul.toml", 'mount_point = "/srv/a\\u0000b"\n', "control characters"),
    ("esc.json", '{"mount_point": "/srv/\\u001b[2J"}', "control characters"),
    ("size.toml", 'eventual_size = "99999999EiB"\n', "eventual_size"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 20 else "")
def test_bad_workload_files(tmp_path: Path, name: str, text: str, needle: str) -> None:
    proc = cli(tmp_path, "--device-file", HOST, "--workload", _workload(tmp_path, name, text))
    one_line(proc, 2, needle)


def test_workload_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "w.toml"
    path.write_bytes(b'mount_point = "/srv/\xff"\n')
    one_line(cli(tmp_path, "--device-file", HOST, "--workload", str(path)), 2, "not UTF-8")


def test_fifo_as_workload_or_device_file_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "answers.toml"
    os.mkfifo(fifo)
    one_line(cli(tmp_path, "--device-file", HOST, "--workload", str(fifo), timeout=20), 2,
             "is a FIFO, not a regular file")
    one_line(cli(tmp_path, "--device-file", str(fifo), timeout=20), 2, "is a FIFO")
    one_line(cli(tmp_path, "validate", "--workload", str(fifo), "--loop-dir",
                 str(tmp_path / "work"), timeout=20), 2, "is a FIFO")


@pytest.mark.parametrize("size", [10**30, -1])
def test_device_file_with_an_impossible_size(tmp_path: Path, size: int) -> None:
    doc = json.loads(Path(HOST).read_text())
    doc["size_bytes"]["value"] = size
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(doc))
    one_line(cli(tmp_path, "--device-file", str(path)), 2, "size_bytes.value")


def test_a_report_file_that_cannot_be_written_is_refused_before_the_run(tmp_path: Path) -> None:
    """`validate --report FILE` in a folder that cannot be made (a file stands where it would
    be): refused before anything is measured, not said after the run."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file\n")
    line = one_line(cli(tmp_path, "validate", "--report", str(blocker / "r.json")), 2,
                    "--report")
    assert f"{blocker} is not a directory" in line


def test_a_report_that_cannot_be_saved_where_it_goes_is_said_before_the_run(
        tmp_path: Path) -> None:
    """The report's default place (beside the calibration store) cannot be written: said
    first, so that the run's report is not lost unawares (`--continue` needs it); the run goes
    on (here to an unknown device's refusal)."""
    require_root_tools("losetup")
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file\n")
    proc = cli(tmp_path, "validate", "--calibration-file", str(blocker / "calibration.json"),
               "--device", "/dev/no-such-device")
    assert proc.returncode == 3, proc.stderr
    said, refused = proc.stderr.splitlines()
    assert said == (f"xfs-advisor: the report will not be saved: {blocker} is not a writable "
                    "folder (give --report FILE to keep it, as `validate --continue` needs)")
    assert refused.startswith("xfs-advisor: unknown device '/dev/no-such-device'")


def test_empty_device_is_refused_everywhere(tmp_path: Path) -> None:
    one_line(cli(tmp_path, "--device", ""), 2, "is empty")
    one_line(cli(tmp_path, "propose", "--device", "", "--json"), 2, "is empty")


# ---- the command line itself ----

def test_argparse_errors_are_one_line_and_json_under_json(tmp_path: Path) -> None:
    line = one_line(cli(tmp_path, "validate", "--budget", "x"), 2, "invalid float value")
    assert line.startswith("xfs-advisor: validate: argument --budget")
    for argv in (("--json", "validate", "--budget", "x"), ("validate", "--json", "--rounds", "y"),
                 ("--json", "--no-such-flag")):
        proc = cli(tmp_path, *argv)
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr
        err = json.loads(proc.stderr)["error"]
        assert err["kind"] == "bad-input" and err["exit_code"] == 2
        assert "(see xfs-advisor" in err["message"]


def _wait_for_import(proc: subprocess.Popen[str], module: str) -> list[str]:
    """stderr lines until `-X importtime` reports `module` imported (the process is then past
    the interpreter's own start-up and inside the advisor)."""
    assert proc.stderr is not None
    seen = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        seen.append(line)
        if line.split("|")[-1].strip() == module or not line:
            break
    return seen


@pytest.mark.parametrize("delay", [0.0, 0.01, 0.03, 0.06, 0.1, 0.15, 0.2, 0.3])
@pytest.mark.parametrize("as_json", [False, True])
def test_ctrl_c_while_starting_is_one_line_exit_130(tmp_path: Path, delay: float,
                                                    as_json: bool) -> None:
    """SIGINT at moments from the first import of the advisor's own code to 0.3 s later (while
    pydantic and the command modules load): one line and exit 130, never a traceback; or, when
    the run was already done, its whole output and exit 0."""
    root = write_tree(tmp_path / "host", [Dev("sda", 100 * GIB, "8:0")])
    argv = [sys.executable, "-X", "importtime", "-m", "advisor", "--sysroot", str(root),
            "devices", *(["--json"] if as_json else [])]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO, env=_env(tmp_path))
    try:
        _wait_for_import(proc, "advisor.errors")
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out, rest = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait()
    lines = [x for x in rest.splitlines() if not x.startswith("import time:")]
    assert "Traceback" not in rest, rest
    if proc.returncode == 0:  # finished before the signal came
        assert lines == [] and "sda" in out
        return
    assert proc.returncode == 130, rest
    assert len(lines) == 1, rest
    if as_json:
        assert json.loads(lines[0])["error"]["kind"] == "interrupted"
    else:
        assert lines[0] == "xfs-advisor: interrupted"


#: A process that runs `true` through the runner until `target` runs were interrupted, Ctrl-C'ing
#: itself every 0.5 ms from a thread: hundreds of interrupts, landing anywhere in run() (the
#: fork, threading's locks, the wait, the kill after an interrupt). SIGINT's handler raises
#: KeyboardInterrupt as Python's own does, but only inside run(): one landing in the loop below
#: is dropped, so the loop needs no guard of its own (a guard is a `while`, and the jump back to
#: its top is a place an interrupt lands, outside every `try`). A run that raised inside run()
#: and still returned is an interrupt swallowed. Bounded by the count, not by time: a starved
#: CPU makes the run slower, not weaker; the 30 s bound only says so if the storm never
#: reaches the runner.
_FORK_STORM = """
import os, signal, sys, threading, time
from advisor.system import runner
RUN = runner.run.__code__
raised = False
def interrupt(signum, frame):
    global raised
    while frame is not None and frame.f_code is not RUN:
        frame = frame.f_back
    if frame is not None:
        raised = True
        raise KeyboardInterrupt
signal.signal(signal.SIGINT, interrupt)
stop = threading.Event()
def storm():
    while not stop.wait(0.0005):
        os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=storm, daemon=True).start()
runs = caught = swallowed = 0
target, bound = int(sys.argv[1]), time.monotonic() + 30
while caught < target and time.monotonic() < bound:
    raised = False
    runs += 1
    try:
        runner.run(["true"])
    except KeyboardInterrupt:
        caught += 1
    else:
        swallowed += raised
stop.set()
print(runs, caught, swallowed)
"""


def test_ctrl_c_while_the_runner_forks_is_never_swallowed(tmp_path: Path) -> None:
    """Every Ctrl-C that lands in run() comes out of it as a KeyboardInterrupt. One inside sh's
    fork was printed as "Exception ignored in: <function _releaseLock>" and dropped (the run
    went on; exit 0, once in ~48 CLI runs; with 60 runs that Ctrl-C a loop of `true` at a
    random moment, 4 swallowed before the fix, 0 after). One inside threading's Condition.wait
    (the runner's wait on an Event, a timer thread's start) broke the lock under it: "Exception
    ignored" from the timer thread, or SIGABRT or SIGSEGV at exit, 5 times in 560 runs of the
    1.5 s storm at load 4 on 2 CPUs (the next test sees that wait every time).

    Decided on a count of interrupted runs, not on a window of wall time: the same exposure on
    a quiet CPU or a starved one, which is only slower (at load 4 the 1.5 s window held 156
    runs at the least, so the old thresholds were not what failed: the product was, above).
    It also counts interrupts raised in run() that did not come out of it (swallowed), beside
    "Exception ignored" on stderr: without the deferral over the start, 7 runs of this test in
    12 failed, 3 of them also counting one swallowed. The script's own loop takes no interrupt
    (the handler raises only inside run()); the old one guarded it with a `while`, whose jump
    back is outside every `try`. 1000 interrupted runs take about a second quiet, 3 s (5 s at
    most) at load 4."""
    target = 1000
    proc = subprocess.run([sys.executable, "-c", _FORK_STORM, str(target)],
                          capture_output=True, text=True, cwd=REPO, env=_env(tmp_path),
                          timeout=60)
    assert "Exception ignored" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr == "", proc.stderr[-2000:]
    runs, caught, swallowed = (int(n) for n in proc.stdout.split()[-3:])
    assert caught == target, (runs, caught, "the storm did not reach the runner in 30 s")
    assert swallowed == 0, (runs, caught, swallowed)


#: Notes each call the main thread makes to threading's Python-level waits (Condition.wait,
#: under Event.wait and Thread.start; Thread.join) while SIGINT's handler raises, that is,
#: outside signals_deferred; a script ends with _WAITS_SEEN, which prints their count and where.
_TRACE_WAITS = """
import signal, sys, threading
signal.signal(signal.SIGINT, signal.default_int_handler)
WAITS = {threading.Condition.wait.__code__, threading.Thread.join.__code__}
seen = []
def profile(frame, event, arg):
    if (event == "call" and frame.f_code in WAITS
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
        caller = frame.f_back
        while caller is not None and "advisor" not in caller.f_code.co_filename:
            caller = caller.f_back
        where = caller.f_code.co_qualname if caller else "?"
        seen.append(f"{frame.f_code.co_qualname} from {where}")
sys.setprofile(profile)
"""
_WAITS_SEEN = """
sys.setprofile(None)
print("--- waits")
print("\\n".join(seen))
"""
#: Runs commands through the runner in every way it waits (a command that ends, one killed at
#: its timeout, a Background one).
_RUNNER_WAITS = """
from advisor.errors import ToolProblem
from advisor.system.runner import Background, run
run(["true"])
run(["cat"], input="some input")
try:
    run(["sleep", "5"], timeout=0.2)
except ToolProblem:
    pass
else:
    raise SystemExit("no timeout")
Background(["sleep", "0.1"]).wait(5)
Background(["sleep", "5"]).wait(0.2)
"""
#: A proposal, whose dry run of the defaults runs ahead in a thread.
_PROPOSAL_WAITS = f"""
from advisor.cli import main
assert main(["--device-file", {HOST!r}, "--json"]) == 0
"""
#: The fleet report's check before forking its workers, with a dry run ahead still running.
_FORK_CHECK_WAITS = """
from advisor.fleet import _forkable
from advisor.system.mkfs import HostMkfs
from tests.engine.helpers import GiB, device
HostMkfs().defaults_ahead(device(10 * GiB))
assert _forkable()
"""
#: A thread started by runner.start_thread (as validate's cancel watch is), and waited for.
_START_THREAD_WAITS = """
from advisor.system.runner import start_thread
ran = threading.Lock()
ran.acquire()
start_thread(threading.Thread(target=ran.release, daemon=True))
assert ran.acquire(timeout=10)
"""


def _waits_in_threading(tmp_path: Path, script: str) -> tuple[list[str], str, str]:
    """Where `script`, traced, waited in threading's code while Ctrl-C raises; what it printed
    before, on stdout and stderr."""
    proc = subprocess.run([sys.executable, "-c", _TRACE_WAITS + script + _WAITS_SEEN],
                          capture_output=True, text=True, cwd=REPO, env=_env(tmp_path),
                          timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    before, _, seen = proc.stdout.rpartition("--- waits\n")
    return [line for line in seen.splitlines() if line], before, proc.stderr


def test_the_runner_never_waits_in_threading_code_while_ctrl_c_raises(tmp_path: Path) -> None:
    """In the main thread, where Ctrl-C is raised, the runner waits only on a bare lock, whose
    acquire (in C) an interrupt cuts cleanly, never in threading's Condition.wait: its own
    clean-up, taking the lock back in a `finally`, is Python code a second interrupt can cut,
    leaving the lock released by the wrong thread (CPython gh-118433). That broke the other
    side: a timer thread died in its start-up ("Exception ignored in thread started by"), a
    thread whose start was cut began at exit and aborted the interpreter. The storm test above
    caught it 5 times in 560 runs at load 4; this sees the wait every time."""
    assert _waits_in_threading(tmp_path, _RUNNER_WAITS)[0] == []


@pytest.mark.parametrize("script", [_PROPOSAL_WAITS, _FORK_CHECK_WAITS, _START_THREAD_WAITS],
                         ids=["proposal", "fleet-fork-check", "start-thread"])
def test_the_main_thread_never_waits_in_threading_code_while_ctrl_c_raises(
        tmp_path: Path, script: str) -> None:
    """The same for the threads beside the runner's: a proposal's dry run of the defaults ahead
    (started in Thread.start's Condition.wait, its result read through Thread.join), the fleet
    report's wait for such a thread before it forks, and validate's cancel watch (started
    through start_thread) wait as the runner does, or start with Ctrl-C deferred."""
    assert _waits_in_threading(tmp_path, script)[0] == []


_LOST_IN_A_CALLBACK = """
import gc, time, weakref
from advisor.cli import _raise_on_interrupt
_raise_on_interrupt()
class Thing:
    pass
def callback(ref):
    raise KeyboardInterrupt  # as if Ctrl-C landed in a weakref callback
thing = Thing()
ref = weakref.ref(thing, callback)
try:
    del thing
    gc.collect()
    for _ in range(200):
        time.sleep(0.01)
    print("lost")
except KeyboardInterrupt:
    print("raised")
"""


def test_ctrl_c_in_a_callback_of_the_interpreter_is_sent_again(tmp_path: Path) -> None:
    """A KeyboardInterrupt raised inside a weakref callback (seen once in 40 Ctrl-C'd
    `--json --device` runs: WeakSet._remove) was dropped with "Exception ignored"; the CLI's
    hook sends the signal again, so it is raised in the code that was running; from a thread
    whose start does not wait in threading's Condition.wait (threading.Timer's did, in the main
    thread, while Ctrl-C raises: see the runner's test above)."""
    seen, stdout, stderr = _waits_in_threading(tmp_path, _LOST_IN_A_CALLBACK)
    assert stdout.strip() == "raised", (stdout, stderr)
    assert "Exception ignored" not in stderr, stderr
    assert seen == []


# ---- capture and sysroot ----

def test_capture_into_a_read_only_place_or_under_a_file(tmp_path: Path, tmpfs: MakeTmpfs) -> None:
    require_root_tools()
    ro = tmpfs("ro", 1 << 20, "ro")
    one_line(cli(tmp_path, "capture", str(ro / "cap")), 2, "Read-only file system")
    (tmp_path / "file").write_text("x")
    one_line(cli(tmp_path, "capture", str(tmp_path / "file" / "cap")), 2, "Not a directory")
    assert (tmp_path / "file").read_text() == "x"
    assert os.listdir(ro) == []


def test_a_fifo_in_a_captured_tree_reads_as_missing(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "host", [Dev("sda", 100 * GIB, "8:0")])
    attribute = Path(os.path.realpath(root / "sys" / "block" / "sda" / "queue" / "rotational"))
    attribute.unlink()
    os.mkfifo(attribute)
    proc = cli(tmp_path, "--sysroot", str(root), "devices", "--json", timeout=20)
    assert proc.returncode == 0, proc.stderr
    device = json.loads(proc.stdout)["devices"][0]
    assert device["name"] == "sda" and device["rotational"]["value"] is None


# ---- tools that print bytes that are not UTF-8 ----

def test_tool_output_that_is_not_utf8_is_read_with_replacement() -> None:
    """fio names files and mkfs.xfs echoes paths: their bytes need not be UTF-8."""
    from advisor.system.runner import run

    result = run(["sh", "-c", r"printf '\377 out\n'; printf '\376 err\n' >&2; exit 3"],
                 check=False, timeout=10)
    assert result.returncode == 3, result.stderr
    assert result.stdout == "\ufffd out\n" and result.first_error_line() == "\ufffd err"


def test_a_deeply_nested_probe_file_in_a_capture_is_bad_input(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "host", [Dev("sda", 100 * GIB, "8:0")])
    (root / "xfs-advisor-probes.json").write_text("[" * 100_000 + "]" * 100_000)
    one_line(cli(tmp_path, "--sysroot", str(root), "devices"), 2, "is not a valid probe file")


@pytest.mark.parametrize("kind", ["deep", "fifo"])
def test_bad_site_rule_files(tmp_path: Path, kind: str) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    if kind == "fifo":
        os.mkfifo(rules / "site.toml")
    else:
        (rules / "site.toml").write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    one_line(cli(tmp_path, "--device-file", HOST, "--rules", str(rules), timeout=20), 2,
             "is a FIFO" if kind == "fifo" else "malformed TOML")
