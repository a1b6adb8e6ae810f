"""libblkid boundary, on real loop devices (root), checked against blkid(8) as the oracle."""

from __future__ import annotations

import struct
import subprocess

import pytest

from advisor.errors import DeviceProblem
from advisor.system.blkid import probe_signatures
from tests.conftest import require_root_tools, sh


def _blkid_oracle(dev: str) -> dict[str, str]:
    out = subprocess.run(["blkid", "-p", "-o", "export", dev], capture_output=True, text=True)
    return dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)


def test_empty_loop_device_has_no_signature(loop: str) -> None:
    assert probe_signatures(loop) == []


def test_xfs_then_swap_signatures_match_blkid(loop: str) -> None:
    require_root_tools("mkfs.xfs", "mkswap", "blkid")
    sh("mkfs.xfs", "-q", "-f", "-K", loop)
    facts = probe_signatures(loop)
    assert [f.value for f in facts] == ["xfs"] == [_blkid_oracle(loop)["TYPE"]]
    assert facts[0].source == "blkid" and facts[0].path == loop
    assert facts[0].raw is not None and "USAGE=filesystem" in facts[0].raw

    sh("wipefs", "-a", "-q", loop)
    sh("mkswap", loop)
    assert [f.value for f in probe_signatures(loop)] == ["swap"]


def _write_mbr(dev: str) -> None:
    """A DOS partition table with one Linux partition at 1 MiB (sfdisk is not always installed)."""
    entry = struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", 2048, 131072)
    sector = bytearray(512)
    sector[446:462] = entry
    sector[510:512] = b"\x55\xaa"
    with open(dev, "r+b") as f:
        f.write(sector)


def test_partition_table_is_reported(loop: str) -> None:
    _write_mbr(loop)
    facts = probe_signatures(loop)
    assert [f.value for f in facts] == ["dos"] == [_blkid_oracle(loop)["PTTYPE"]]
    assert facts[0].raw == "PTTYPE=dos"


def test_missing_device_is_a_device_problem() -> None:
    with pytest.raises(DeviceProblem, match="cannot open /dev/no-such-device"):
        probe_signatures("/dev/no-such-device")
