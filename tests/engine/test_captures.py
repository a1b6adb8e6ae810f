"""Proposals for the disks of real captured machines (tests/data/sysfs-dumps), through
the CLI with --sysroot: inspection, the engine and the dry run together."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.engine.test_cli import cli

REPO = Path(__file__).resolve().parents[2]
WORKLOAD = REPO / "advisor" / "data" / "example-workload.toml"


@pytest.mark.parametrize(("dump", "device"), [("simple-nvme", "nvme0n1"), ("simple-lvm", "sdb"),
                                              ("multi-devs-bcachefs", "sda")])
def test_propose_for_a_captured_disk(shared_dumps: dict[str, Path], dump: str,
                                     device: str) -> None:
    root = shared_dumps[dump]
    proc = cli("--json", "--sysroot", str(root), "--device", device, "--workload", str(WORKLOAD))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["device"]["name"] == device
    proposal = doc["proposal"]
    assert proposal["check"]["argv"][:3] == ["mkfs.xfs", "-N", "-f"]
    assert proposal["mkfs_argv"][-1] == f"/dev/{device}"
    assert proposal["mkfs_defaults"]["agcount"] >= 2
    if doc["device"]["children"]:
        assert any("partitions" in w["message"] for w in proposal["warnings"])
