"""The scratch-device guard on real loop devices: each unsafe device is refused with its reason, and
a checksum of the backing file proves that not one byte changed."""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.bench import guard
from advisor.bench.plan import MIN_DEVICE_BYTES
from advisor.inspect.devices import find_device, inspect_devices
from advisor.system.sysroot import SysRoot
from tests.conftest import REPO, mounted, release_loop, require, require_root_tools, sh

GIB = 1 << 30


def checksum(path: Path) -> str:
    """sha256 of a file's content, read only where it has data: the non-zero 1 MiB blocks and
    their positions. Holes and zeros count alike, so the host filesystem's choice of extents
    cannot change the result; reading only data keeps it fast on 1 GiB mostly sparse files."""
    block = 1 << 20
    size = path.stat().st_size
    blocks: dict[int, str] = {}
    with open(path, "rb") as f:
        fd, pos = f.fileno(), 0
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:
                break
            end = os.lseek(fd, start, os.SEEK_HOLE)
            for index in range(start // block, (end + block - 1) // block):
                if index in blocks:
                    continue
                f.seek(index * block)
                data = f.read(block)
                if data.strip(b"\0"):
                    blocks[index] = hashlib.sha256(data).hexdigest()
            pos = end
    return hashlib.sha256(f"{size}:{sorted(blocks.items())}".encode()).hexdigest()


@contextlib.contextmanager
def attached(backing: Path, size: int, *extra: str) -> Iterator[str]:
    if not backing.exists():
        with open(backing, "wb") as f:
            f.truncate(size)
    dev = sh("losetup", "--find", "--show", *extra, str(backing)).stdout.strip()
    try:
        yield dev
    finally:
        release_loop(dev, backing)


def validate(dev: str, *extra: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    state = Path(tempfile.gettempdir()) / "xfs-advisor-guard-tests"
    env = {**os.environ, "XFS_ADVISOR_STATE_DIR": str(state)}
    env.pop("XFS_ADVISOR_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "advisor", "validate", "--device", dev,
                           "--mkfs-options", "-n size=8k", *extra],
                          capture_output=True, text=True, input=stdin, cwd=REPO, env=env,
                          timeout=120)


def refused(backing: Path, dev: str, reason: str) -> None:
    """validate --yes on dev must exit 3 naming `reason`, with the device unchanged."""
    # What the test itself wrote through the device must reach the backing file first.
    sh("blockdev", "--flushbufs", dev, check=False)
    sh("sync")
    before = checksum(backing)
    proc = validate(dev, "--yes")
    assert proc.returncode == 3, proc.stderr
    line = proc.stderr.strip()
    assert line.count("\n") == 0 and "Traceback" not in line
    assert "refusing to format" in line and reason in line, line
    assert checksum(backing) == before


@pytest.fixture
def root_tools() -> None:
    require_root_tools("losetup", "mkfs.xfs", "fio")


def test_refuses_a_real_ext4_with_a_file(tmp_path: Path, root_tools: None) -> None:
    require_root_tools("mkfs.ext4")
    backing = tmp_path / "ext4.img"
    with attached(backing, GIB) as dev:
        sh("mkfs.ext4", "-q", dev)
        with mounted(dev, tmp_path / "m") as mnt:
            (mnt / "precious.txt").write_text("do not lose me\n")
        refused(backing, dev, "ext4")


def _write_mbr(dev: str, sectors: int) -> None:
    """One Linux partition from sector 2048 to the end: what fdisk writes for a single partition
    (sfdisk is not installed here)."""
    entry = bytes([0x00, 0x20, 0x21, 0x00, 0x83, 0xFE, 0xFF, 0xFF])
    entry += (2048).to_bytes(4, "little") + (sectors - 2048).to_bytes(4, "little")
    with open(dev, "r+b") as f:
        f.seek(446)
        f.write(entry)
        f.seek(510)
        f.write(b"\x55\xaa")
        f.flush()
        os.fsync(f.fileno())


def test_refuses_a_partition_table(tmp_path: Path, root_tools: None) -> None:
    backing = tmp_path / "parts.img"
    with attached(backing, GIB, "-P") as dev:
        _write_mbr(dev, GIB // 512)
        sh("blockdev", "--flushbufs", dev)
        sh("partx", "-a", dev)  # the kernel did not rescan on its own here
        refused(backing, dev, "dos")
        inv = inspect_devices(SysRoot(), probe=True)
        reasons = guard.refusals(inv, find_device(inv, dev), MIN_DEVICE_BYTES)
        assert any("partition table, PTTYPE=dos" in r for r in reasons), reasons
        assert any("it has partitions" in r for r in reasons), reasons


def test_refuses_a_swap_signature(tmp_path: Path, root_tools: None) -> None:
    require_root_tools("mkswap")
    backing = tmp_path / "swap.img"
    with attached(backing, GIB) as dev:
        sh("mkswap", dev)
        refused(backing, dev, "swap")


def test_refuses_a_swap_in_use(tmp_path: Path, root_tools: None) -> None:
    """An active swap device: the kernel may page out to it at any moment, from its second page
    on (seen under memory pressure: a difference at byte 4096), so a checksum of the file proves
    nothing either way. What a format would overwrite first is the first page (the swap header,
    where mkfs.xfs puts its superblock), which swapping never writes: that must be unchanged, and
    the refusal must name the swap."""
    require_root_tools("mkswap", "swapon", "swapoff")
    backing = tmp_path / "swapon.img"
    with attached(backing, GIB) as dev:
        sh("mkswap", dev)
        on = sh("swapon", "--priority", "-100", dev, check=False)
        require(on.returncode == 0, f"swapon refused here: {on.stderr.strip()}")
        try:
            sh("blockdev", "--flushbufs", dev, check=False)
            with open(backing, "rb") as f:
                head = f.read(4096)
            assert head[4086:] == b"SWAPSPACE2"
            proc = validate(dev, "--yes")
            assert proc.returncode == 3, proc.stderr
            assert "refusing to format" in proc.stderr and "in use as swap" in proc.stderr
            with open(backing, "rb") as f:
                assert f.read(4096) == head
        finally:
            sh("swapoff", dev, check=False)
    assert dev not in Path("/proc/swaps").read_text()


def test_refuses_a_mounted_xfs(tmp_path: Path, root_tools: None) -> None:
    backing = tmp_path / "xfs.img"
    with attached(backing, GIB) as dev:
        sh("mkfs.xfs", "-q", dev)
        with mounted(dev, tmp_path / "m") as mnt:
            (mnt / "data").write_text("busy\n")
            # Frozen, XFS itself writes nothing (no log covering), so any change would be ours.
            sh("xfs_freeze", "-f", str(mnt))
            try:
                refused(backing, dev, "mounted on")
            finally:
                sh("xfs_freeze", "-u", str(mnt), check=False)


def test_refuses_a_read_only_device(tmp_path: Path, root_tools: None) -> None:
    backing = tmp_path / "ro.img"
    with attached(backing, GIB, "-r") as dev:
        refused(backing, dev, "read-only")


def test_refuses_a_device_too_small(tmp_path: Path, root_tools: None) -> None:
    backing = tmp_path / "small.img"
    with attached(backing, 256 << 20) as dev:
        refused(backing, dev, "too small")


def test_refuses_a_device_with_holders(tmp_path: Path, root_tools: None) -> None:
    # No device-mapper here: the guard reads holders from the Inventory, so hand it one.
    backing = tmp_path / "held.img"
    with attached(backing, GIB) as dev:
        inv = inspect_devices(SysRoot(), probe=True)
        device = find_device(inv, dev)
        assert guard.refusals(inv, device, MIN_DEVICE_BYTES) == []
        held = device.model_copy(update={"holders": ["dm-0"], "children": ["dm-0"]})
        reasons = guard.refusals(inv, held, MIN_DEVICE_BYTES)
        assert any("it is held by dm-0" in r for r in reasons), reasons


def test_refuses_the_device_under_root() -> None:
    # Read-only: the inventory of this machine, never a validate run against its disk.
    inv = inspect_devices(SysRoot(), probe=os.geteuid() == 0)
    roots = [d for d in inv.devices if "/" in d.usage.mountpoints]
    require(bool(roots), "/ is not on a block device here")
    under = roots[0]
    while under.parents:
        under = find_device(inv, under.parents[0])
    reasons = guard.refusals(inv, under, MIN_DEVICE_BYTES)
    assert any("device under /" in r for r in reasons), reasons


def test_empty_device_needs_the_typed_name(tmp_path: Path, root_tools: None) -> None:
    backing = tmp_path / "empty.img"
    with attached(backing, GIB) as dev:
        before = checksum(backing)
        proc = validate(dev, stdin="loop-something-else\n")
        assert proc.returncode == 2, proc.stderr
        assert "not confirmed" in proc.stderr
        assert "mkfs.xfs -f -K -n size=8k " + dev in proc.stderr  # the plan came first
        assert checksum(backing) == before


def test_plan_lists_every_command() -> None:
    from advisor.bench.plan import Plan
    from advisor.models.bench import SideConfig
    from advisor.models.workload import Workload

    plan = Plan(a=SideConfig(label="A"),
                b=SideConfig(label="B", mkfs_options=["-n", "size=64k"], mount_options=["noatime"]),
                workload=Workload(), device="/dev/sdz")
    text = "\n".join(plan.commands("/dev/sdz", "/mnt/x"))
    assert "mkfs.xfs -f -K -n size=64k /dev/sdz" in text
    assert "mount -t xfs -o noatime /dev/sdz /mnt/x" in text
    assert "fio --output-format=json changes.fio" in text
    assert "fio --output-format=json rest.fio" in text
    assert "A B B A A B B A" in text
    # Cold caches come from unmounting and mounting the test filesystem; the plan says what the
    # run does to the host, and it drops no cache of the host's.
    assert "umount /mnt/x; mount -t xfs -o noatime /dev/sdz /mnt/x" in text
    assert "drop_caches" not in text and "sysctl" not in text
    assert "no system setting is changed" in text


def test_one_scope_for_many_devices_gives_each_device_its_own_verdict() -> None:
    """The TUI judges every device with one scope_of(inventory) (a 5,120-device host took
    ~100 s device by device, under 1 s with one scope): same reasons, same order."""
    from advisor.bench.guard import Links, refusals, scope_of
    from tests.tui.inventory import build_inventory

    inv = build_inventory()
    for device in inv.devices:
        device.usage.probed = True
    scope = scope_of(inv)
    verdicts = {d.name: refusals(inv, d, 1 << 30, links=Links(), scope=scope)
                for d in inv.devices}
    assert verdicts == {d.name: refusals(inv, d, 1 << 30, links=Links()) for d in inv.devices}
    assert verdicts["sda"][0] == "it is the device under /"  # sda1 on it is mounted there
    assert verdicts["sda1"][:2] == ["it is the device under /", "it is mounted on /"]
    assert verdicts["nvme0n1"] == []
