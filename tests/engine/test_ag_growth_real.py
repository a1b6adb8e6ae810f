"""What the ag-growth rule proposes, grown for real: mkfs.xfs with the proposal on a loop device,
then the backing file doubled and xfs_growfs run. Every AG must sit wholly on the old storage or
wholly on the new (guide 2.1.2.2): xfs_growfs first extends a short last AG to full size, which
would stretch it across the boundary."""

from __future__ import annotations

import math
import os
import re
import shutil
from pathlib import Path

import pytest

from advisor.advice import propose
from advisor.models.workload import Workload
from tests.conftest import loop_device, mounted, require, require_root_tools, sh
from tests.engine.helpers import GiB, device, environment, md_stripe


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


def test_on_a_stripe_the_ags_are_one_stripe_unit_short_as_mkfs_xfs_asks(tmp_path: Path) -> None:
    # 160 GiB on a 64 KiB x 4 stripe growing to 20 TiB: two 80 GiB AGs would make exactly 256,
    # but 80 GiB is a multiple of the stripe width, and mkfs.xfs warns that such AGs all start
    # on the same disk. The rule takes one stripe unit off and says what that costs (257 AGs).
    mkfs = shutil.which("mkfs.xfs") or "/usr/sbin/mkfs.xfs"
    require(Path(mkfs).exists(), "needs mkfs.xfs")
    size, su = 160 * GiB, 64 << 10
    p = propose(device(size, rotational=True, stripe=md_stripe(su, 4)),
                Workload(eventual_size=20 << 40), env=environment())
    decision = next(d for d in p.decisions if d.setting == "-d agcount/agsize")
    assert decision.options == ["-d", f"agsize={80 * GiB // 1024 - 64}k"]
    assert "80 GiB AGs less 64 KiB" in decision.reason and "keep it to 257" in decision.reason
    warning = next(w.message for w in p.warnings if "needs more than 256" in w.message)
    assert "80 GiB AGs would make 256, but they would all start on the same disk" in warning
    assert "no whole number of larger AGs" not in warning
    image = tmp_path / "stripe.img"
    image.write_bytes(b"")
    os.truncate(image, size)
    stripe = ["-d", "su=64k,sw=4"]
    shown = sh(mkfs, "-N", "-f", *stripe, *decision.options, str(image))
    assert "multiple of stripe width" not in shown.stdout + shown.stderr
    agcount, agblocks = (int(v) for v in re.search(r"agcount=(\d+), agsize=(\d+)", shown.stdout)
                         .groups())  # type: ignore[union-attr]
    assert agcount == 2 and math.ceil((20 << 40) / (agblocks * 4096)) == 257
    whole = sh(mkfs, "-N", "-f", *stripe, "-d", "agsize=80g", str(image))
    assert "AG size is a multiple of stripe width" in whole.stdout + whole.stderr
