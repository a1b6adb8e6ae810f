"""What the flush-cost warning says of a volatile write cache without FUA, measured on a real XFS:
every fsync's log commit costs two whole-cache flushes (XFS's pre-flush, then the block layer's
post-flush in place of FUA). A loop device has a volatile cache ("write back") and no FUA."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from advisor.engine.context import Context
from advisor.engine.registry import NoParams
from advisor.engine.rules.flush_cost import flush_cost
from advisor.models.proposal import MkfsGeometry
from advisor.models.workload import Workload
from tests.conftest import loop_device, mounted, require, require_root_tools, sh
from tests.engine.helpers import TiB, device, environment

FSYNCS = 200


def _flushes(dev: str) -> int:
    """Flush requests completed by dev (field 16 of /sys/block/DEV/stat)."""
    return int((Path("/sys/block") / Path(dev).name / "stat").read_text().split()[15])


@pytest.mark.root
def test_two_flushes_per_log_commit_without_fua(tmp_path: Path) -> None:
    require_root_tools("losetup", "mkfs.xfs", "mount")
    with loop_device(tmp_path / "img", 1 << 30) as dev:
        queue = Path("/sys/block") / Path(dev).name / "queue"
        require(queue.joinpath("fua").read_text().strip() == "0"
                and queue.joinpath("write_cache").read_text().strip() == "write back",
                "needs a loop device with a volatile cache and no FUA")
        sh("mkfs.xfs", "-q", "-f", dev)
        with mounted(dev, tmp_path / "mnt") as mnt:
            fd = os.open(mnt / "f", os.O_CREAT | os.O_WRONLY, 0o644)
            try:
                os.write(fd, b"x" * 4096)
                os.fsync(fd)
                before = _flushes(dev)
                for i in range(FSYNCS):
                    os.pwrite(fd, b"y" * 4096, (i + 1) * 4096)
                    os.fsync(fd)
                flushes = _flushes(dev) - before
            finally:
                os.close(fd)
    # two per commit; the background log worker may add a few of its own
    assert 2 * FSYNCS <= flushes <= 2 * FSYNCS + FSYNCS // 10, flushes
    warning = _warning()
    assert "two whole-cache flushes" in warning and "400 flushes for 200 fsyncs" in warning
    assert "removes only the second flush" in warning


def _warning() -> str:
    disk = device(4 * TiB, write_cache="write back", fua=False, rotational=True)
    ctx = Context(device=disk, workload=Workload(), env=environment(),
                  geometry=MkfsGeometry.model_construct(), size=4 * TiB)
    (warning,) = flush_cost(ctx, NoParams()).warnings
    return warning
