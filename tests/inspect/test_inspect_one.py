"""One device read on its own (what a proposal needs) equals the same device in a full scan, on the
hand-written hosts and the real captures, by every name it answers to; a name that is not one
device's gives None, and the full scan answers (or refuses)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.errors import DeviceProblem
from advisor.inspect.devices import inspect_devices, inspect_one
from advisor.session import Session
from advisor.system.sysroot import SysRoot
from tests.inspect.sysfs_builder import Dev, Part, write_tree
from tests.inspect.test_below import below as below_fixture  # noqa: F401  # the fixture
from tests.inspect.test_fixture_hosts import _host

GiB, TiB = 1 << 30, 1 << 40
SAS = "pci0000:00/0000:00:02.0/host2/target2:0:0/2:0:0:0"


def _stacked_host(root: Path) -> Path:
    """LVM on a partition, a loop device bound over a disk, an md mirror whose members are
    partitions, a mounted dm and a dm whose name is another device's kernel name."""
    devs = [
        Dev("sda", 2 * TiB, "8:0", devpath=SAS, partitions=[
            Part("sda1", 2048, 1 * TiB, holders=["dm-0"]),
            Part("sda2", 2048 + TiB // 512, 512 * GiB, holders=["md0"])]),
        Dev("sdb", 1 * TiB, "8:16", devpath=SAS, partitions=[
            Part("sdb1", 2048, 512 * GiB, holders=["md0"])]),
        Dev("md0", 512 * GiB, "9:0", slaves=["sda2", "sdb1"], holders=["dm-1"],
            md={"level": "raid1", "chunk_size": "0", "raid_disks": "2", "layout": "0"}),
        Dev("dm-0", 1 * TiB, "253:0", slaves=["sda1"], dm_name="vg-data",
            dm_uuid="LVM-abcdefABCDEF"),
        Dev("dm-1", 512 * GiB, "253:1", slaves=["md0"], dm_name="sdc",
            dm_uuid="LVM-0123456789"),
        Dev("sdc", 1 * TiB, "8:32", devpath=SAS),
        Dev("sdd", 1 * TiB, "8:48", devpath=SAS),
        Dev("loop0", 1 * TiB, "7:0", files={"loop/backing_file": "/dev/sdd"}),
        Dev("ram0", 64 << 20, "1:0"),
        Dev("loop9", 0, "7:9"),
    ]
    return write_tree(root, devs,
                      mountinfo="1 0 253:0 / /srv rw - xfs /dev/mapper/vg-data rw",
                      swaps="/dev/sdb1 partition\t8388604\t0\t-2\n")


def _trees(tmp_path_factory: pytest.TempPathFactory,
           shared_dumps: dict[str, Path]) -> dict[str, Path]:
    return {"fixture host": _host(tmp_path_factory.mktemp("host")),
            "stacked": _stacked_host(tmp_path_factory.mktemp("stacked")), **shared_dumps}


def test_every_device_alone_equals_the_full_scan(tmp_path_factory: pytest.TempPathFactory,
                                                 shared_dumps: dict[str, Path]) -> None:
    checked = 0
    unresolved: set[tuple[str, str]] = set()
    for label, tree in _trees(tmp_path_factory, shared_dumps).items():
        root = SysRoot.open(tree)
        inventory = inspect_devices(root)
        for dev in inventory.devices:
            for name in {dev.name, dev.display_name, dev.path, f"/dev/{dev.name}"}:
                if inventory.get(name) is not dev:
                    continue  # the name means another device (the full scan's first match)
                alone = inspect_one(root, name)
                if alone is None:
                    unresolved.add((label, name))
                    continue
                assert alone == dev, f"{label}: {name}"
                checked += 1
    assert checked > 80
    # Only the name two devices answer to (sdc, and dm-1 named sdc) is left to the full scan.
    assert unresolved == {("stacked", "/dev/mapper/sdc"), ("stacked", "sdc")}


def test_it_reads_only_the_stack(tmp_path: Path) -> None:
    root = SysRoot.open(_stacked_host(tmp_path))
    root.recorded = set()
    assert inspect_one(root, "vg-data") is not None
    entries = {p.split("/")[2] for p in root.recorded if p.startswith("sys/block/")}
    # dm-0, the partition it is on (and so its disk), the loop devices (bound over it?), and
    # every dm device's name (which one is vg-data?): not sdb, sdc, sdd, md0.
    assert entries == {"dm-0", "sda", "loop0", "loop9", "dm-1"}
    assert {p for p in root.recorded if p.startswith("sys/block/dm-1/")} == {
        "sys/block/dm-1/dm/name"}


def test_names_that_are_not_one_device_go_to_the_full_scan(tmp_path: Path) -> None:
    tree = _stacked_host(tmp_path)
    root = SysRoot.open(tree)
    assert inspect_one(root, "sdc") is None  # a kernel name and dm-1's name
    assert inspect_one(root, "nothing") is None
    assert inspect_one(root, "ram0") is None  # not listed (lsblk leaves RAM disks out)
    assert inspect_one(root, "loop9") is None  # empty
    session = Session(str(tree))
    assert session.device("sdc").name == inspect_devices(root).get("sdc").name  # type: ignore[union-attr]
    with pytest.raises(DeviceProblem, match="unknown device 'ram0'"):
        session.device("ram0")
    assert session.device("/dev/mapper/vg-data").usage.mountpoints == ["/srv"]
    assert session.device("sdb1").usage.swap
    assert session.device("sdd").usage.loops == ["loop0"]
