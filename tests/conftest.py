"""Shared test fixtures.

Tests that need root, loop devices or ../shared call `require(...)`: a skip on a developer's
machine, a failure under XFS_ADVISOR_STRICT=1 (which .ci/run sets), so CI always runs them.
Every fixture that attaches or mounts something undoes it, even when the test fails.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.inspect.sysfs_builder import unpack_dumps

STRICT = os.environ.get("XFS_ADVISOR_STRICT") == "1"
REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
DATA = Path(__file__).resolve().parent / "data"


def require(condition: bool, reason: str) -> None:
    """Skip (or, in strict mode, fail) when a precondition of the test does not hold."""
    if not condition:
        if STRICT:
            pytest.fail(f"required in CI: {reason}")
        pytest.skip(reason)


def require_root_tools(*tools: str) -> None:
    require(os.geteuid() == 0, "needs root")
    for t in tools:
        require(shutil.which(t) is not None or Path("/usr/sbin", t).exists(), f"needs {t}")


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), check=check, capture_output=True, text=True)


@contextlib.contextmanager
def loop_device(backing: Path, size: int, *, sector: int = 512) -> Iterator[str]:
    """Attach a loop device over a new sparse file; detach it afterwards, whatever happens."""
    with open(backing, "wb") as f:
        f.truncate(size)
    dev = sh("losetup", "--find", "--show", "-b", str(sector), str(backing)).stdout.strip()
    try:
        yield dev
    finally:
        with contextlib.suppress(Exception):
            sh("umount", "--quiet", dev, check=False)
        sh("losetup", "-d", dev, check=False)


@contextlib.contextmanager
def mounted(dev: str, mnt: Path, *options: str) -> Iterator[Path]:
    """Mount dev on mnt; unmount afterwards, whatever happens."""
    mnt.mkdir(parents=True, exist_ok=True)
    argv = ["mount", dev, str(mnt)]
    if options:
        argv[1:1] = ["-o", ",".join(options)]
    sh(*argv)
    try:
        yield mnt
    finally:
        sh("umount", str(mnt), check=False)


@pytest.fixture
def loop(tmp_path: Path) -> Iterator[str]:
    """A 1 GiB loop device over a sparse file, for tests that need a real block device (root)."""
    require_root_tools("losetup", "mkfs.xfs")
    with loop_device(tmp_path / "loop.img", 1 << 30) as dev:
        yield dev


@pytest.fixture(scope="session")
def shared_dumps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The real sysfs captures from ../shared/fixtures, unpacked once per run (read in place, never
    copied into the repo)."""
    src = SHARED / "fixtures" / "sysfs-dumps"
    require(src.is_dir(), f"{src} is missing (the shared/ folder beside the repo)")
    dumps = unpack_dumps(src, tmp_path_factory.mktemp("sysfs-dumps"))
    require(len(dumps) >= 3, f"{src} holds {len(dumps)} captures; the tests expect 3")
    return dumps
