"""The log-size rule's per-writer figure, measured again on a real XFS: the log space the largest
namespace transaction (create, mkdir, symlink, rename, link, remove) reserves while it runs, its
log reservation times its log count, as `xfs_db -r -c logres` prints them for the running
xfsprogs. The rule file states the value it was measured at; if the format's reservations grow,
the rule's logs would be too small and this fails."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from advisor.engine.rulebook import load_rulebook
from advisor.engine.rules.log_size import LogSizeParams, reservation_per_writer
from tests.conftest import loop_device, mounted, require, require_root_tools, sh

#: struct xfs_trans_resv order (fs/xfs/libxfs/xfs_trans_resv.h): tr_write 0, tr_itruncate 1,
#: tr_rename 2, tr_link 3, tr_remove 4, tr_symlink 5, tr_create 6, tr_create_tmpfile 7,
#: tr_mkdir 8: the namespace transactions are 2..8.
NAMESPACE = range(2, 9)


def measured_reservations(dev: str) -> dict[int, int]:
    """Transaction type -> logres x logcount, from xfs_db."""
    out = sh("xfs_db", "-r", "-c", "logres", dev).stdout
    found = {int(t): int(res) * max(1, int(count)) for t, res, count in
             re.findall(r"type (\d+) logres (\d+) logcount (\d+)", out)}
    assert found, out
    return found


def test_reservation_per_writer_is_the_largest_namespace_one(tmp_path: Path) -> None:
    require_root_tools("mkfs.xfs", "xfs_db", "losetup")
    params = load_rulebook().rules["log-size"].params
    assert isinstance(params, LogSizeParams)
    with loop_device(tmp_path / "fs.img", 100 << 30) as dev:
        sh("mkfs.xfs", "-q", "-f", dev)
        found = measured_reservations(dev)
    largest = max(found[t] for t in NAMESPACE)
    assert params.reservation_bytes_per_writer == largest, found
    # The reservation is a small share of a default log: 64 MiB holds 77 writers, not 2.
    per_writer = largest * 100 / params.usable_log_percent
    assert 60 < (64 << 20) / per_writer < 100


def granted_reservations(dev: str, mnt: Path, tmp_path: Path) -> dict[str, int]:
    """Command -> the log space its transaction was granted (t_unit_res x t_cnt), as the
    kernel's xfs:xfs_log_reserve tracepoint shows it, for a mkdir, a symlink, a create and a
    rename on this mounted filesystem."""
    major, minor = divmod(os.stat(dev).st_rdev, 256)
    data = tmp_path / "perf.data"
    script = (f"mkdir {mnt}/d && ln -s x {mnt}/s && touch {mnt}/f && mv {mnt}/f {mnt}/g")
    sh("perf", "record", "-q", "-o", str(data), "-e", "xfs:xfs_log_reserve",
       "--filter", f"dev == {hex(major << 20 | minor)}", "-a", "--", "sh", "-c", script)
    granted: dict[str, int] = {}
    for line in sh("perf", "script", "-i", str(data)).stdout.splitlines():
        unit, count = (re.search(rf"{key} (\d+)", line) for key in ("t_unit_res", "t_cnt"))
        if unit and count and int(count[1]):
            granted[line.split()[0]] = int(unit[1]) * int(count[1])
    assert set(granted) == {"mkdir", "ln", "touch", "mv"}, granted
    return granted


@pytest.mark.parametrize(("options", "log_stripe_unit"), [
    ((), 0), (("-d", "su=256k,sw=4"), 256 << 10)])
def test_reservation_per_writer_is_what_the_kernel_grants(
        tmp_path: Path, options: tuple[str, ...], log_stripe_unit: int) -> None:
    """The per-writer figure the log-size rule prints is the log space the kernel grants the
    largest namespace transaction: with a 256 KiB log stripe unit (from a 256 KiB data stripe
    unit) that is 3.4 times logres x logcount, as every unit is padded to the stripe unit
    twice. Headers differ with the log buffer size: within 1%."""
    require_root_tools("mkfs.xfs", "xfs_db", "losetup", "perf")
    require(sh("perf", "stat", "-a", "-e", "xfs:xfs_log_reserve", "--", "true",
               check=False).returncode == 0, "needs perf with xfs tracepoints")
    params = load_rulebook().rules["log-size"].params
    assert isinstance(params, LogSizeParams)
    with loop_device(tmp_path / "fs.img", 100 << 30) as dev:
        sh("mkfs.xfs", "-q", "-f", *options, dev)
        lsu = int(sh("xfs_db", "-r", "-c", "sb 0", "-c", "p logsunit", dev).stdout.split()[-1])
        assert lsu == max(log_stripe_unit, 1)
        with mounted(dev, tmp_path / "mnt") as mnt:
            granted = granted_reservations(dev, mnt, tmp_path)
    largest = max(granted.values())
    figure = reservation_per_writer(params, log_stripe_unit)
    assert abs(figure - largest) <= largest // 100, (figure, granted)
