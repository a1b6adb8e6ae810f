"""`xfs-advisor observe` on real XFS filesystems on loop devices, under workloads whose truth the
test knows because it generates them: writers at a known fsync rate, attributes that fit in the
inode or not (and at the inline edge), directories grown to either side of a form change, files
grown by interleaved small appends or streamed, and 16 writers on the smallest log mkfs.xfs
makes (its 64 MiB floor lifted the way xfsprogs' test suite does).
Each run starts the workload once the command says it is observing, so that exact counts are
exact; rates are compared with what the writers did in the observed window (their files' times)."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import shutil
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


#: The name the tests' writers give themselves (/proc/self/comm), so that a test checks its own
#: among the writers observe lists: any process of the host that changes this filesystem in
#: the window (another test's scan of every mount) is rightly listed too.
WRITER_NAME = "test-writer"
WRITER = """
import os, sys, time
open("/proc/self/comm", "w").write("{WRITER_NAME}")
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
""".replace("{WRITER_NAME}", WRITER_NAME)


@contextlib.contextmanager
def fsync_writers(mnt: Path, count: int,
                  per_second: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """`count` WRITER processes in mnt/w0, mnt/w1..., each at `per_second` fsyncs a second,
    half a second under way when given; stopped on the way out (each stops on its own after
    30 s)."""
    until = time.time() + 30
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(mnt / f"w{i}"),
                                 str(per_second), str(until)]) for i in range(count)]
    try:
        time.sleep(0.5)
        yield writers
    finally:
        for w in writers:
            w.send_signal(signal.SIGTERM)
            w.wait()


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
    # What watching costs is said, measured, with the goal and whether it is met.
    assert doc["cost"].startswith("measured on ") and "goal of under 2% is shown there" \
        in doc["cost"] and "not shown" in doc["cost"]


@pytest.mark.root
@pytest.mark.parametrize("xfs", [("-d", "agcount=4"), ("-d", "agcount=2")], indirect=True,
                         ids=["4-AGs", "2-AGs"])
def test_writers_at_a_known_fsync_rate(xfs: tuple[str, Path], tmp_path: Path) -> None:
    """Three writers at 40 fsyncs a second each: the fsync rate within 10% of what they did in
    the observed window, three concurrent metadata writers, and measured answers written. On
    2 AGs they are more writers than AGs (ag-concurrency); on 4, not."""
    require(have_perf(), "needs perf with xfs tracepoints")
    _, mnt = xfs
    workload = tmp_path / "answers.toml"
    with fsync_writers(mnt, 3, 40) as writers, \
            observing("--json", "--for", "3s", "--write-workload", str(workload),
                      str(mnt)) as proc:
        code, doc, err = finish(proc)
    assert code == 0, err
    (fs,) = doc["filesystems"]
    assert fs["concurrent_writers"] == 3
    assert {w["tid"] for w in fs["writers"] if w["command"] == WRITER_NAME} == \
        {w.pid for w in writers}, fs["writers"]
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


#: perf as it was before its record could enable events over ranges of time: its list of
#: options says `--delay` takes a number only; anything else is the real perf's.
OLD_PERF = """#!/bin/sh
if [ "$1" = record ] && [ "$2" = -h ]; then
    echo "    -D, --delay <n>       ms to wait before starting measurement after program start"
    exit 129
fi
exec {perf} "$@"
"""


@pytest.mark.root
def test_a_perf_that_cannot_slice_samples_the_writers_instead(xfs: tuple[str, Path],
                                                             tmp_path: Path) -> None:
    """Where perf record takes no ranges of time, the writers are recorded throughout, one
    transaction in 10 on each CPU, as before slices: the same three writers at once, and the
    report says how the transactions were estimated."""
    require(have_perf(), "needs perf with xfs tracepoints")
    _, mnt = xfs
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real = shutil.which("perf")
    assert real is not None
    (bin_dir / "perf").write_text(OLD_PERF.replace("{perf}", real))
    (bin_dir / "perf").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"}
    recording = tmp_path / "seen.json"
    with fsync_writers(mnt, 3, 40) as writers, \
            observing("--json", "--for", "3s", "--record", str(recording), str(mnt),
                      env=env) as proc:
        code, doc, err = finish(proc)
    assert code == 0, err
    (fs,) = doc["filesystems"]
    assert fs["writer_slice_ms"] is None and fs["writer_period"] == 10, fs
    assert fs["concurrent_writers"] == 3
    assert {w["tid"] for w in fs["writers"] if w["command"] == WRITER_NAME} == \
        {w.pid for w in writers}, fs["writers"]
    replay = subprocess.run([*ADVISOR, "observe", "--replay", str(recording)],
                            capture_output=True, text=True, cwd=REPO, timeout=60)
    assert replay.returncode == 0, replay.stderr
    assert "estimated from one in 10 recorded on each CPU: " in replay.stdout, replay.stdout


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
    assert fs["forms"]["attribute_sets"] == 50
    assert rate(fs, "xattr_sets")["evidence"]["delta"] == 50
    # Each file's attribute: the name "tag" (3 bytes, its namespace is a flag) and its value.
    assert fs["forms"]["attribute_files"] == 50
    assert fs["forms"]["attribute_bytes_per_file"] == 23
    assert fs["forms"]["largest_attribute_value"] == 300
    assert doc["answers"]["xattr_bytes_per_file"] == 23
    assert doc["answers"]["largest_xattr_value"] == 300
    (finding,) = [f for f in fs["findings"] if f["rule"] == "inode-size"]
    assert finding["message"].startswith("10 of 50 setxattr calls (20%) moved the attributes "
                                         "out of the 512-byte inode")
    assert "(inode-size: 512 keeps 280 B inline, 1024 keeps 792 B inline, 2048 keeps 1816 B " \
        "inline; a value over 254 B never stays inline)" in finding["message"], finding


SPILLING = """
import os, sys, time
folder, until = sys.argv[1], float(sys.argv[2])
os.makedirs(folder)
i = 0
while time.time() < until:
    path = f"{folder}/x{i}"
    open(path, "w").close()
    os.setxattr(path, "user.tag", b"v" * 300)
    i += 1
"""


@pytest.mark.root
def test_spills_are_never_more_than_the_calls_they_are_a_share_of(
        xfs: tuple[str, Path], tmp_path: Path) -> None:
    """A writer setting one 300-byte value per file (every set spills) runs across both ends of
    the window. The statistics are read a few milliseconds apart from perf's window, so attr.set
    moves by a different number than the spills counted (9,182 spills against 9,133 in one run):
    the share is of the sets counted in perf's own window, the text and the report agree, and
    no part is printed larger than its whole. The writers' transactions are estimates from
    samples, said so, and never more than the statistics counted."""
    require(have_perf(), "needs perf with xfs tracepoints")
    _, mnt = xfs
    recording = tmp_path / "seen.json"
    writer = subprocess.Popen([sys.executable, "-c", SPILLING, str(mnt / "s"),
                               str(time.time() + 60)])
    try:
        deadline = time.monotonic() + 20  # the writer is setting attributes before it starts
        while not list((mnt / "s").glob("x1*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        with observing("--json", "--for", "2s", "--record", str(recording), str(mnt)) as proc:
            code, doc, err = finish(proc)
    finally:
        writer.kill()
        writer.wait()
    assert code == 0, err
    (fs,) = doc["filesystems"]
    spills, sets = fs["forms"]["attribute_spills"], fs["forms"]["attribute_sets"]
    assert spills > 100, fs["forms"]  # the writer was busy across the whole window
    # Every set spills: in one window the two differ only by a call cut by its edge.
    assert abs(sets - spills) <= 2, fs["forms"]
    (finding,) = [f for f in fs["findings"] if f["rule"] == "inode-size"]
    part, whole = (int(n.replace(",", "")) for n in re.match(
        r"([\d,]+) of ([\d,]+) setxattr calls \((\d+)%\)", finding["message"]).groups()[:2])
    assert part == spills and whole == max(sets, spills) and part <= whole, finding
    assert ("set after it" in finding["message"]) == (spills > sets), finding
    assert [e["counter"] for e in finding["evidence"]] == [
        "xfs:xfs_attr_sf_to_leaf",
        "xfs:xfs_attr_sf_add + xfs:xfs_attr_leaf_add + xfs:xfs_attr_node_addname"]
    # The transactions per writer are samples times the period, capped by the statistics.
    counted = sum(fs["counters"].get(f"trans.{k}", 0) for k in ("sync", "async", "empty"))
    assert fs["writers"] and all(w["transactions"] <= counted for w in fs["writers"]), fs
    replay = subprocess.run([*ADVISOR, "observe", "--replay", str(recording)],
                            capture_output=True, text=True, cwd=REPO, timeout=60)
    assert replay.returncode == 0, replay.stderr
    text = replay.stdout
    assert f"attributes: {sets:,} set, " in text or spills > sets, text
    for m in re.finditer(r"([\d,]+) of ([\d,]+) ", text):
        assert int(m[1].replace(",", "")) <= int(m[2].replace(",", "")), m[0]
    assert f"estimated from every one in the first {fs['writer_slice_ms']} ms of each " \
        "second: " in text, text
    assert re.search(r"python3?\[\d+\] ~[\d,]+", text), text


INLINE_EDGE = """
import os, sys
folder, last = sys.argv[1], [int(v) for v in sys.argv[2:]]
os.makedirs(folder)
for i, value in enumerate(last):
    path = f"{folder}/f{i}"
    open(path, "w").close()
    for name in ("a1", "a2", "a3"):
        os.setxattr(path, f"user.{name}", b"v" * 250)
    os.setxattr(path, "user.d", b"w" * value)
"""


@pytest.mark.root
@pytest.mark.parametrize("xfs", [("-i", "size=1024")], indirect=True, ids=["1024-byte"])
def test_the_inline_room_said_is_the_kernels(xfs: tuple[str, Path]) -> None:
    """'1024 keeps 792 B inline', proven on a real 1024-byte inode: three 250-byte values under
    2-byte names and a fourth attribute "d" take 4 + 3 x 255 + 3 + 1 + V bytes of inline fork:
    V = 19 is exactly 792 and stays in the inode, V = 20 moves the attributes out."""
    require(have_perf(), "needs perf with xfs tracepoints")
    _, mnt = xfs
    code, doc, err = observe_while(mnt, INLINE_EDGE, str(mnt / "edge"), "19", "20")
    assert code == 0, err
    (fs,) = doc["filesystems"]
    assert fs["geometry"]["inode_size"] == 1024
    assert fs["forms"]["attribute_spills"] == 1
    (finding,) = [f for f in fs["findings"] if f["rule"] == "inode-size"]
    assert "(inode-size: 1024 keeps 792 B inline, 2048 keeps 1816 B inline;" \
        in finding["message"], finding


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
    assert forms["largest_directory_entries_at_least"] == 493
    assert "the largest had at least 493 entries, a lower bound from its form" \
        in finding["message"]
    assert doc["answers"]["largest_directory_entries"] == 493


GROWN = """
import os, sys
folder, count, length = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(folder)
for i in range(count):
    open(f"{folder}/{i:06d}".ljust(len(folder) + 1 + length, "n"), "w").close()
"""


@pytest.mark.root
@pytest.mark.parametrize(("count", "length", "node"), [(492, 255, False), (493, 255, True),
                                                        (500, 6, False), (501, 6, True)])
def test_the_directory_bound_is_the_kernels(xfs: tuple[str, Path], count: int, length: int,
                                            node: bool) -> None:
    """The lower bound said for a node-form directory (493 entries for 4 KiB blocks) is where
    the kernel converts one whose names are all 255 bytes long; with short names it converts
    later (501), so the bound holds whatever the names."""
    require(have_perf(), "needs perf with xfs tracepoints")
    _, mnt = xfs
    code, doc, err = observe_while(mnt, GROWN, str(mnt / "d"), str(count), str(length))
    assert code == 0, err
    (fs,) = doc["filesystems"]
    assert fs["forms"]["directory_conversions"]["leaf->node"] == (1 if node else 0)
    assert (fs["forms"]["largest_directory_form"] == "node") == node
    if node:
        assert doc["answers"]["largest_directory_entries"] == 493 <= count


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
open("/proc/self/comm", "w").write("{WRITER_NAME}")
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
""".replace("{WRITER_NAME}", WRITER_NAME)


@pytest.mark.root
def test_writers_at_once_not_writers_in_all(xfs: tuple[str, Path]) -> None:
    """Three waves of two writers, one wave after the other: six threads changed metadata,
    two at once, and two is the answer."""
    require(have_perf(), "needs perf with xfs tracepoints")
    _, mnt = xfs
    code, doc, err = observe_while(mnt, WAVES, str(mnt / "waves"), seconds="8s")
    assert code == 0, err
    (fs,) = doc["filesystems"]
    assert len([w for w in fs["writers"] if w["command"] == WRITER_NAME]) == 6, fs["writers"]
    assert fs["concurrent_writers"] == 2
    assert doc["answers"]["concurrent_writers"] == 2


APPENDS = """
import os, sys
mode, folder = sys.argv[1], sys.argv[2]
os.makedirs(folder)
total = 6 << 20
if mode == "interleaved":  # four files grown 4 KiB at a time in turn, each forced out
    fds = [os.open(f"{folder}/w{i}", os.O_CREAT | os.O_WRONLY | os.O_APPEND) for i in range(4)]
    for _ in range(total // 4096 // 4):
        for fd in fds:
            os.write(fd, b"x" * 4096)
            os.fdatasync(fd)
else:  # one file streamed in 1 MiB writes, forced out once
    fd = os.open(f"{folder}/one", os.O_CREAT | os.O_WRONLY)
    for _ in range(total >> 20):
        os.write(fd, b"x" * (1 << 20))
    os.fsync(fd)
"""


@pytest.mark.root
@pytest.mark.parametrize("mode", ["interleaved", "sequential"])
def test_fragmentation_from_interleaved_small_appends(xfs: tuple[str, Path], mode: str) -> None:
    """6 MiB written as 4 KiB appends to four files in turn, each fdatasync'd, get many small
    extents (allocsize / extent-size-hint); the same 6 MiB streamed into one file do not."""
    _, mnt = xfs
    code, doc, err = observe_while(mnt, APPENDS, mode, str(mnt / "files"), seconds="20s",
                                   extra=("--counters-only",))
    assert code == 0, err
    (fs,) = doc["filesystems"]
    assert rate(fs, "written_bytes")["evidence"]["delta"] == 6 << 20
    found = [f for f in fs["findings"] if f["rule"] == "allocsize"]
    assert bool(found) == (mode == "interleaved"), fs["findings"]
    if found:
        assert "extent-size-hint" in found[0]["message"]
        counters = {e["counter"] for e in found[0]["evidence"]}
        assert {"extent_alloc.alloc_extents", "xpc.write_bytes"} <= counters


CHURN = """
import os, subprocess, sys, time
folder, writers, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
one = '''
import os, sys, time
folder, until = sys.argv[1], time.time() + float(sys.argv[2])
os.makedirs(folder)
i = 0
while time.time() < until:
    open(f"{folder}/f{i}", "w").close()
    if i >= 200:
        os.unlink(f"{folder}/f{i - 200}")
    i += 1
'''
procs = [subprocess.Popen([sys.executable, "-c", one, f"{folder}/w{n}", str(seconds)])
         for n in range(writers)]
for p in procs:
    p.wait()
"""


@pytest.mark.root
def test_writers_wait_for_space_in_the_smallest_log(tmp_path: Path) -> None:
    """The smallest log mkfs.xfs makes (1368 blocks of 4 KiB; xfsprogs refuses less than 64 MiB
    outside its test suite, whose environment variables lift that floor) and 16 writers each
    creating files and removing them 200 behind: they wait for log space, the counter moves and
    the log-size finding names the log and, with tracepoints, the time the waits took."""
    require_root_tools("losetup", "mkfs.xfs", "mount")
    env = {**os.environ, "TEST_DIR": str(tmp_path), "QA_CHECK_FS": "xfs"}
    with loop_device(tmp_path / "fs.img", FS_BYTES) as dev:
        subprocess.run(["mkfs.xfs", "-q", "-f", "-l", "size=1368b", dev], check=True,
                       env={**env, "TEST_DEV": dev}, capture_output=True)
        with mounted(dev, tmp_path / "mnt") as mnt:
            code, doc, err = observe_while(mnt, CHURN, str(mnt / "churn"), "16", "6",
                                           seconds="8s")
    assert code == 0, err
    (fs,) = doc["filesystems"]
    assert fs["geometry"]["log_bytes"] == 1368 * 4096
    waits = rate(fs, "log_space_waits")["evidence"]
    assert waits["counter"] == "push_ail.sleep_logspace" and waits["delta"] > 0, waits
    (finding,) = [f for f in fs["findings"] if f["rule"] == "log-size"]
    assert finding["message"].startswith(f"writers waited for log space {waits['delta']:,} "
                                         "times"), finding
    assert "log ran out of room for" in finding["message"], finding
    if doc["tracing"]["method"] == "none":
        assert fs["log_space_waits"] is None and "(not timed" in finding["message"]
        return
    # Each wait timed from its thread's sleep to its wake, over the first 8 s: the same waits
    # the statistics count (within the counters' window), none longer than the time recorded.
    timed = fs["log_space_waits"]
    assert timed["waits"] > 0 and timed["waits"] + timed["unfinished"] <= waits["delta"], timed
    assert timed["over_seconds"] == 8
    assert 0 < timed["longest"] <= timed["seconds"] <= 16 * timed["over_seconds"], timed
    assert f"; in the first 8 s {timed['waits']:,} waits took " in finding["message"], finding
    assert "xfs:xfs_log_grant_sleep to xfs:xfs_log_grant_wake" in [
        e["counter"] for e in finding["evidence"]]


SPREAD = """
import os, sys, time
folder, until = sys.argv[1], float(sys.argv[2])
for d in range(4):  # a directory's new files go to its own AG: four spread them
    os.makedirs(f"{folder}/d{d}")
i = 0
while time.time() < until:  # d3 gets three files for every one the others get
    d = (0, 1, 2, 3, 3, 3)[i % 6]
    fd = os.open(f"{folder}/d{d}/f{i}", os.O_CREAT | os.O_WRONLY)
    os.posix_fallocate(fd, 0, 4096)  # one extent, allocated now, in the file's AG
    os.close(fd)
    i += 1
    time.sleep(0.0005)
"""


@pytest.mark.root
@pytest.mark.parametrize("xfs", [("-d", "agcount=4")], indirect=True, ids=["4-AGs"])
def test_allocations_split_per_ag(xfs: tuple[str, Path]) -> None:
    """Files allocated steadily in four directories (one per AG), one of them getting three
    times the others' files: the extents per AG add up to the statistics' own count of
    extents allocated, and each AG's share, estimated from the allocations recorded in the
    writers' slices, is within 5 points of its share counted exactly, in the kernel, by a
    `perf stat` of the event once per AG over the whole observation. (The estimate sees a
    tenth of each second: steady work, as here, gives it the proportions of each slice, a
    few hundred allocations; 5 points is several times what that misses.)"""
    require(have_perf(), "needs perf with xfs tracepoints")
    from advisor.observe.tracepoints import AG_EVENT, parse_per_ag
    from advisor.system import argv

    dev, mnt = xfs
    rdev = os.stat(dev).st_rdev
    flt = device_filter(f"{os.major(rdev)}:{os.minor(rdev)}")
    exact = subprocess.Popen(argv.perf_stat([], flt, 60, [
        (AG_EVENT, f"{flt} && agno == {n}") for n in range(4)]), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not any(Path(f"/proc/{c}/comm").read_text().strip() == "sleep" for c in Path(
                f"/proc/{exact.pid}/task/{exact.pid}/children").read_text().split()):
            assert exact.poll() is None and time.monotonic() < deadline, "perf stat failed"
            time.sleep(0.01)
        code, doc, err = observe_while(mnt, SPREAD, str(mnt / "spread"),
                                       str(time.time() + 2.5), seconds="4s")
    finally:  # its sleep interrupted too: perf prints its counts and ends
        os.killpg(exact.pid, signal.SIGINT)
        try:
            _, counted = exact.communicate(timeout=30)
        finally:
            if exact.poll() is None:
                os.killpg(exact.pid, signal.SIGKILL)
                exact.wait()
    assert code == 0, err
    truth = parse_per_ag(counted, AG_EVENT)
    (fs,) = doc["filesystems"]
    per_ag, recorded = fs["allocations_per_ag"], fs["allocations_recorded"]
    assert len(per_ag) == 4 and len(truth) == 4, (per_ag, truth)
    assert sum(per_ag) == rate(fs, "extent_allocations")["evidence"]["delta"] == sum(truth)
    assert 100 <= recorded < sum(truth) / 3, (recorded, truth)
    shares = [n / sum(per_ag) for n in per_ag]
    true_shares = [n / sum(truth) for n in truth]
    assert max(true_shares) > 0.4, truth  # d3's AG: about half of them
    assert all(abs(a - b) <= 0.05 for a, b in zip(shares, true_shares, strict=True)), (
        per_ag, truth)


@pytest.mark.root
@pytest.mark.parametrize("xfs", [("-d", "agcount=2")], indirect=True, ids=["2-AGs"])
def test_ag_header_locks_found_held_by_many_writers(xfs: tuple[str, Path]) -> None:
    """8 writers creating and removing files on 2 AGs, observed with --ag-locks: the locks on
    the AGs' headers (AGF, AGI) are counted in the kernel, at least one per file created in
    the window (each takes its AG's AGI), and some found the header held by another writer;
    the ag-concurrency finding gives both, and says the time they waited is not measured.
    Without --ag-locks they are not counted, and the finding says how to count them."""
    require(have_perf(), "needs perf with xfs tracepoints")
    _, mnt = xfs
    code, doc, err = observe_while(mnt, CHURN, str(mnt / "churn"), "8", "3", seconds="3s",
                                   extra=("--ag-locks",))
    assert code == 0, err
    (fs,) = doc["filesystems"]
    locks, waited = fs["ag_header_locks"], fs["ag_header_locks_waited"]
    creates = rate(fs, "creates")["evidence"]["delta"]
    assert creates > 1000, creates
    assert locks >= creates and 0 < waited < locks, (locks, waited, creates)
    (finding,) = [f for f in fs["findings"] if f["rule"] == "ag-concurrency"]
    assert (f"; {waited:,} of {locks:,} locks on the AG headers (AGF, AGI) found the header "
            "held by another thread") in finding["message"], finding
    assert "not measured: how long creates, removes and attribute sets waited" \
        in finding["message"], finding
    assert ("xfs:xfs_buf_lock on the AG headers, lockval == 0", waited) in [
        (e["counter"], e["delta"]) for e in finding["evidence"]]
    # Not asked for, not counted (it costs the writers CPU): the finding says how to.
    code, doc, err = observe_while(mnt, CHURN, str(mnt / "again"), "8", "2", seconds="2s")
    assert code == 0, err
    (fs,) = doc["filesystems"]
    assert fs["ag_header_locks"] is None and fs["ag_header_locks_waited"] is None
    (finding,) = [f for f in fs["findings"] if f["rule"] == "ag-concurrency"]
    assert "--ag-locks counts the locks that found an AG header held" in finding["message"]


def test_ag_locks_only_where_tracepoints_are_counted() -> None:
    for args in (["--replay", "x.json", "--ag-locks"], ["--counters-only", "--ag-locks"]):
        proc = subprocess.run([*ADVISOR, "observe", *args], capture_output=True, text=True,
                              cwd=REPO, timeout=60)
        assert proc.returncode == 2 and "--ag-locks" in proc.stderr, proc.stderr


#: Names a process or an attribute can be given, built to forge output or parsed records: a
#: line break and a report line after it, terminal escape sequences (clear, retitle), a bidi
#: override (the kernel keeps 15 bytes of a command name).
HOSTILE_COMMANDS = ("x\nlog-size: fo", "\x1b[2J\x1b]0;t\x07", "\u202eevil")
#: An attribute name whose lines pass, in perf script's text, for an 8-second wait for log
#: space and a 60000-byte attribute value.
FORGING_ATTRIBUTE = ("user.a\n  1 1.000000: xfs:xfs_log_grant_sleep: dev 7:0\n"
                     "  1 9.000000: xfs:xfs_log_grant_wake: dev 7:0\n  1 1.000000: "
                     "xfs:xfs_attr_sf_add: dev 7:0 ino 0x1 name z namelen 1 valuelen 60000 "
                     "hashval 0x0\nb")

#: A writer under a hostile name, creating files for over a second (the writers are recorded
#: over the first 100 ms of each second: one that wrote only between two such slices would not
#: be seen, whatever its name).
HOSTILE = """
import os, sys, time
folder, name, attribute = sys.argv[1], sys.argv[2].encode(), sys.argv[3]
os.makedirs(folder)
with open("/proc/self/comm", "wb") as f:
    f.write(name)
i, until = 0, time.monotonic() + 1.2
while time.monotonic() < until:
    open(f"{folder}/f{i}", "w").close()
    i += 1
    time.sleep(0.002)
os.setxattr(f"{folder}/f0", attribute, b"abc")
"""


@pytest.mark.root
def test_hostile_names_forge_no_line_no_record(xfs: tuple[str, Path], tmp_path: Path) -> None:
    """Writers named to forge a report line or drive the terminal, and an attribute name whose
    text passes for perf records: the records are read as perf's Python hook prints them (one
    JSON line each), so no wait and no attribute is forged; the names are kept exactly in the
    data and shown escaped in the page and the JSON (no raw line break, escape or bidi
    character reaches the terminal)."""
    require(have_perf(), "needs perf with xfs tracepoints")
    _, mnt = xfs
    recording = tmp_path / "seen.json"
    with observing("--json", "--for", "4s", "--record", str(recording), str(mnt)) as proc:
        hostile = [subprocess.Popen([sys.executable, "-c", HOSTILE, str(mnt / f"h{n}"), name,
                                     FORGING_ATTRIBUTE]) for n, name in enumerate(HOSTILE_COMMANDS)]
        assert [w.wait(60) for w in hostile] == [0] * len(hostile)
        code, doc, err = finish(proc)
    assert code == 0, err
    (fs,) = doc["filesystems"]
    commands = {w["command"] for w in fs["writers"]}
    assert set(HOSTILE_COMMANDS) <= commands, commands
    assert fs["log_space_waits"]["waits"] == 0, fs["log_space_waits"]
    assert "log-size" not in rules(fs)
    assert fs["forms"]["largest_attribute_value"] == 3
    name_bytes = len(FORGING_ATTRIBUTE.removeprefix("user.").encode())
    assert fs["forms"]["attribute_bytes_per_file"] == name_bytes + 3
    pages = {"json": subprocess.run([*ADVISOR, "observe", "--json", "--replay", str(recording)],
                                    capture_output=True, text=True, cwd=REPO, timeout=60),
             "text": subprocess.run([*ADVISOR, "observe", "--replay", str(recording)],
                                    capture_output=True, text=True, cwd=REPO, timeout=60)}
    for kind, page in pages.items():
        assert page.returncode == 0, page.stderr
        assert not any(c in page.stdout for c in "\x1b\x07\u202e"), (kind, page.stdout)
        assert not any(line.lstrip().startswith("log-size: fo")
                       for line in page.stdout.splitlines()), (kind, page.stdout)
    assert "x\\nlog-size: fo[" in pages["text"].stdout, pages["text"].stdout
    assert "\\e[2J\\e]0;t\\x07[" in pages["text"].stdout and "\\u202eevil[" \
        in pages["text"].stdout
    replayed = json.loads(pages["json"].stdout)["filesystems"][0]["writers"]
    assert set(HOSTILE_COMMANDS) <= {w["command"] for w in replayed}
