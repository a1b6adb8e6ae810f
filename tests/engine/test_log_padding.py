"""What the log-stripe-unit rule says of fsync-heavy work on stripes, measured on a real XFS: with
the stripe unit mkfs.xfs gives the log, every fsync writes more to the device than with a
one-block log stripe unit (the log write is aligned and padded), in the same number of IOs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import loop_device, mounted, require_root_tools, sh

FSYNCS = 200


def _log(dev: str) -> tuple[int, int]:
    """XFS's count of log writes on the filesystem of `dev`, and the bytes they wrote."""
    for line in (Path("/sys/fs/xfs") / Path(dev).name / "stats" / "stats").read_text().splitlines():
        if line.startswith("log "):
            fields = line.split()
            return int(fields[1]), int(fields[2]) * 512
    raise AssertionError(f"no log line in the XFS stats of {dev}")


def _written_per_fsync(dev: str, mnt: Path) -> tuple[float, float, int, float]:
    """Per 4 KiB append + fsync of one file: write IOs and bytes written on dev; and the log
    writes in all, with the bytes each wrote. Appends: each fsync has a size change to log, so
    each forces a log write. (An overwrite forces one only when the file's timestamps moved on,
    which depends on how fast the loop runs: a tenth of them on an idle machine.)"""
    stat = Path("/sys/block") / Path(dev).name / "stat"

    def now() -> tuple[int, int]:
        f = stat.read_text().split()
        return int(f[4]), int(f[6]) * 512
    fd = os.open(mnt / "f", os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        os.write(fd, b"x" * 4096)
        os.fsync(fd)
        ios, written = now()
        log_writes, log_bytes = _log(dev)
        for _ in range(FSYNCS):
            os.write(fd, b"y" * 4096)
            os.fsync(fd)
        ios2, written2 = now()
        log_writes2, log_bytes2 = _log(dev)
    finally:
        os.close(fd)
    writes = log_writes2 - log_writes
    return ((ios2 - ios) / FSYNCS, (written2 - written) / FSYNCS, writes,
            (log_bytes2 - log_bytes) / max(writes, 1))


def _measure(tmp_path: Path, *mkfs: str) -> tuple[int, float, float, int, float]:
    with loop_device(tmp_path / "img", 1 << 30) as dev:
        sh("losetup", "--direct-io=on", dev, check=False)
        sh("mkfs.xfs", "-q", "-f", "-d", "su=64k,sw=4", *mkfs, dev)
        with mounted(dev, tmp_path / "mnt") as mnt:
            info = sh("xfs_info", str(mnt)).stdout
            lsu_blocks = int(info.split("log      =")[1].split("sunit=")[1].split()[0])
            return (lsu_blocks, *_written_per_fsync(dev, mnt))


@pytest.mark.root
def test_a_log_stripe_unit_pads_every_fsyncs_log_write(tmp_path: Path) -> None:
    require_root_tools("losetup", "mkfs.xfs", "xfs_info", "mount")
    lsu, ios, padded, log_writes, per_write = _measure(tmp_path)
    one, ios_one, unpadded, log_writes_one, per_write_one = _measure(tmp_path, "-l", "su=4k")
    assert (lsu, one) == (16, 1)  # 64 KiB from the data stripe unit; one 4 KiB block
    assert min(log_writes, log_writes_one) >= FSYNCS  # every fsync wrote the log
    # every log write padded to the stripe unit: 64 KiB against 4 KiB (kernel 6.18)...
    assert per_write >= 64 * 1024 and per_write_one < 16 * 1024, (per_write, per_write_one)
    # ...in as many IOs (about two per fsync: data, log; the log's tail pushes add a few)...
    assert ios <= 1.5 * ios_one, (ios, ios_one)
    # ...so each fsync writes more: measured 68 KiB against 8 KiB
    assert padded > 4 * unpadded, (padded, unpadded)
