"""What the inode-space rule counts per file, measured on a real XFS: a file of the median size
takes its data in whole blocks, its inode and its directory entry (a 2 KiB file is not 2 KiB)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from advisor.advice import propose
from advisor.models.workload import Workload
from tests.conftest import loop_device, mounted, require_root_tools, sh
from tests.engine.helpers import TiB, device, environment

FILES = 5000


def _used(mnt: Path) -> int:
    s = os.statvfs(mnt)
    return (s.f_blocks - s.f_bfree) * s.f_frsize


@pytest.mark.root
def test_a_2k_file_costs_what_the_rule_counts(tmp_path: Path) -> None:
    require_root_tools("losetup", "mkfs.xfs", "mount")
    with loop_device(tmp_path / "img", 1 << 30) as dev:
        sh("mkfs.xfs", "-q", "-f", "-K", dev)
        with mounted(dev, tmp_path / "mnt") as mnt:
            (mnt / "d").mkdir()
            os.sync()
            before = _used(mnt)
            for i in range(FILES):
                (mnt / "d" / f"file{i:07d}").write_bytes(b"x" * 2048)
            os.sync()
            measured = (_used(mnt) - before) / FILES
    p = propose(device(2 * TiB, rotational=False), Workload(median_file_size=2048),
                env=environment())
    d = next(d for d in p.decisions if d.setting == "-i maxpct")
    assert d.options == ["-i", "maxpct=14"], d.reason
    assert "at 4,648 bytes each" in d.reason
    assert abs(measured - 4648) < 0.02 * 4648, measured


@pytest.mark.parametrize("files", [10**6, 10**8, 166_094_439, 209_715_200, 209_715_201, 10**9,
                                   10**12])
def test_no_share_over_100_percent_is_printed(files: int) -> None:
    """Whatever the answered count, the decision and its warnings print no share of the
    filesystem over 100% (one billion files on 100 GiB printed ~477%)."""
    import re

    p = propose(device(100 * 1024**3, rotational=False), Workload(file_count=files),
                env=environment())
    d = next(d for d in p.decisions if d.setting == "-i maxpct")
    text = " ".join([d.reason, *(w.message for w in p.warnings if w.rule == "inode-space")])
    shares = [float(s) for s in re.findall(r"(\d+(?:\.\d+)?)%", text)]
    assert all(s <= 100 for s in shares), text
    if files * 512 > 100 * 1024**3:
        assert not d.changed and "before any data" in text, text
