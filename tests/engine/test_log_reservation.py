"""The log-size rule's per-writer figure, measured again on a real XFS: the log space the largest
namespace transaction (create, mkdir, symlink, rename, link, remove) reserves while it runs, its
log reservation times its log count, as `xfs_db -r -c logres` prints them for the running
xfsprogs. The rule file states the value it was measured at; if the format's reservations grow,
the rule's logs would be too small and this fails."""

from __future__ import annotations

import re
from pathlib import Path

from advisor.engine.rulebook import load_rulebook
from advisor.engine.rules.log_size import LogSizeParams
from tests.conftest import loop_device, require_root_tools, sh

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
