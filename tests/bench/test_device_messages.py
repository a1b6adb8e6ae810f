"""What validate says about a device is what happened: a device held by another opener is refused
with the holder's pid (exit 3, a device matter, not a tool failure), a libblkid error is quoted
instead of "run as root", and what a recovery removed is a JSON document under --json like every
other line on stderr."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.bench import guard
from advisor.inspect.devices import find_device, inspect_devices
from advisor.system.sysroot import SysRoot
from tests.bench.test_guard import attached, checksum
from tests.conftest import REPO, require_root_tools, sh

GIB = 1 << 30


@pytest.fixture
def root_tools() -> None:
    require_root_tools("losetup", "mkfs.xfs", "fio", "xfs_info", "mount")


def _env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "XFS_ADVISOR_STATE_DIR": str(tmp_path / "state"),
           "XFS_ADVISOR_CALIBRATION": str(tmp_path / "calibration.json")}
    env.pop("XFS_ADVISOR_DEBUG", None)
    return env


@contextlib.contextmanager
def held_exclusively(dev: str) -> Iterator[None]:
    """Open the device with O_EXCL, as a mount or a running mkfs.xfs of another run holds it."""
    fd = os.open(dev, os.O_RDONLY | os.O_EXCL)
    try:
        yield
    finally:
        os.close(fd)


def test_a_device_held_by_another_opener_is_refused_by_pid_exit_3(tmp_path: Path,
                                                                  root_tools: None) -> None:
    backing = tmp_path / "scratch.img"
    with attached(backing, GIB) as dev:
        before = checksum(backing)
        with held_exclusively(dev):
            proc = subprocess.run(
                [sys.executable, "-m", "advisor", "validate", "--device", dev, "--yes",
                 "--loop-dir", str(tmp_path), "--mkfs-options", "-n size=8k", "--budget", "10"],
                capture_output=True, text=True, cwd=REPO, env=_env(tmp_path), timeout=120)
        assert proc.returncode == 3, proc.stderr
        last = proc.stderr.strip().splitlines()[-1]
        # The holder is named (this test's own process), not a bare "busy".
        assert f"pid {os.getpid()} " in last and "holds it open" in last, last
        assert "Traceback" not in proc.stderr
        sh("blockdev", "--flushbufs", dev, check=False)
        assert checksum(backing) == before
        assert dev not in Path("/proc/mounts").read_text()
    assert str(backing) not in sh("losetup", "-a").stdout
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("xfs-advisor-")]


def test_guard_quotes_the_libblkid_error_instead_of_run_as_root(tmp_path: Path,
                                                                root_tools: None) -> None:
    """An unprobed device whose probe failed (EPERM happens as root too) is refused with
    libblkid's own error; "run as root" is said only when the advisor is not root."""
    backing = tmp_path / "scratch.img"
    with attached(backing, GIB) as dev:
        inventory = inspect_devices(SysRoot(), probe=True)
        device = find_device(inventory, dev)
        assert device.usage.probed
        failed = device.model_copy(update={
            "usage": device.usage.model_copy(update={"probed": False}),
            "notes": [*device.notes, f"libblkid: cannot open {dev} for probing: Operation not "
                                     "permitted even as root"]})
        reasons = guard.refusals(inventory, failed, GIB)
        assert f"libblkid could not check it for existing data (cannot open {dev} for probing: " \
               "Operation not permitted even as root)" in reasons
        assert not any("run as root" in r for r in reasons)
        silent = device.model_copy(update={
            "usage": device.usage.model_copy(update={"probed": False})})
        assert "libblkid could not check it for existing data (it was not probed)" in \
            guard.refusals(inventory, silent, GIB)


def test_recovered_lines_are_json_under_json(tmp_path: Path, root_tools: None) -> None:
    """What recovery says is a JSON notice under --json: here an old-format state file, removed
    without touching what it names (it carries no identities to check); the run then fails on a
    bad mkfs option (exit 4), also as JSON: every stderr line parses."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    leftover = tmp_path / "work" / "xfs-advisor-dead"
    leftover.mkdir(parents=True)
    (state / "run-999999.json").write_text(json.dumps({
        "pid": 999999, "started": "1", "dirs": [str(leftover)], "files": [], "loops": [],
        "mounts": []}))
    proc = subprocess.run(
        [sys.executable, "-m", "advisor", "validate", "--json", "--loop-dir",
         str(tmp_path / "work"), "--loop-size", "1GiB", "--mkfs-options", "-b size=3000"],
        capture_output=True, text=True, cwd=REPO, env=_env(tmp_path), timeout=120)
    assert proc.returncode == 4, proc.stderr
    docs = [json.loads(line) for line in proc.stderr.strip().splitlines()]
    notices = [d["notice"]["message"] for d in docs if "notice" in d]
    assert any(n.startswith(f"removed {state / 'run-999999.json'}") for n in notices), docs
    assert docs[-1]["error"]["kind"] == "tool"
    assert leftover.exists()  # named by a file without identities: not touched
    assert str(tmp_path) not in sh("losetup", "-a").stdout
