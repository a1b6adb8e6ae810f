"""What the ag-growth rule proposes, grown for real: mkfs.xfs with the proposal on a loop device,
then the backing file doubled and xfs_growfs run. Every AG must sit wholly on the old storage or
wholly on the new (guide 2.1.2.2): xfs_growfs first extends a short last AG to full size, which
would stretch it across the boundary."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from advisor.advice import propose
from advisor.models.workload import Workload
from tests.conftest import loop_device, mounted, require_root_tools, sh
from tests.engine.helpers import GiB, device, environment


def _geometry(mnt: Path) -> tuple[int, int, int]:
    """(agcount, agsize in bytes, data bytes) from xfs_info."""
    info = sh("xfs_info", str(mnt)).stdout
    agcount, agblocks = (int(v) for v in re.search(r"agcount=(\d+), agsize=(\d+)", info)
                         .groups())  # type: ignore[union-attr]
    bsize, blocks = (int(v) for v in re.search(r"data\s+=\s+bsize=(\d+)\s+blocks=(\d+)", info)
                     .groups())  # type: ignore[union-attr]
    return agcount, agblocks * bsize, blocks * bsize


@pytest.mark.root
def test_growing_leaves_no_ag_across_the_old_and_new_storage(tmp_path: Path) -> None:
    require_root_tools("losetup", "mkfs.xfs", "mount", "xfs_growfs", "xfs_info")
    size = 10 * GiB  # made for 10 TiB: the bound (6 GiB) would leave a 4 GiB last AG
    p = propose(device(size, rotational=False), Workload(growth_factor=1000),
                env=environment())
    decision = next(d for d in p.decisions if d.setting == "-d agcount/agsize")
    assert decision.rule == "ag-growth" and decision.options == ["-d", "agsize=5g"]
    backing = tmp_path / "grow.img"
    with loop_device(backing, size) as dev:
        sh("mkfs.xfs", "-q", "-f", "-K", *p.mkfs_options, dev)
        with mounted(dev, tmp_path / "mnt") as mnt:
            agcount, agsize, data = _geometry(mnt)
            assert (agcount, agsize, data) == (2, 5 * GiB, size)
            with open(backing, "r+b") as f:
                f.truncate(2 * size)
            sh("losetup", "-c", dev)
            sh("xfs_growfs", str(mnt))
            agcount, agsize, data = _geometry(mnt)
    assert data == 2 * size and agcount == 4
    assert size % agsize == 0, "an AG crosses the old end of the device"
