"""`xfs-advisor observe` on real XFS filesystems on loop devices, under workloads whose truth the
test knows because it generates them: writers at a known fsync rate, attributes that fit in the
inode or not, a directory grown into node form, many writers on the smallest log mkfs allows.
Each run starts the workload once the command says it is observing, so that exact counts are
exact; rates are compared with what the writers did in the observed window (their files' times)."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from advisor.commands.schema import schema_text
from advisor.observe.tracepoints import device_filter
from tests.conftest import loop_device, mounted, require, require_root_tools, sh
from tests.observe.conftest import FS_BYTES

REPO = Path(__file__).resolve().parents[2]
ADVISOR = [sys.executable, "-m", "advisor"]


def have_perf() -> bool:
    return subprocess.run(["perf", "stat", "-a", "-e", "xfs:xfs_log_force", "--", "true"],
                          capture_output=True).returncode == 0 if _which("perf") else False


def _which(tool: str) -> bool:
    return any(Path(d, tool).exists() for d in os.environ.get("PATH", "").split(":"))


@contextlib.contextmanager
def observing(*args: str, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[str]]:
    """`xfs-advisor observe ARGS` running; yields once it says it is observing. Killed on the
    way out if the test left it running."""
    proc = subprocess.Popen([*ADVISOR, "observe", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO, env=env)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "observing" in line, line + proc.stderr.read()
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def finish(proc: subprocess.Popen[str]) -> tuple[int, dict[str, Any], str]:
    out, err = proc.communicate(timeout=120)
    doc = json.loads(out) if out.strip().startswith("{") else {}
    return proc.returncode, doc, err


def perf_processes_for(dev: str) -> list[int]:
    """perf processes whose command line filters on this device's events."""
    st = os.stat(dev)
    needle = device_filter(f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}").encode()
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            with contextlib.suppress(OSError):
                if needle in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(int(pid))
    return found


def rate(fs: dict[str, Any], name: str) -> dict[str, Any]:
    return next(r for r in fs["rates"] if r["name"] == name)


def rules(fs: dict[str, Any]) -> list[str]:
    return [f["rule"] for f in fs["findings"]]


WRITER = """
import os, sys, time
folder, rate, until = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
os.makedirs(folder, exist_ok=True)
i, start = 0, time.monotonic()
while time.time() < until:
    fd = os.open(f"{folder}/f{i}", os.O_CREAT | os.O_WRONLY)
    os.write(fd, b"x" * 100)
    os.fsync(fd)
    os.close(fd)
    i += 1
    delay = start + i / rate - time.monotonic()
    if delay > 0:
        time.sleep(delay)
"""


@pytest.mark.root
def test_idle_filesystem_makes_no_finding_and_validates(xfs: tuple[str, Path]) -> None:
    _, mnt = xfs
    with observing("--json", "--for", "1s", str(mnt)) as proc:
        code, doc, err = finish(proc)
    assert code == 0, err
    jsonschema.validate(doc, json.loads(schema_text("observe")))
    (fs,) = doc["filesystems"]
    assert fs["findings"] == []
    assert fs["geometry"]["log_bytes"] > 0 and fs["geometry"]["agcount"] >= 1
    assert fs["concurrent_writers"] in (0, None)
    assert rate(fs, "creates")["evidence"]["delta"] == 0


@pytest.mark.root
@pytest.mark.parametrize("xfs", [("-d", "agcount=4"), ("-d", "agcount=2")], indirect=True,
                         ids=["4-AGs", "2-AGs"])
def test_writers_at_a_known_fsync_rate(xfs: tuple[str, Path], tmp_path: Path) -> None:
    """Three writers at 40 fsyncs a second each: the fsync rate within 10% of what they did in
    the observed window, three concurrent metadata writers, and measured answers written. On
    2 AGs they are more writers than AGs (ag-concurrency); on 4, not."""
    require(have_perf(), "needs perf with xfs tracepoints")
    _, mnt = xfs
    until = time.time() + 30
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(mnt / f"w{i}"), "40",
                                 str(until)]) for i in range(3)]
    workload = tmp_path / "answers.toml"
    try:
        time.sleep(0.5)
        with observing("--json", "--for", "3s", "--write-workload", str(workload),
                       str(mnt)) as proc:
            code, doc, err = finish(proc)
    finally:
        for w in writers:
            w.send_signal(signal.SIGTERM)
            w.wait()
    assert code == 0, err
    (fs,) = doc["filesystems"]
    assert fs["concurrent_writers"] == 3
    assert {w["tid"] for w in fs["writers"] if not w["kernel_thread"]} == {w.pid for w in writers}
    # Each file is written just before its fsync: its mtime dates the fsync.
    start = datetime.datetime.fromisoformat(doc["started"].replace("Z", "+00:00")).timestamp()
    end = start + doc["seconds"]
    truth = sum(1 for p in mnt.glob("w*/f*") if start <= p.stat().st_mtime <= end)
    fsyncs = rate(fs, "fsyncs")
    assert abs(fsyncs["evidence"]["delta"] - truth) <= 0.1 * truth, (fsyncs, truth)
    assert doc["answers"]["concurrent_writers"] == 3
    agcount = fs["geometry"]["agcount"]
    assert ("ag-concurrency" in rules(fs)) == (agcount < 3), (agcount, fs["findings"])
    assert doc["answers"]["writer_activity"] == "metadata"
    text = workload.read_text()
    assert "concurrent_writers = 3  # measured by xfs-advisor observe" in text
    assert "fsyncs_per_second" in text and 'writer_activity = "metadata"' in text


XATTRS = """
import os, sys
folder = sys.argv[1]
os.makedirs(folder)
for i in range(50):
    path = f"{folder}/x{i}"
    open(path, "w").close()
    os.setxattr(path, "user.tag", b"v" * (20 if i < 40 else 300))
"""

DIRECTORY = """
import os, sys
big, small = sys.argv[1], sys.argv[2]
os.makedirs(big)
os.makedirs(small)
for i in range(3000):
    open(f"{big}/entry-{i:06d}", "w").close()
for i in range(5):
    open(f"{small}/e{i}", "w").close()
"""


def observe_while(mnt: Path, script: str, *script_args: str, seconds: str = "3s",
                  extra: tuple[str, ...] = ()) -> tuple[int, dict[str, Any], str]:
    """Observe mnt for `seconds`, running the script once observation has begun."""
    with observing("--json", "--for", seconds, *extra, str(mnt)) as proc:
        subprocess.run([sys.executable, "-c", script, *script_args], check=True)
        return finish(proc)


@pytest.mark.root
def test_attributes_that_fit_and_that_spill(xfs: tuple[str, Path]) -> None:
    """40 files get a 20-byte value (inline), 10 a 300-byte one (over 254: never inline)."""
    require(have_perf(), "needs perf with xfs tracepoints")
    _, mnt = xfs
    code, doc, err = observe_while(mnt, XATTRS, str(mnt / "tagged"))
    assert code == 0, err
    (fs,) = doc["filesystems"]
    assert fs["forms"]["attribute_sets_inline"] == 40
    assert fs["forms"]["attribute_spills"] == 10
    assert rate(fs, "xattr_sets")["evidence"]["delta"] == 50
    (finding,) = [f for f in fs["findings"] if f["rule"] == "inode-size"]
    assert finding["message"].startswith("10 of 50 setxattr calls (20%) moved the attributes "
                                         "out of the 512-byte inode")


@pytest.mark.root
def test_a_directory_grown_into_node_form(xfs: tuple[str, Path]) -> None:
    """3000 entries outgrow one 4 KiB directory block's leaf: the directory goes shortform ->
    block -> leaf -> node once; a 5-entry one stays in the inode."""
    require(have_perf(), "needs perf with xfs tracepoints")
    _, mnt = xfs
    code, doc, err = observe_while(mnt, DIRECTORY, str(mnt / "big"), str(mnt / "small"))
    assert code == 0, err
    (fs,) = doc["filesystems"]
    forms = fs["forms"]
    assert forms["largest_directory_form"] == "node"
    assert forms["directory_conversions"] == {"shortform->block": 1, "block->leaf": 1,
                                              "leaf->node": 1}
    # 3005 files and the two directories; an add that converts the directory is traced in the
    # old form and again in the new one.
    assert sum(forms["directory_adds"].values()) == 3007 + 3
    assert rate(fs, "creates")["evidence"]["delta"] == 3007
    (finding,) = [f for f in fs["findings"] if f["rule"] == "dir-block-size"]
    assert finding["message"].startswith("1 directory grew into node form and ")


@pytest.mark.root
def test_not_xfs_is_one_line(tmp_path: Path) -> None:
    proc = subprocess.run([*ADVISOR, "observe", "--for", "1s", str(tmp_path)],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "not XFS" in proc.stderr, proc.stderr


@pytest.mark.root
def test_unmounted_mid_observation(tmp_path: Path) -> None:
    """The filesystem goes away during the interval: one line, exit 3, no perf left behind."""
    require_root_tools("losetup", "mkfs.xfs", "mount")
    with loop_device(tmp_path / "fs.img", FS_BYTES) as dev:
        sh("mkfs.xfs", "-q", "-f", dev)
        mnt = tmp_path / "mnt"
        with mounted(dev, mnt), observing("--for", "1h", str(mnt)) as proc:
            sh("umount", str(mnt))
            _, err = proc.communicate(timeout=60)  # at once, not in an hour
        assert proc.returncode == 3, err
        assert err.strip().endswith("was unmounted during the observation"), err
        assert err.count("\n") == 1  # one line (the observing notice was read before)
        assert perf_processes_for(dev) == []


@pytest.mark.root
def test_ctrl_c_leaves_nothing_running(xfs: tuple[str, Path], tmp_path: Path) -> None:
    require(have_perf(), "needs perf with xfs tracepoints")
    dev, mnt = xfs
    scratch = tmp_path / "scratch"  # where its perf record file goes: its own TMPDIR
    scratch.mkdir()
    with observing("--for", "30s", str(mnt), env={**os.environ, "TMPDIR": str(scratch)}) as proc:
        assert perf_processes_for(dev), "perf should be counting"
        assert list(scratch.iterdir()), "perf record should be writing"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.splitlines()[-1] == "xfs-advisor: interrupted"
    assert perf_processes_for(dev) == []
    assert list(scratch.iterdir()) == []


@pytest.mark.root
def test_without_perf_it_falls_back_to_the_counters(xfs: tuple[str, Path],
                                                    tmp_path: Path) -> None:
    """A PATH where every tool but perf is found: the counters alone, and the line saying
    what cannot be told."""
    _, mnt = xfs
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for folder in ("/usr/bin", "/bin"):
        for tool in Path(folder).iterdir():
            if not tool.name.startswith("perf") and not (bin_dir / tool.name).exists():
                (bin_dir / tool.name).symlink_to(tool)
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/sbin:/sbin"}
    with observing("--for", "1s", str(mnt), env=env) as proc:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "tracepoints: not counted (perf is not installed" in out
    assert "how many processes changed metadata at once (ag-concurrency)" in out
    assert "findings: none" in out


@pytest.mark.root
def test_record_then_replay_anywhere_gives_the_same_report(xfs: tuple[str, Path],
                                                           tmp_path: Path) -> None:
    """The recording holds the raw readings; replayed (no filesystem, no perf needed) it gives
    the same document, findings included."""
    require(have_perf(), "needs perf with xfs tracepoints")
    _, mnt = xfs
    recording = tmp_path / "seen.json"
    code, live, err = observe_while(mnt, XATTRS, str(mnt / "tagged"),
                                    extra=("--record", str(recording)))
    assert code == 0, err
    assert "inode-size" in rules(live["filesystems"][0])
    replay = subprocess.run([*ADVISOR, "observe", "--json", "--replay", str(recording)],
                            capture_output=True, text=True, cwd=REPO,
                            env={**os.environ, "PATH": "/nonexistent"})
    assert replay.returncode == 0, replay.stderr
    assert json.loads(replay.stdout) == live


@pytest.mark.parametrize(("content", "needle"), [
    ("{", "is not an observe recording"),
    ('{"format": "something else", "seconds": 1}', "is not an observe recording (('format',)"),
    ('{"seconds": 1, "tracing": {"method": "none"}, "filesystems": []}',
     "is not an observe recording (('filesystems',)"),
])
def test_bad_recordings_are_one_line(tmp_path: Path, content: str, needle: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    proc = subprocess.run([*ADVISOR, "observe", "--replay", str(bad)], capture_output=True,
                          text=True, cwd=REPO)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and needle in proc.stderr, proc.stderr


@pytest.mark.root
def test_not_root_falls_back_to_the_counters_and_says_why(tmp_path: Path) -> None:
    """As nobody, perf may not count kernel tracepoints (kernel.perf_event_paranoid): the
    counters alone, and the reason in the report. Mounted where nobody can reach it."""
    require_root_tools("losetup", "mkfs.xfs", "mount", "runuser")
    paranoid = int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())
    require(paranoid >= 1, "kernel.perf_event_paranoid lets anyone count tracepoints here")
    # The system's /tmp, not this test run's temp folder (TMPDIR, private to root): nobody must
    # reach the mount point and write its own temporary files.
    env = {k: v for k, v in os.environ.items() if k != "TMPDIR"}
    with loop_device(tmp_path / "fs.img", FS_BYTES) as dev, \
            tempfile.TemporaryDirectory(dir="/tmp") as folder:
        os.chmod(folder, 0o755)
        sh("mkfs.xfs", "-q", "-f", dev)
        with mounted(dev, Path(folder, "mnt")) as mnt:
            proc = subprocess.run(["runuser", "-u", "nobody", "--", *ADVISOR, "observe",
                                   "--for", "500ms", str(mnt)],
                                  capture_output=True, text=True, cwd=REPO, env=env)
    require(Path("/tmp").stat().st_mode & 0o005 == 0o005,
            "the temporary folder is not reachable by nobody")
    assert proc.returncode == 0, proc.stderr
    assert ("tracepoints: not counted (perf cannot count xfs tracepoints" in proc.stdout
            and "(not root; kernel.perf_event_paranoid=" in proc.stdout), proc.stdout
    assert "how many processes changed metadata at once (ag-concurrency)" in proc.stdout


@pytest.mark.root
def test_two_filesystems_each_with_its_own_figures(xfs: tuple[str, Path],
                                                   tmp_path: Path) -> None:
    """Files created on one of two watched filesystems count there only: the tracepoint filter
    and the per-mount statistics keep them apart."""
    require(have_perf(), "needs perf with xfs tracepoints")
    _, busy = xfs
    with loop_device(tmp_path / "quiet.img", FS_BYTES) as dev:
        sh("mkfs.xfs", "-q", "-f", dev)
        with mounted(dev, tmp_path / "quiet") as quiet:
            code, doc, err = observe_while(busy, DIRECTORY, str(busy / "big"),
                                           str(busy / "small"), extra=(str(quiet),))
    assert code == 0, err
    by_mount = {fs["mountpoint"]: fs for fs in doc["filesystems"]}
    assert set(by_mount) == {str(busy), str(quiet)}
    assert rate(by_mount[str(busy)], "creates")["evidence"]["delta"] == 3007
    assert rate(by_mount[str(quiet)], "creates")["evidence"]["delta"] == 0
    assert by_mount[str(quiet)]["forms"]["largest_directory_form"] is None
    assert by_mount[str(quiet)]["findings"] == []


@pytest.mark.root
def test_sigkill_takes_perf_with_it(xfs: tuple[str, Path], tmp_path: Path) -> None:
    """Killed outright, the advisor cannot stop perf itself: the kernel does (parent-death
    signal), instead of perf counting on until its hour-long sleep ends. The perf record
    folder it leaves is removed by the next observation."""
    require(have_perf() and _which("setpriv"), "needs perf and setpriv")
    dev, mnt = xfs
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    with observing("--for", "1h", str(mnt), env=env) as proc:
        assert perf_processes_for(dev)
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 10
        while perf_processes_for(dev) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert perf_processes_for(dev) == []
    assert len(list(scratch.iterdir())) == 1
    with observing("--for", "100ms", str(mnt), env=env) as proc:
        code, _, err = finish(proc)
    assert code == 0, err
    assert list(scratch.iterdir()) == []


WAVES = """
import os, subprocess, sys, time
folder = sys.argv[1]
writer = '''
import os, sys, time
folder, until = sys.argv[1], float(sys.argv[2])
os.makedirs(folder)
i = 0
while time.time() < until:
    fd = os.open(f"{folder}/f{i}", os.O_CREAT | os.O_WRONLY)
    os.fsync(fd)
    os.close(fd)
    i += 1
    time.sleep(0.02)
'''
for wave in range(3):
    until = time.time() + 2
    pair = [subprocess.Popen([sys.executable, "-c", writer, f"{folder}/w{wave}-{n}", str(until)])
            for n in range(2)]
    for p in pair:
        p.wait()
"""


@pytest.mark.root
def test_writers_at_once_not_writers_in_all(xfs: tuple[str, Path]) -> None:
    """Three waves of two writers, one wave after the other: six threads changed metadata,
    two at once, and two is the answer."""
    require(have_perf(), "needs perf with xfs tracepoints")
    _, mnt = xfs
    code, doc, err = observe_while(mnt, WAVES, str(mnt / "waves"), seconds="8s")
    assert code == 0, err
    (fs,) = doc["filesystems"]
    assert len([w for w in fs["writers"] if not w["kernel_thread"]]) == 6
    assert fs["concurrent_writers"] == 2
    assert doc["answers"]["concurrent_writers"] == 2
