"""What the mkfs-discard rule says mkfs.xfs does, on a real loop device (which takes discards by
punching holes in its backing file): without -K mkfs.xfs discards the whole device before it
writes, giving back the backing file's preallocated space; with -K the space stays, as a thin
pool's or an array's preallocation would."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from advisor.advice import propose
from advisor.engine.examples import example_device
from advisor.models.rule import RuleExample
from advisor.models.workload import Workload
from tests.conftest import require_root_tools, sh
from tests.engine.helpers import environment

SIZE = 320 << 20


def _allocated_after_mkfs(backing: Path, *options: str) -> int:
    """Bytes of `backing` still allocated after mkfs.xfs with `options` on a loop device over
    it, the file fully preallocated first."""
    backing.unlink(missing_ok=True)
    subprocess.run(["fallocate", "-l", str(SIZE), str(backing)], check=True)
    dev = sh("losetup", "--find", "--show", str(backing)).stdout.strip()
    try:
        sh("mkfs.xfs", "-q", "-f", *options, dev)
    finally:
        sh("losetup", "-d", dev, check=False)
    return os.stat(backing).st_blocks * 512


@pytest.mark.root
def test_mkfs_discards_the_whole_device_unless_told_k(tmp_path: Path) -> None:
    require_root_tools("losetup", "mkfs.xfs", "fallocate")
    kept = _allocated_after_mkfs(tmp_path / "k.img", "-K")
    discarded = _allocated_after_mkfs(tmp_path / "d.img")
    assert kept >= SIZE, kept
    assert discarded < SIZE // 2, discarded


def test_a_thin_volume_s_proposal_runs_mkfs_with_k() -> None:
    """The proposal's command carries -K, and the real mkfs.xfs -N accepted it."""
    ex = RuleExample.model_validate({
        "says": "an LVM thin volume", "expect": {},
        "device": {"size": "1TiB", "rotational": False, "thin": "dm-thin",
                   "discard_granularity": 65536}})
    p = propose(example_device(ex), Workload(), env=environment())
    assert p.mkfs_argv[-2:] == ["-K", "/dev/sdx"], p.mkfs_argv
    assert p.check is not None
