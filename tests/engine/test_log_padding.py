"""What the log-stripe-unit rule says of fsync-heavy work on stripes, measured on a real XFS: with
the stripe unit mkfs.xfs gives the log, every fsync writes more to the device than with a
one-block log stripe unit (the log write is aligned and padded), in the same number of IOs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import loop_device, mounted, require_root_tools, sh

FSYNCS = 200


def _written_per_fsync(dev: str, mnt: Path) -> tuple[float, float]:
    """(write IOs, bytes written) on dev per 4 KiB overwrite + fsync of one file."""
    stat = Path("/sys/block") / Path(dev).name / "stat"

    def now() -> tuple[int, int]:
        f = stat.read_text().split()
        return int(f[4]), int(f[6]) * 512
    fd = os.open(mnt / "f", os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        os.write(fd, b"x" * 4096)
        os.fsync(fd)
        ios, written = now()
        for i in range(FSYNCS):
            os.pwrite(fd, b"y" * 4096, (i % 16) * 4096)
            os.fsync(fd)
        ios2, written2 = now()
    finally:
        os.close(fd)
    return (ios2 - ios) / FSYNCS, (written2 - written) / FSYNCS


def _measure(tmp_path: Path, *mkfs: str) -> tuple[int, float, float]:
    with loop_device(tmp_path / "img", 1 << 30) as dev:
        sh("losetup", "--direct-io=on", dev, check=False)
        sh("mkfs.xfs", "-q", "-f", "-d", "su=64k,sw=4", *mkfs, dev)
        with mounted(dev, tmp_path / "mnt") as mnt:
            info = sh("xfs_info", str(mnt)).stdout
            lsu_blocks = int(info.split("log      =")[1].split("sunit=")[1].split()[0])
            ios, written = _written_per_fsync(dev, mnt)
    return lsu_blocks, ios, written


@pytest.mark.root
def test_a_log_stripe_unit_pads_every_fsyncs_log_write(tmp_path: Path) -> None:
    require_root_tools("losetup", "mkfs.xfs", "xfs_info", "mount")
    lsu, ios, padded = _measure(tmp_path)
    one, ios_one, unpadded = _measure(tmp_path, "-l", "su=4k")
    assert (lsu, one) == (16, 1)  # 64 KiB from the data stripe unit; one 4 KiB block
    # as many writes (about two per fsync: data, log; the log's tail pushes add a few)...
    assert ios <= 1.5 * ios_one, (ios, ios_one)
    # ...each larger: measured 21 KiB against 5 KiB per fsync (kernel 6.18)
    assert padded > 2 * unpadded, (padded, unpadded)
