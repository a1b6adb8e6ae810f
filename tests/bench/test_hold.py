"""The guard's verdict stays true until the write, on real loop devices:

- a loop device stacked on another block device, or sharing a backing file with one, is followed
  to what really holds its data (sysfs has no holders/slaves link for these);
- the device is held from the check, through the prompt, to the end of the run: nothing can mount
  it, format it or re-bind it meanwhile, and what changes anyway is caught when the answer comes;
- the guard runs again right before every mkfs: a foreign signature that appears between two
  rounds stops the run before it writes.

Each test proves by checksums of the backing files that nothing the tool was not allowed to touch
changed."""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.bench import guard
from advisor.bench.hold import DeviceHold
from advisor.errors import DeviceProblem
from advisor.inspect.devices import find_device, inspect_devices
from advisor.system.loopdev import LoopStatus, loop_status
from advisor.system.sysroot import SysRoot
from tests.bench.test_guard import GIB, attached, checksum
from tests.conftest import REPO, leftovers, mounted, require_root_tools, sh


@pytest.fixture
def root_tools() -> None:
    require_root_tools("losetup", "mkfs.xfs", "mkfs.ext4", "fio")


def _env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "XFS_ADVISOR_STATE_DIR": str(tmp_path / "state"),
           "XFS_ADVISOR_CALIBRATION": str(tmp_path / "calibration.json")}
    env.pop("XFS_ADVISOR_DEBUG", None)
    return env


def _validate(tmp_path: Path, dev: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "advisor", "validate", "--device", dev,
                           "--budget", "12", *extra], capture_output=True, text=True, cwd=REPO,
                          env=_env(tmp_path), timeout=180)


def _settled(*devs: str) -> None:
    for dev in devs:
        sh("blockdev", "--flushbufs", dev, check=False)
    sh("sync")


# ---- item 3: loop devices stacked on block devices or sharing files ----

@contextlib.contextmanager
def _frozen(mnt: Path) -> Iterator[None]:
    """A file written, then the filesystem frozen: a mounted ext4 writes on its own (lazy inode
    table init, superblock times), so only frozen can its backing file's checksum prove that
    nobody else wrote."""
    (mnt / "precious.txt").write_text("do not lose me\n")
    sh("fsfreeze", "-f", str(mnt))
    try:
        yield
    finally:
        sh("fsfreeze", "-u", str(mnt), check=False)


def test_loop_over_a_mounted_device_is_refused(tmp_path: Path, root_tools: None) -> None:
    """`losetup -o 1GiB /dev/loopA` where loopA carries a mounted ext4: the new loop device has
    no signature at its offset and no holders link, but it writes into A's filesystem."""
    a_img = tmp_path / "a.img"
    with attached(a_img, 2 * GIB) as a:
        sh("mkfs.ext4", "-q", a)
        with mounted(a, tmp_path / "ma") as mnt, _frozen(mnt):
            with attached(Path(a), 0, "-o", str(GIB)) as b:
                _settled(a, b)
                before = checksum(a_img)
                proc = _validate(tmp_path, b, "--yes")
                assert proc.returncode == 3, proc.stderr
                line = proc.stderr.strip()
                assert "\n" not in line and "Traceback" not in line
                assert f"it is a loop device over {a}, and it is mounted on {mnt}" in line, line
                assert "it holds data: ext4 (TYPE=ext4" in line, line
                _settled(a)
                assert checksum(a_img) == before
            assert (mnt / "precious.txt").read_text() == "do not lose me\n"
    assert leftovers(tmp_path) == []


def test_loop_sharing_a_backing_file_is_refused(tmp_path: Path, root_tools: None) -> None:
    """A second loop device over the same file, 1 MiB further in: formatting it would write
    into the ext4 that the first one serves."""
    img = tmp_path / "shared.img"
    with attached(img, 2 * GIB) as a:
        sh("mkfs.ext4", "-q", a)
        with mounted(a, tmp_path / "ma") as mnt, _frozen(mnt), \
                attached(img, 0, "-o", str(1 << 20)) as c:
            _settled(a, c)
            before = checksum(img)
            proc = _validate(tmp_path, c, "--yes")
            assert proc.returncode == 3, proc.stderr
            assert f"{a.removeprefix('/dev/')} is bound to the same backing file" in proc.stderr
            _settled(a)
            assert checksum(img) == before


def test_a_long_backing_file_path_is_named_whole(tmp_path: Path, root_tools: None) -> None:
    """The kernel's loop status keeps 63 bytes of the backing file's path: a longer one is
    named whole (from sysfs), so that a refusal names the file the user can look for."""
    folder = tmp_path / ("a-folder-name-long-enough-to-pass-what-the-loop-status-keeps" * 2)
    folder.mkdir()
    img = folder / "disk.img"
    with attached(img, 64 << 20) as dev:
        status = loop_status(dev)
        assert status is not None and len(str(img).encode()) > 63
        assert status.file_name == str(img)
    short = tmp_path / "s.img"
    with attached(short, 64 << 20) as dev:
        status = loop_status(dev)
        assert status is not None and status.file_name == str(short)


def test_links_name_circular_and_unknown_bindings(tmp_path: Path, root_tools: None) -> None:
    """What the kernel says a loop device is bound to, handed to the guard: a backing file on the
    device itself, a binding nobody could read, and a clean one."""
    with attached(tmp_path / "x.img", 2 * GIB) as x:
        inv = inspect_devices(SysRoot(), probe=True)
        dev = find_device(inv, x)
        status = loop_status(x)
        assert status is not None and not status.on_block_device
        clean = guard.Links(loops={dev.name: status})
        assert guard.refusals(inv, dev, GIB, links=clean) == []
        own = os.stat(x).st_rdev
        circular = LoopStatus(backing_dev=own, backing_ino=12, backing_rdev=0, offset=0,
                              sizelimit=0, flags=0, file_name="/mnt/img")
        reasons = guard.refusals(inv, dev, GIB, links=guard.Links(loops={dev.name: circular}))
        assert reasons == ["its backing file (/mnt/img) sits on the filesystem being tested"]
        onto_self = LoopStatus(backing_dev=6, backing_ino=1, backing_rdev=own, offset=0,
                               sizelimit=0, flags=0, file_name=x)
        reasons = guard.refusals(inv, dev, GIB, links=guard.Links(loops={dev.name: onto_self}))
        assert reasons == [f"it is a loop device over {x}, which is built on it"]
        unknown = guard.Links(loops={dev.name: None}, errors={dev.name: "Permission denied"})
        reasons = guard.refusals(inv, dev, GIB, links=unknown)
        assert reasons == [f"the kernel cannot say what {dev.name} is bound to (Permission "
                           "denied)"]
        swap = guard.Links(loops={dev.name: status},
                           swap_files=frozenset({(status.backing_dev, status.backing_ino)}))
        assert guard.refusals(inv, dev, GIB, links=swap) == [
            f"its backing file ({status.file_name}) is in use as swap"]


# ---- item 2: held from the check to the end; checked again after the prompt ----

def test_a_held_device_cannot_be_mounted_or_formatted(tmp_path: Path, root_tools: None) -> None:
    with attached(tmp_path / "h.img", GIB) as dev:
        sh("mkfs.xfs", "-q", dev)
        with DeviceHold(dev) as hold:
            assert hold.exclusive
            (tmp_path / "m").mkdir()
            assert sh("mount", dev, str(tmp_path / "m"), check=False).returncode != 0
            assert sh("mkfs.ext4", "-q", "-F", dev, check=False).returncode != 0
            hold.release()
            # Let go of, mount works again; and then our claim is what waits.
            with mounted(dev, tmp_path / "m"), pytest.raises(DeviceProblem, match="is busy"):
                hold.claim(attempts=2)
        fd = os.open(dev, os.O_RDONLY | os.O_EXCL)
        try:
            with pytest.raises(DeviceProblem, match="is busy"):
                DeviceHold(dev)
        finally:
            os.close(fd)


@contextlib.contextmanager
def _at_the_prompt(tmp_path: Path, dev: str) -> Iterator[subprocess.Popen[str]]:
    """`validate --device DEV` (no --yes) started and waiting at "Type its name"."""
    proc = subprocess.Popen([sys.executable, "-m", "advisor", "validate", "--device", dev,
                             "--budget", "12"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO, env=_env(tmp_path))
    try:
        assert proc.stderr is not None
        seen, deadline = b"", time.monotonic() + 60
        while b"to go on" not in seen:
            assert time.monotonic() < deadline and proc.poll() is None, seen.decode()
            ready, _, _ = select.select([proc.stderr], [], [], 1)
            if ready:
                seen += os.read(proc.stderr.fileno(), 4096)
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def _answer(proc: subprocess.Popen[str], text: str) -> tuple[int, str]:
    _, err = proc.communicate(text, timeout=120)
    return proc.returncode, err


def test_data_written_during_the_prompt_is_found_after_it(tmp_path: Path,
                                                          root_tools: None) -> None:
    """While the prompt waits, an ext4 appears on the device through a plain (non-exclusive)
    write: typing the name must not format it."""
    ext4 = tmp_path / "ext4.img"
    with open(ext4, "wb") as f:
        f.truncate(64 << 20)
    sh("mkfs.ext4", "-q", "-F", str(ext4))
    head = ext4.read_bytes()[: 4 << 20]
    scratch = tmp_path / "scratch.img"
    with attached(scratch, 2 * GIB) as dev, _at_the_prompt(tmp_path, dev) as proc:
        assert sh("mkfs.ext4", "-q", "-F", dev, check=False).returncode != 0  # held: EBUSY
        with open(dev, "r+b") as f:
            f.write(head)
            os.fsync(f.fileno())
        _settled(dev)
        before = checksum(scratch)
        code, err = _answer(proc, f"{dev}\n")
        assert code == 3, err
        assert f"refusing to format {dev}: it holds data: ext4 (TYPE=ext4" in err
        _settled(dev)
        assert checksum(scratch) == before
    assert leftovers(tmp_path) == []


def test_a_device_rebound_during_the_prompt_is_not_formatted(tmp_path: Path,
                                                             root_tools: None) -> None:
    """The attack: detach the checked loop device and attach it over a file holding ext4
    while the prompt waits. Held open, the kernel only defers the detach and refuses the new
    binding; the run sees the detach request and stops."""
    other = tmp_path / "other.img"
    with open(other, "wb") as f:
        f.truncate(2 * GIB)
    sh("mkfs.ext4", "-q", "-F", str(other))
    other_before = checksum(other)
    scratch = tmp_path / "scratch.img"
    with attached(scratch, 2 * GIB) as dev:
        before = checksum(scratch)
        with _at_the_prompt(tmp_path, dev) as proc:
            sh("losetup", "-d", dev)  # accepted, but deferred while the run holds it
            assert sh("losetup", dev, str(other), check=False).returncode != 0
            code, err = _answer(proc, f"{dev}\n")
        assert code == 3, err
        assert f"{dev} changed since it was checked" in err, err
        # Once the run let go, the deferred detach happened: the device is no longer bound.
        deadline = time.monotonic() + 10
        while loop_status(dev) is not None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert loop_status(dev) is None
        assert checksum(scratch) == before
    assert checksum(other) == other_before
    assert leftovers(tmp_path) == []


# ---- the guard again before every mkfs ----

def test_a_foreign_filesystem_between_rounds_stops_the_run(tmp_path: Path, root_tools: None,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """After round 1 the device holds our XFS; before round 2 another XFS (another UUID) is
    written onto it. The re-check before round 2's mkfs refuses, and the device keeps exactly
    what was written."""
    from advisor.bench.plan import Plan
    from advisor.bench.run import execute
    from advisor.models.bench import SideConfig
    from advisor.models.workload import Workload

    monkeypatch.setenv("XFS_ADVISOR_STATE_DIR", str(tmp_path / "state"))
    foreign = tmp_path / "foreign.img"
    with open(foreign, "wb") as f:
        f.truncate(GIB)
    sh("mkfs.xfs", "-q", str(foreign))
    head = foreign.read_bytes()[: 1 << 20]
    scratch = tmp_path / "scratch.img"
    with attached(scratch, 2 * GIB) as dev:
        plan = Plan(a=SideConfig(label="A"), b=SideConfig(label="B"), workload=Workload(),
                          device=dev, device_bytes=2 * GIB, budget_seconds=12,
                          loop_dir=str(tmp_path))

        def plant(done: int, total: int, what: str) -> None:
            if done == 1:
                with open(dev, "r+b") as f:
                    f.write(head)
                    os.fsync(f.fileno())

        with pytest.raises(DeviceProblem, match=r"it holds data: xfs \(TYPE=xfs"):
            execute(plan, progress=plant)
        with open(dev, "rb") as f:
            assert f.read(1 << 20) == head
    assert leftovers(tmp_path) == []
    assert not list((tmp_path / "state").glob("run-*.json"))


def test_check_now_accepts_only_our_own_filesystem(tmp_path: Path, root_tools: None) -> None:
    from advisor.system.superblock import read_xfs_uuid

    with attached(tmp_path / "u.img", 2 * GIB) as dev:
        guard.check_now(dev, GIB)  # blank: fine
        sh("mkfs.xfs", "-q", dev)
        ours = read_xfs_uuid(dev)
        assert ours
        guard.check_now(dev, GIB, ours=ours)
        sh("mkfs.xfs", "-q", "-f", dev)
        with pytest.raises(DeviceProblem, match=r"it holds data: xfs \(TYPE=xfs"):
            guard.check_now(dev, GIB, ours=ours)
    with pytest.raises(DeviceProblem, match="vanished"):
        guard.check_now(dev + "-gone", GIB)


def test_tempdir_is_not_a_mountpoint_of_ours() -> None:
    # The tests above use tmp_path for their state and mounts: a sanity check of that premise.
    assert not any(tempfile.gettempdir() == line.split()[4]
                   for line in Path("/proc/self/mountinfo").read_text().splitlines())
