"""One device read on its own (what a proposal needs) equals the same device in a full scan, on the
hand-written hosts and the real captures, by every name it answers to; a name that is not one
device's gives None, and the full scan answers (or refuses)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.errors import DeviceProblem
from advisor.inspect.devices import inspect_devices, inspect_one
from advisor.inspect.stacking import entries_for
from advisor.inspect.sysblock import kind_of
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


def _from_the_listing(root: SysRoot, name: str) -> tuple[str, list[str]] | None:
    """entries_for as it was written over the whole /sys/block listing, held: the answers the
    listing gone through once must still give."""
    entries = root.listdir("sys/block")
    present = set(entries)
    key = name.removeprefix("/dev/mapper/").removeprefix("/dev/")
    found: set[tuple[str, str]] = set()
    if key in present:
        found.add((key, key))
    dms = [e for e in entries if e.startswith("dm-")]
    for entry, dm_name in zip(dms, root.read_many("sys/block", [f"{e}/dm/name" for e in dms]),
                              strict=True):
        if dm_name == key:
            found.add((entry, entry))
    for entry in entries:
        if key.startswith(entry) and key != entry and "/" not in key \
                and root.exists(f"sys/block/{entry}/{key}/partition"):
            found.add((entry, key))
    if len(found) != 1:
        return None
    (unit, kernel_name), = found
    wanted, todo = {unit}, [unit]
    while todo:
        entry = todo.pop()
        for slave in root.listdir(f"sys/block/{entry}/slaves"):
            below: str | None = slave if slave in present else None
            if below is None:
                parts = (root.readlink(f"sys/block/{entry}/slaves/{slave}") or "").split("/")
                if len(parts) >= 2 and parts[-1] == slave and parts[-2] in present:
                    below = parts[-2]
            if below is None:
                below = next((e for e in sorted(present, key=len, reverse=True)
                              if slave.startswith(e) and slave != e), None)
            if below is not None and below not in wanted:
                wanted.add(below)
                todo.append(below)
    here = f"sys/block/{unit}" if unit == kernel_name else f"sys/block/{unit}/{kernel_name}"
    wanted.update(h for h in root.listdir(f"{here}/holders") if h in present)
    wanted.update(e for e in entries if kind_of(e) == "loop")
    return kernel_name, [e for e in entries if e in wanted]


def _unlinked_slaves_host(root: Path) -> Path:
    """Slaves whose links do not say their disk (a capture that copied them as folders): the
    longest entry a slave's name starts with is its disk (nvme0n1 for nvme0n1p1, not nvme0n).
    Names that look like several things: a dm named like a partition, a loop device's name."""
    devs = [
        Dev("nvme0n1", 1 * TiB, "259:0", partitions=[Part("nvme0n1p1", 2048, 512 * GiB,
                                                          holders=["md5"])]),
        Dev("nvme0n", 1 * TiB, "259:8"),
        Dev("md5", 512 * GiB, "9:5", slaves=["nvme0n1p1", "xvdq3"], holders=["dm-3"],
            md={"level": "raid1", "chunk_size": "0", "raid_disks": "2", "layout": "0"}),
        Dev("dm-3", 512 * GiB, "253:3", slaves=["md5"], dm_name="nvme0n1p2"),
        Dev("loop3", 0, "7:3"),
        Dev("loop12", 1 * GiB, "7:12", files={"loop/backing_file": "/dev/md5"}),
    ]
    write_tree(root, devs)
    slaves = root / "sys" / "devices" / "virtual" / "block" / "md5" / "slaves"
    for slave in ("nvme0n1p1", "xvdq3"):  # xvdq3: no entry starts it (a disk gone)
        (slaves / slave).unlink()
        (slaves / slave).mkdir()
    return root


def test_entries_for_gives_what_the_whole_listing_gave(
        tmp_path_factory: pytest.TempPathFactory, shared_dumps: dict[str, Path]) -> None:
    trees = {**_trees(tmp_path_factory, shared_dumps),
             "unlinked": _unlinked_slaves_host(tmp_path_factory.mktemp("unlinked"))}
    checked = 0
    for label, tree in trees.items():
        root = SysRoot.open(tree)
        names = {"nothing", "", ".", "..", "/dev/", "/dev/mapper/", "sda/sda1", "nvme0n1p2"}
        for dev in inspect_devices(root).devices:
            names.update({dev.name, dev.display_name, dev.path, f"/dev/{dev.name}"})
        for name in sorted(names):
            assert entries_for(root, name) == _from_the_listing(root, name), f"{label}: {name}"
            checked += 1
    assert checked > 150
    root = SysRoot.open(trees["unlinked"])
    assert entries_for(root, "nvme0n1p2") == ("dm-3", ["dm-3", "loop12", "loop3", "md5",
                                                        "nvme0n1"])
    assert entries_for(root, "nvme0n1p1") == ("nvme0n1p1", ["loop12", "loop3", "md5",
                                                            "nvme0n1"])


def test_entries_for_holds_no_listing(tmp_path: Path) -> None:
    """On a wide host what entries_for holds at its peak does not grow with the devices: the
    listing is gone through, not kept, and the dm names are read a batch at a time."""
    import tracemalloc

    block = tmp_path / "sys" / "block"
    block.mkdir(parents=True)
    for i in range(6_000):
        (block / f"sd{i:05}").mkdir()
    for i in range(300):
        (block / f"dm-{i}" / "dm").mkdir(parents=True)
        (block / f"dm-{i}" / "dm" / "name").write_text(f"mpath{i}\n")
    (block / "sd00007" / "slaves").mkdir()
    (block / "dm-9" / "slaves").mkdir()
    (block / "dm-9" / "slaves" / "sd00007").symlink_to("../../sd00007")
    root = SysRoot.open(tmp_path)
    expected = ("dm-9", ["dm-9", "sd00007"])
    assert _from_the_listing(root, "/dev/mapper/mpath9") == expected
    tracemalloc.start()
    try:
        found = entries_for(root, "/dev/mapper/mpath9")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found == expected
    # The listing alone is 6,300 names (~0.6 MiB with its set); what it holds ~90 KiB.
    assert peak < 192 << 10, peak
