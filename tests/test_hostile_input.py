"""Hostile input refused before anything is made: empty names on the command line, and a
`validate --continue` report with numbers the flags would never allow (a loop file larger than
the loop folder's free space, more writers than MAX_WRITERS, a negative directory, an endless
budget). Each is one line and exit 2; the run itself never starts."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import os
import signal
import stat
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.errors import AdvisorError
from advisor.session import Session
from advisor.system import runner
from tests.bench.test_adaptive import _report
from tests.conftest import REPO, own_tmpdir, require_root_tools
from tests.inspect.sysfs_builder import Dev, write_tree


class _Started(AdvisorError):
    """The run was started: the report got through (main() returns this exit code)."""

    exit_code = 77


def _never_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """A validate run that got through the checks raises _Started instead of running."""

    def started(*args: object, **kwargs: object) -> None:
        raise _Started("the run started")

    monkeypatch.setattr(Session, "run_validation", started)
    monkeypatch.setattr(Session, "more_rounds", started)


@pytest.mark.parametrize("argv", [
    ["capture", ""], ["audit", "--fstab", ""], ["--workload", "", "--json"],
    ["propose", "--workload", ""], ["propose", "--rules", ""], ["--rules", "", "--json"],
    ["validate", "--rules", ""], ["validate", "--workload", ""], ["audit", "--rules", ""],
    ["audit", "--workload", ""], ["fleet", ""], ["profile", ""], ["--sysroot", "", "devices"],
    ["devices", ""], ["propose", "--device-file", ""], ["validate", "--continue", ""],
    ["rules", "--rules", ""], ["explain", "--rules", "", "inode-size"],
])
def test_an_empty_name_is_an_error(argv: list[str], tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _never_run(monkeypatch)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is empty" in err, err
    assert list(tmp_path.iterdir()) == []  # `capture ""` captured into the current folder


def _hostile(update: dict[str, Any]) -> dict[str, Any]:
    doc = json.loads(_report().model_dump_json())
    for path, value in update.items():
        where = doc
        *parents, last = path.split(".")
        for key in parents:
            where = where[key]
        where[last] = value
    return doc


@pytest.mark.parametrize(("update", "needle"), [
    ({"environment.device_size_bytes": 1 << 50}, "free"),
    ({"environment.device_size_bytes": 4096}, "device_size_bytes"),
    ({"workload.writers": 64}, "writers"),
    ({"workload.directory_entries": -20_000, "workload.churn_entries": -2_000},
     "directory_entries"),
    ({"workload.churn_entries": 10**9}, "churn_entries"),
    ({"workload.fsync_phase": "yes"}, "fsync_phase"),
    ({"workload.phase_seconds": 1e300}, "phase_seconds"),
    ({"stopping.budget_seconds": 1e12}, "budget_seconds"),
])
def test_a_continued_report_is_held_to_the_flags_bounds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        update: dict[str, Any], needle: str) -> None:
    require_root_tools("losetup", "mkfs.xfs", "fio", "mount")  # validate's own host checks
    report = tmp_path / "report.json"
    report.write_text(json.dumps(_hostile(update)))
    monkeypatch.setenv("XFS_ADVISOR_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XFS_ADVISOR_CALIBRATION", str(tmp_path / "calibration.json"))
    _never_run(monkeypatch)
    code = main(["validate", "--continue", str(report), "--loop-dir", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and needle in err, err


@pytest.mark.parametrize(("update", "needle"), [
    ({"environment.device_size_bytes": 1 << 50}, "free"),
    ({"workload.writers": 64}, "workload.writers"),
    ({"workload.directory_entries": -20_000, "workload.churn_entries": -2_000},
     "workload.directory_entries"),
    ({"workload.phase_seconds": 1e300}, "workload.phase_seconds"),
    ({"stopping.budget_seconds": 1e12}, "stopping.budget_seconds"),
])
def test_the_tuis_continuation_is_held_to_the_same_bounds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, update: dict[str, Any],
        needle: str) -> None:
    """The check lives where the report is continued (bench.plan.continuation), not in the
    command line: the TUI's "more rounds" (Session.continuation_plan, then more_rounds) refuses
    the same reports, naming the field, before anything is made."""
    from advisor.errors import BadInput
    from advisor.models.bench import ValidationReport

    report = ValidationReport.model_validate(_hostile(update))

    def started(*args: object, **kwargs: object) -> None:
        raise _Started("the run started")

    monkeypatch.setattr(Session, "run_validation", started)
    own_tmpdir(tmp_path, monkeypatch)
    session = Session()
    with pytest.raises(BadInput, match=needle.replace(".", r"\.")) as plan_refused:
        session.continuation_plan(report)
    assert plan_refused.value.message.startswith(str(tmp_path)) if needle == "free" else \
        plan_refused.value.message.startswith("the report: ")
    with pytest.raises(BadInput, match=needle.replace(".", r"\.")):
        session.more_rounds(report, loop_dir=str(tmp_path))
    assert list(tmp_path.iterdir()) == []
    # The sound report gets through to the run.
    with pytest.raises(_Started):
        session.more_rounds(_report(), loop_dir=str(tmp_path))


def test_a_sound_report_still_continues(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_root_tools("losetup", "mkfs.xfs", "fio", "mount")
    report = tmp_path / "report.json"
    report.write_text(_report().model_dump_json())
    monkeypatch.setenv("XFS_ADVISOR_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XFS_ADVISOR_CALIBRATION", str(tmp_path / "calibration.json"))
    _never_run(monkeypatch)
    assert main(["validate", "--continue", str(report), "--loop-dir", str(tmp_path)]) == 77


def test_a_thousand_stacked_devices_are_listed(memory_tmp: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A capture is input too: devices stacked deeper than Python's recursion limit are listed
    (the tree is walked with a stack of its own), not an internal error."""
    depth = 1000
    devices = [Dev("sda", 1 << 30, "8:0", holders=["dm-0"])]
    devices += [Dev(f"dm-{i}", 1 << 30, f"253:{i}", dm_name=f"layer{i}",
                    slaves=["sda" if i == 0 else f"dm-{i - 1}"],
                    holders=[f"dm-{i + 1}"] if i < depth - 1 else []) for i in range(depth)]
    root = write_tree(memory_tmp / "host", devices)
    assert main(["--sysroot", str(root), "devices"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0].lstrip("|`- ") for line in lines[1:4]] == ["sda", "layer0",
                                                                       "layer1"]
    assert len(lines) == 1 + 1 + depth
    assert lines[-1].lstrip(" |`-").startswith(f"layer{depth - 1} ")


def _fleet_host(results: Path, name: str) -> Path:
    """A host whose capture and audit steps say they succeeded (so that audit.out is read)."""
    host = results / name
    host.mkdir(parents=True)
    (host / "capture.rc").write_text("0\n")
    (host / "audit.rc").write_text("0\n")
    return host


def test_fleet_results_are_regular_files_of_bounded_size(tmp_path: Path) -> None:
    """A FIFO used to hang `fleet`, /dev/zero to end it in a MemoryError (exit 1): each is now
    one failed host with the reason, and the report is made."""
    results = tmp_path / "results"
    os.mkfifo(_fleet_host(results, "fifo") / "audit.out")
    (_fleet_host(results, "zero") / "audit.out").symlink_to("/dev/zero")
    (_fleet_host(results, "secret") / "audit.out").symlink_to("/etc/shadow")
    with open(_fleet_host(results, "huge") / "error.txt", "wb") as f:
        f.truncate(64 << 20)  # sparse: costs nothing on disk
    env = {k: v for k, v in os.environ.items() if k != "XFS_ADVISOR_DEBUG"}
    proc = subprocess.run([sys.executable, "-m", "advisor", "fleet", "--json", str(results)],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    errors = {h["host"]: h["error"] for h in json.loads(proc.stdout)["hosts"]}
    assert set(errors) == {"fifo", "zero", "secret", "huge"}
    assert "is a FIFO, not a regular file" in errors["fifo"]
    assert "is a symlink" in errors["zero"] and "is a symlink" in errors["secret"]
    assert "larger than" in errors["huge"]


STORE = REPO / "ansible" / "roles" / "xfs_advisor" / "files" / "store.py"


class _Zeros(io.RawIOBase):
    """`size` zero bytes, made as they are read."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readinto(self, buffer: Any) -> int:
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


def _payload(*members: tuple[tarfile.TarInfo, int]) -> str:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz", compresslevel=1) as tf:
        for info, size in members:
            info.size = size if info.isfile() else 0
            tf.addfile(info, _Zeros(size) if info.isfile() else None)
    return base64.b64encode(out.getvalue()).decode()


def _store(results: Path, payload: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(STORE), str(results), "web1"],
                          input=json.dumps({"payload": payload}), capture_output=True,
                          text=True, timeout=120)


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


@pytest.mark.parametrize(("members", "needle"), [
    ([(_member("capture/big"), (512 << 20) + 1)], "bytes of files"),
    ([(_member("capture/sys", tarfile.SYMTYPE, "../../../etc"), 0)], "a link out of the folder"),
    ([(_member("../escape"), 1)], "an absolute name or one with '..'"),
    ([(_member("capture/fifo", tarfile.FIFOTYPE), 0)], "only folders, regular files"),
    ([(_member("capture/sda", tarfile.BLKTYPE), 0)], "only folders, regular files"),
])
def test_store_refuses_bombs_and_escapes(tmp_path: Path, members: list[Any],
                                         needle: str) -> None:
    """A refused payload becomes the host's error (the fleet report shows it); nothing of it
    is unpacked, and no temporary folder is left."""
    proc = _store(tmp_path / "results", _payload(*members))
    assert proc.returncode == 0, proc.stderr
    host = tmp_path / "results" / "web1"
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["web1"]
    assert [p.name for p in host.iterdir()] == ["error.txt"]
    error = (host / "error.txt").read_text()
    assert error.startswith("results refused:") and needle in error, error


def test_store_unpacks_a_capture_with_its_links(tmp_path: Path) -> None:
    proc = _store(tmp_path / "results", _payload(
        (_member("capture/sys/devices/sda", tarfile.DIRTYPE), 0),
        (_member("capture/sys/devices/sda/size"), 8),
        (_member("capture/sys/block/sda", tarfile.SYMTYPE, "../devices/sda"), 0)))
    assert proc.returncode == 0 and proc.stdout.strip() == "changed", proc.stderr
    host = tmp_path / "results" / "web1"
    assert (host / "capture/sys/block/sda/size").read_bytes() == bytes(8)


@pytest.mark.parametrize("command", ["fleet", "profile"])
def test_someone_elses_link_in_a_shared_folder_is_not_followed(tmp_path: Path,
                                                               command: str) -> None:
    """As fs.protected_symlinks: root writing `fleet -o /tmp/x` or `profile --write-workload
    /tmp/x` where another user planted x -> a root-owned file replaced that file."""
    require_root_tools()
    victim = tmp_path / "victim.conf"
    victim.write_text("# precious\n")
    victim.chmod(0o644)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    trap = shared / "report"
    trap.symlink_to(victim)
    os.lchown(trap, 4242, 4242)
    if command == "fleet":
        (tmp_path / "results" / "web1").mkdir(parents=True)
        (tmp_path / "results" / "web1" / "error.txt").write_text("unreachable\n")
        argv = ["fleet", str(tmp_path / "results"), "-o", str(trap)]
    else:
        (tmp_path / "data").mkdir()
        (tmp_path / "data" / "file").write_bytes(bytes(8192))
        argv = ["profile", str(tmp_path / "data"), "--write-workload", str(trap)]
    env = {k: v for k, v in os.environ.items() if k != "XFS_ADVISOR_DEBUG"}
    proc = subprocess.run([sys.executable, "-m", "advisor", *argv], capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "fs.protected_symlinks" in proc.stderr
    assert victim.read_text() == "# precious\n"
    # Our own link there, or a link the folder's owner made, is followed as before.
    os.lchown(trap, 0, 0)
    proc = subprocess.run([sys.executable, "-m", "advisor", *argv], capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() != "# precious\n"


def _checksums(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_capture_refuses_a_folder_someone_else_can_fill(tmp_path: Path) -> None:
    """Root capturing into /tmp/cap that another user made: that user could plant links in it
    while the capture writes (to /etc/...). Refused before anything is read, as is a folder of
    ours that others may write into; a new folder is made only we can write."""
    require_root_tools()
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    theirs = shared / "cap"
    theirs.mkdir()
    os.chown(theirs, 4242, 4242)
    root = write_tree(tmp_path / "host", [Dev("sda", 100 << 30, "8:0")])
    env = {k: v for k, v in os.environ.items() if k != "XFS_ADVISOR_DEBUG"}

    def capture(dest: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "advisor", "--sysroot", str(root),
                               "capture", str(dest)], capture_output=True, text=True, cwd=REPO,
                              env=env, timeout=120)

    proc = capture(theirs)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "belongs to uid 4242" in proc.stderr
    assert list(theirs.iterdir()) == []
    open_to_all = shared / "ours"
    open_to_all.mkdir()
    open_to_all.chmod(0o777)
    proc = capture(open_to_all)
    assert proc.returncode == 2 and "can be written by others (mode 777)" in proc.stderr, \
        proc.stderr
    assert list(open_to_all.iterdir()) == []
    proc = capture(shared / "new")
    assert proc.returncode == 0, proc.stderr
    made = os.stat(shared / "new")
    assert made.st_uid == os.geteuid() and not made.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def test_a_captured_tree_cannot_send_the_capture_outside_its_folder(tmp_path: Path) -> None:
    """A --sysroot tree (another host's, untrusted) whose sysfs link names an absolute path:
    capture copied what it read there back onto that path of this machine, outside DEST."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "model").write_text("  precious settings  \n\n")
    (victim / "queue_depth").write_text("32")
    before = _checksums(victim)
    root = write_tree(tmp_path / "host", [Dev("sda", 100 << 30, "8:0")])
    device = root / "sys" / "devices" / "virtual" / "block" / "sda" / "device"
    device.symlink_to(victim)
    env = {k: v for k, v in os.environ.items() if k != "XFS_ADVISOR_DEBUG"}
    proc = subprocess.run([sys.executable, "-m", "advisor", "--sysroot", str(root), "capture",
                           str(tmp_path / "out")], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert _checksums(victim) == before
    assert sorted(p.name for p in victim.iterdir()) == ["model", "queue_depth"]


def test_a_capture_writes_only_inside_the_folder_it_opened(tmp_path: Path) -> None:
    """The writes go through the folder's fd: a link that appears inside it is not followed
    (the write fails), and the folder renamed away and replaced by a link to elsewhere still
    gets the files, not the link's target."""
    from advisor.system.files import OwnFolder

    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "passwd").write_text("root:x:0:0\n")
    before = _checksums(victim)
    dest = tmp_path / "cap"
    folder, made = OwnFolder.make(dest, "capture folder")
    with folder:
        assert made
        folder.write("sys/block/a", "1\n")
        (dest / "etc").symlink_to(victim)
        with pytest.raises(OSError):
            folder.write("etc/passwd", "owned\n")
        with pytest.raises(FileExistsError):
            folder.write("sys/block/a", "2\n")
        with pytest.raises(AdvisorError, match="outside"):
            folder.write("../victim/passwd", "owned\n")
        dest.rename(tmp_path / "moved")
        dest.symlink_to(victim)
        folder.write("passwd2", "x\n")
        folder.write("sys/block/b", "2\n")
    assert _checksums(victim) == before
    assert (tmp_path / "moved" / "passwd2").read_text() == "x\n"
    assert (tmp_path / "moved" / "sys" / "block" / "b").read_text() == "2\n"


def _waiting_dry_run(tmp_path: Path) -> tuple[Path, Path, Path, dict[str, str]]:
    """What runs `xfs-advisor --sysroot ROOT --device sda` into a dry run that waits: a mkfs.xfs
    stub (in STUBS) that answers -V as the real one, then touches TMP_PATH/dry-run-started and
    sleeps; an empty TEMP for TMPDIR; a captured host ROOT with one 100 GiB disk; the ENV that
    puts them to use. (STUBS, TEMP, ROOT, ENV)"""
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    real = subprocess.run(["mkfs.xfs", "-V"], capture_output=True, text=True).stdout
    (stubs / "mkfs.xfs").write_text(
        f'#!/bin/sh\ncase "$1" in -V) echo "{real.strip()}"; exit 0;; esac\n'
        f'touch "{tmp_path}/dry-run-started"\nexec sleep 60\n')
    (stubs / "mkfs.xfs").chmod(0o755)
    temp = tmp_path / "tmp"
    temp.mkdir()
    root = write_tree(tmp_path / "host", [Dev("sda", 100 << 30, "8:0")])
    env = {**{k: v for k, v in os.environ.items() if k != "XFS_ADVISOR_DEBUG"},
           "PATH": f"{stubs}:{os.environ['PATH']}", "TMPDIR": str(temp)}
    return stubs, temp, root, env


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_an_ending_signal_during_a_dry_run_removes_its_image(tmp_path: Path,
                                                             sig: signal.Signals) -> None:
    """`kill` (or a closed terminal) while a proposal's mkfs.xfs -N runs: one line, exit 130,
    and the dry run's folder (with its device-sized sparse image) is gone. mkfs.xfs is a stub
    that answers -V and then waits, so that the signal lands inside the dry run."""
    stubs, temp, root, env = _waiting_dry_run(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "advisor", "--sysroot", str(root),
                             "--device", "sda"], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "dry-run-started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [p.name[:18] for p in temp.iterdir()] == ["xfs-advisor-check-"]
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert err.strip() == "xfs-advisor: interrupted"
    assert list(temp.iterdir()) == []
    stub_left = subprocess.run(["pgrep", "-f", f"{stubs}"], capture_output=True, text=True)
    assert stub_left.stdout == ""


def test_a_command_a_worker_starts_while_the_advisor_ends_is_killed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The race behind a dry run outliving a SIGTERM: a worker thread starts its command just
    after the main thread stopped every listed one. Once stop_children has run, a command that
    is started is killed at once instead of running on (here for 30 s)."""
    import threading as _threading

    from advisor.system import runner

    monkeypatch.setattr(runner, "_stopping", _threading.Event())
    runner.stop_children()
    started = time.monotonic()
    result = runner.run(["sleep", "30"], check=False)
    assert time.monotonic() - started < 10
    assert result.returncode != 0


def _running(pid: int) -> bool:
    """`pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


#: A command that starts a process of its own which holds its output pipes (as fio's jobs do),
#: and writes that process's pid to the file named by $1.
_FORKING = 'sleep 30 & echo $! > "$1"; wait'


def test_a_timed_out_command_ends_with_the_processes_it_started(tmp_path: Path) -> None:
    """The timeout holds for a command whose own processes hold its output (fio's jobs): the
    whole tree is killed, so run() returns at the timeout, not when the last of them ends, and
    none is left running."""
    from advisor.errors import ToolProblem
    from advisor.system.runner import run

    pidfile = tmp_path / "started"
    began = time.monotonic()
    with pytest.raises(ToolProblem, match="timed out"):
        run(["sh", "-c", _FORKING, "sh", str(pidfile)], timeout=1)
    assert time.monotonic() - began < 10
    started = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _running(started) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _running(started)


def test_an_interrupted_command_ends_with_the_processes_it_started(tmp_path: Path) -> None:
    """Ctrl-C while a command runs: the processes it started go with it (a fio job left
    running keeps the scratch mount busy for clean-up)."""
    pidfile = tmp_path / "started"
    script = ("import sys\nfrom advisor.system.runner import run\n"
              f"run(['sh', '-c', {_FORKING!r}, 'sh', sys.argv[1]], timeout=60)\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(pidfile)], cwd=REPO,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not pidfile.exists() or not pidfile.read_text().strip():
            assert time.monotonic() < deadline, "the command did not start"
            time.sleep(0.02)
        started = int(pidfile.read_text())
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
        assert "KeyboardInterrupt" in err
        deadline = time.monotonic() + 5
        while _running(started) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _running(started)
    finally:
        proc.kill()
        proc.wait()
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pidfile.read_text()), signal.SIGKILL)


def _children(pid: int) -> list[int]:
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as f:
            found += [int(p) for p in f.read().split()]
    return found


def test_recovery_sweeps_what_killed_dry_runs_and_state_writes_left(tmp_path: Path) -> None:
    """SIGKILL during a proposal's mkfs.xfs -N leaves its folder (a device-sized sparse image)
    in TMPDIR; a kill between writing a state file and renaming it leaves run-*.json.tmp. The
    next run's recovery removes both once their process is dead, and keeps a live process's
    (and anyone else's) folder and file."""
    require_root_tools()
    from advisor.system.processes import process_start
    from advisor.system.sysroot import SysRoot

    _, temp, root, env = _waiting_dry_run(tmp_path)
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    env["XFS_ADVISOR_STATE_DIR"] = str(state)
    proc = subprocess.Popen([sys.executable, "-m", "advisor", "--sysroot", str(root),
                             "--device", "sda"], cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "dry-run-started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        stub = _children(proc.pid)
        proc.kill()
        proc.wait()
    finally:
        proc.kill()
        proc.wait()
    for pid in stub:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    [killed] = [p for p in temp.iterdir() if p.name.startswith("xfs-advisor-check-")]
    assert (killed / "device.img").stat().st_size == 100 << 30
    # A live process's dry run (this one's), and a dead one's that is not ours.
    me = f"{os.getpid()}-{process_start(SysRoot(), os.getpid())}"
    live = temp / f"xfs-advisor-check-{me}-live0001"
    live.mkdir()
    (live / "device.img").write_bytes(b"")
    theirs = temp / f"xfs-advisor-check-{proc.pid}-1-theirs01"
    theirs.mkdir()
    (theirs / "device.img").write_bytes(b"")
    os.chown(theirs, 4242, 4242)
    (state / f"run-{proc.pid}-0.json.tmp").write_text("{")
    (state / f"run-{proc.pid}-0.json.tmp").chmod(0o600)
    (state / f"run-{os.getpid()}-9.json.tmp").write_text("{")
    recovery = subprocess.run(
        [sys.executable, "-c", "from advisor.bench.cleanup import recover_and_say\n"
         "recover_and_say(print)"], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=60)
    assert recovery.returncode == 0, recovery.stderr
    assert f"dry run left {killed}" in recovery.stdout, recovery.stdout
    assert f"unfinished state file {state}/run-{proc.pid}-0.json.tmp" in recovery.stdout
    assert sorted(p.name for p in temp.iterdir()) == sorted([live.name, theirs.name])
    assert sorted(p.name for p in state.iterdir()) == [f"run-{os.getpid()}-9.json.tmp"]


@pytest.mark.parametrize("background", [False, True])
def test_a_signal_held_while_a_command_starts_leaves_it_not_running(
        monkeypatch: pytest.MonkeyPatch, background: bool) -> None:
    """Ctrl-C landing while a command is being started is held until it is (signals_deferred),
    then raised before the caller knows the command: the command is killed and reaped, not left
    running after the advisor ends (a fio on the scratch mount; perf until its sleep ends). The
    signal is sent from inside the start, after the real process exists: the race, made
    certain."""
    started: list[int] = []
    real = runner._spawn

    def spawn_then_interrupt(*args: Any) -> Any:
        proc = real(*args)
        started.append(proc.pid)
        os.kill(os.getpid(), signal.SIGINT)
        return proc

    monkeypatch.setattr(runner, "_spawn", spawn_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        if background:
            runner.Background(["sleep", "30"])
        else:
            runner.run(["sleep", "30"], timeout=60)
    assert started
    deadline = time.monotonic() + 5
    while _running(started[0]) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _running(started[0]), "the command runs on after the interrupt"
