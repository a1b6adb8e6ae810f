"""The three real sysfs dumps, checked device by device against lsblk (util-linux) as the oracle."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from advisor.inspect.devices import inspect_devices
from advisor.models.device import Device
from advisor.system.sysroot import SysRoot
from tests.conftest import require

DUMPS = ("multi-devs-bcachefs", "simple-lvm", "simple-nvme")

#: lsblk column -> how to get the same number from our Device.
COLUMNS: dict[str, Any] = {
    "size": lambda d: d.size_bytes.value,
    "rota": lambda d: d.rotational.value,
    "log-sec": lambda d: d.logical_sector.value,
    "phy-sec": lambda d: d.physical_sector.value,
    "min-io": lambda d: d.min_io.value,
    "opt-io": lambda d: d.opt_io.value,
    "alignment": lambda d: d.alignment_offset.value,
    "disc-gran": lambda d: d.discard_granularity.value,
    "disc-max": lambda d: d.discard_max_bytes.value,
    "rq-size": lambda d: d.nr_requests.value,
    "maj:min": lambda d: d.maj_min,
    "ro": lambda d: d.read_only.value,
}


def flatten(nodes: list[dict[str, Any]], parent: str | None,
             out: dict[str, dict[str, Any]], edges: set[tuple[str, str]]) -> None:
    for node in nodes:
        out[node["kname"]] = node
        if parent is not None:
            edges.add((parent, node["kname"]))
        flatten(node.get("children", []), node["kname"], out, edges)


def lsblk_tree(root: Path) -> tuple[dict[str, dict[str, Any]], set[tuple[str, str]]]:
    """What `lsblk --sysroot ROOT` shows: every device's columns by kernel name, and the
    (parent, child) edges."""
    proc = subprocess.run(["lsblk", "--sysroot", str(root), "-J", "-b", "-O"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    devices: dict[str, dict[str, Any]] = {}
    edges: set[tuple[str, str]] = set()
    flatten(json.loads(proc.stdout)["blockdevices"], None, devices, edges)
    return devices, edges


@pytest.mark.parametrize("dump", DUMPS)
def test_every_device_agrees_with_lsblk(shared_dumps: dict[str, Path], dump: str) -> None:
    require(dump in shared_dumps, f"dump {dump} missing")
    require(subprocess.run(["lsblk", "--version"], capture_output=True).returncode == 0, "lsblk")
    root = shared_dumps[dump]
    theirs, their_edges = lsblk_tree(root)

    inv = inspect_devices(SysRoot.open(root), probe=False)
    ours: dict[str, Device] = {d.name: d for d in inv.devices}
    assert sorted(ours) == sorted(theirs)
    mismatches = [
        (name, column, getter(dev), theirs[name][column])
        for name, dev in ours.items()
        for column, getter in COLUMNS.items()
        if getter(dev) != theirs[name][column]
    ]
    assert mismatches == []
    our_edges = {(d.name, c) for d in inv.devices for c in d.children}
    assert our_edges == their_edges
    # Parents name the same edges from the other side.
    assert {(p, d.name) for d in inv.devices for p in d.parents} == our_edges
    # The dm device shows its dm name and /dev/mapper path, as lsblk's NAME and PATH do.
    for name, dev in ours.items():
        assert dev.display_name == theirs[name]["name"]
        assert dev.path == theirs[name]["path"]


@pytest.mark.parametrize("dump", DUMPS)
def test_mountpoints_agree_with_lsblk(shared_dumps: dict[str, Path], dump: str) -> None:
    require(dump in shared_dumps, f"dump {dump} missing")
    root = shared_dumps[dump]
    proc = subprocess.run(["lsblk", "--sysroot", str(root), "-J", "-o", "KNAME,MOUNTPOINTS"],
                          capture_output=True, text=True)
    theirs: dict[str, dict[str, Any]] = {}
    flatten(json.loads(proc.stdout)["blockdevices"], None, theirs, set())
    inv = inspect_devices(SysRoot.open(root), probe=False)
    for dev in inv.devices:
        expected = [m for m in theirs[dev.name]["mountpoints"] if m is not None]
        assert sorted(dev.usage.mountpoints) == sorted(expected), dev.name
    assert any(dev.usage.mountpoints for dev in inv.devices)
