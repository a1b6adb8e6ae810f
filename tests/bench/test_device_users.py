"""Every user of a device, found before the guard calls it free, on real loop devices: loop devices
bound over it at any offset (and what is built on those), processes holding it or its backing file
open, data libblkid cannot name. Each victim is a loop device over a file whose checksum must not
change."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.bench import guard
from advisor.bench.run import MIN_DEVICE_BYTES
from advisor.inspect.devices import find_device, inspect_devices
from advisor.system.sysroot import SysRoot
from tests.bench.test_guard import GIB, attached, refused, validate
from tests.conftest import REPO, mounted, require_root_tools, sh

MIB = 1 << 20


@pytest.fixture
def root_tools() -> None:
    require_root_tools("losetup", "mkfs.xfs", "fio", "xfs_freeze")


@contextlib.contextmanager
def frozen(mnt: Path) -> Iterator[None]:
    """XFS frozen writes nothing, so any change to its backing file is the guard's fault."""
    sh("xfs_freeze", "-f", str(mnt))
    try:
        yield
    finally:
        sh("xfs_freeze", "-u", str(mnt), check=False)


def devices_line(dev: str) -> str:
    """The `devices` tree's line for `dev`."""
    proc = subprocess.run([sys.executable, "-m", "advisor", "devices"], capture_output=True,
                          text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    name = os.path.basename(dev)
    lines = [ln for ln in proc.stdout.splitlines() if ln.split() and
             ln.split()[0].lstrip("├└─│ ") == name]
    assert lines, proc.stdout
    return lines[0]


def test_a_loop_at_an_offset_over_the_device_is_found(tmp_path: Path, root_tools: None) -> None:
    """V is the backing of W (a loop device at offset 1 MiB), W of X; X holds a mounted XFS. The
    kernel shows no holder for either: only the loop status says W and X write to V."""
    backing = tmp_path / "r1.img"
    with attached(backing, GIB) as v, \
            attached(Path(v), 0, "-o", str(MIB)) as w, \
            attached(Path(w), 0) as x:
        sh("mkfs.xfs", "-q", x)
        with mounted(x, tmp_path / "m") as mnt:
            (mnt / "payroll.txt").write_text("precious\n")
            sh("sync")
            with frozen(mnt):
                inv = inspect_devices(SysRoot(), probe=True)
                reasons = guard.refusals(inv, find_device(inv, v), MIN_DEVICE_BYTES)
                wn, xn = os.path.basename(w), os.path.basename(x)
                assert f"it is the backing of loop device {wn}" in reasons, reasons
                assert f"{xn} is a loop device over {wn}, which is built on it" in reasons
                assert f"{xn} on it is mounted on {mnt}" in reasons, reasons
                assert f"backs {wn}" in devices_line(v)
                refused(backing, v, f"it is the backing of loop device {wn}")


@contextlib.contextmanager
def holding_open(path: Path | str, tmp_path: Path, name: str = "sleep") -> Iterator[int]:
    """A process (named `name`: its comm) that holds `path` open read-write, as a VM or a
    database holds a raw disk: no O_EXCL, so nothing in the kernel refuses a second opener."""
    program = tmp_path / name
    program.symlink_to("/bin/sleep")
    with open(path, "r+b") as f:
        proc = subprocess.Popen([str(program), "600"], stdin=f)
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_a_process_holding_the_device_open_is_found(tmp_path: Path, root_tools: None) -> None:
    """Its command name is the process's own choice: shown escaped, never raw."""
    backing = tmp_path / "raw.img"
    with attached(backing, GIB) as dev, \
            holding_open(dev, tmp_path, "vm\x1b[2J\x07") as pid:
        proc = validate(dev, "--yes")
        assert proc.returncode == 3, proc.stderr
        assert f"pid {pid} (vm\\x1b[2J\\x07) holds it open" in proc.stderr, proc.stderr
        assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr
        refused(backing, dev, f"pid {pid}")


def test_a_process_holding_the_backing_file_open_is_found(tmp_path: Path,
                                                          root_tools: None) -> None:
    backing = tmp_path / "db.img"
    with attached(backing, GIB) as dev, holding_open(backing, tmp_path) as pid:
        refused(backing, dev, f"pid {pid} (sleep) holds its backing file")


def test_a_process_holding_a_loop_over_the_device_open_is_found(tmp_path: Path,
                                                                root_tools: None) -> None:
    backing = tmp_path / "under.img"
    with attached(backing, GIB) as v, attached(Path(v), 0, "-o", str(MIB)) as w, \
            holding_open(w, tmp_path) as pid:
        refused(backing, v, f"pid {pid} (sleep) holds {os.path.basename(w)} open, which is "
                "built on it")
