"""Pure parsers and the mkfs.xfs stripe rules: strings and numbers in, facts out."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.inspect import geometry, parsers
from advisor.inspect.specs import (
    FactBool,
    FactInt,
    FactStr,
    Reader,
    Reading,
    Spec,
    held,
    make_fact,
    reading,
)
from advisor.models.device import Fact
from advisor.system.sysroot import SysRoot

KiB = 1 << 10
GiB = 1 << 30


@pytest.mark.parametrize(("text", "expected"), [
    ("none [mq-deadline] kyber bfq", "mq-deadline"),
    ("[none] mq-deadline", "none"),
    ("none", "none"),
])
def test_scheduler(text: str, expected: str) -> None:
    assert parsers.parse_scheduler(text) == expected


@pytest.mark.parametrize("bad", ["", "none mq-deadline", "[]", "[x"])
def test_scheduler_garbage(bad: str) -> None:
    with pytest.raises(ValueError):
        parsers.parse_scheduler(bad)


@pytest.mark.parametrize("bad", ["", "-1", "12x", "0x10", "banana"])
def test_int_garbage(bad: str) -> None:
    with pytest.raises(ValueError):
        parsers.parse_int(bad)


def test_sizes_are_512_byte_sectors() -> None:
    assert parsers.parse_sectors("2048\n") == 1 << 20
    assert parsers.parse_flag("1") is True and parsers.parse_flag("0") is False
    assert parsers.parse_write_cache("write  back") == "write back"
    with pytest.raises(ValueError):
        parsers.parse_flag("2")


@pytest.mark.parametrize(("level", "disks", "layout", "data"), [
    ("raid0", 4, 0, 4), ("raid1", 2, 0, 1), ("raid4", 5, 0, 4), ("raid5", 4, 2, 3),
    ("raid6", 8, 2, 6), ("raid10", 4, 0x102, 2), ("raid10", 6, 0x103, 2),
    # raid10 counts near copies only (drivers/md/raid10.c raid10_nr_stripes): f2 on 4 disks
    # is 4, n2 on 8 is 4, o2 (offset, bit 16) on 4 is 4, n2,f2 on 8 is 4.
    ("raid10", 4, 0x201, 4), ("raid10", 8, 0x202, 4), ("raid10", 3, 0x102, 3),
    ("raid10", 8, 0x102, 4), ("raid10", 4, 0x10201, 4),
])
def test_md_data_disks(level: str, disks: int, layout: int, data: int) -> None:
    assert parsers.md_data_disks(level, disks, layout) == data


@pytest.mark.parametrize(("level", "disks", "layout"), [
    ("raid6", 2, 0), ("raid5", 1, 0), ("multipath", 2, 0), ("raid5", 0, 0),
])
def test_md_data_disks_impossible(level: str, disks: int, layout: int) -> None:
    with pytest.raises(ValueError):
        parsers.md_data_disks(level, disks, layout)


def test_dm_kind() -> None:
    assert parsers.dm_kind_from_uuid("LVM-Wk3i9") == "lvm"
    assert parsers.dm_kind_from_uuid("CRYPT-LUKS2-abc-name") == "crypt"
    assert parsers.dm_kind_from_uuid("mpath-3600a0b8") == "multipath"
    assert parsers.dm_kind_from_uuid("part1-mpath-3600") == "other"


def test_mountinfo_and_swaps() -> None:
    text = ("36 35 98:0 /mnt1 /mnt/my\\040disk rw,noatime master:1 - ext3 /dev/root rw\n"
            "garbage line\n"
            "37 35 0:5 / /proc rw - proc proc rw\n")
    entries = parsers.parse_mountinfo(text)
    assert [(e.maj_min, e.mountpoint, e.fstype, e.source) for e in entries] == [
        ("98:0", "/mnt/my disk", "ext3", "/dev/root"), ("0:5", "/proc", "proc", "proc")]
    mounts = parsers.parse_proc_mounts("/dev/sda1 / ext4 rw 0 0\n")
    assert (mounts[0].maj_min, mounts[0].source, mounts[0].fstype) == (None, "/dev/sda1", "ext4")
    swaps = ("Filename\tType\tSize\tUsed\tPriority\n"
             "/dev/dm-1  partition 100 0 -2\n/swapfile file 1 0 -3\n")
    assert parsers.parse_swaps(swaps) == ["/dev/dm-1", "/swapfile"]


def test_transport() -> None:
    link = "../devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda"
    assert parsers.transport_from_link(link) == "sata"
    assert parsers.transport_from_link("../devices/virtual/block/dm-0") is None
    assert parsers.transport_from_link("../devices/pci0000:00/0000:00:04.0/virtio1/block/vda") \
        == "virtio"


def _stripe(min_io: int, opt_io: int, *, phys: int = 512, size: int = 100 * GiB
            ) -> geometry.StripeGeometry:
    return geometry.mkfs_detected_stripe(min_io=min_io, opt_io=opt_io, physical_sector=phys,
                                         logical_sector=512, size_bytes=size, source="x")


def test_mkfs_uses_a_sane_geometry() -> None:
    s = _stripe(256 * KiB, 2048 * KiB)
    assert (s.sunit_bytes, s.swidth_bytes, s.data_disks, s.used_by_mkfs) == (
        256 * KiB, 2048 * KiB, 8, True)
    assert s.ignored_reason is None and s.source == "x"


@pytest.mark.parametrize(("min_io", "opt_io", "phys", "size", "why"), [
    (4096, 1024 * KiB, 4096, 100 * GiB, "physical sector"),
    (64 * KiB, 4096, 4096, 100 * GiB, "physical sector"),
    (64 * KiB, 0, 512, 100 * GiB, "only one"),
    (64 * KiB, 96 * KiB, 512, 100 * GiB, "not a multiple"),
    (64 * KiB, 256 * KiB, 512, GiB - 1, "under 1 GiB"),
])
def test_mkfs_ignores_bad_geometry(min_io: int, opt_io: int, phys: int, size: int,
                                   why: str) -> None:
    s = _stripe(min_io, opt_io, phys=phys, size=size)
    assert not s.used_by_mkfs
    assert s.ignored_reason is not None and why in s.ignored_reason


def test_plain_disk_reports_nothing() -> None:
    for min_io, phys in ((512, 512), (4096, 4096), (0, 512)):
        s = _stripe(min_io, 0, phys=phys)
        assert s.source == "none" and s.ignored_reason is None and s.sunit_bytes is None


@given(unit_kib=st.integers(1, 4096), disks=st.integers(2, 64))
def test_used_geometry_is_consistent(unit_kib: int, disks: int) -> None:
    unit = unit_kib * KiB
    s = _stripe(unit, unit * disks, phys=512)
    assert s.used_by_mkfs == (unit != 512)
    if s.used_by_mkfs:
        assert s.swidth_bytes == s.sunit_bytes * disks == unit * disks  # type: ignore[operator]


def test_md_stripe() -> None:
    assert geometry.md_stripe(512 * KiB, 4) == (512 * KiB, 2048 * KiB)
    assert geometry.md_stripe(512 * KiB, 1) is None
    assert geometry.md_stripe(None, 4) is None


def test_fast_fact_equals_a_validated_fact() -> None:
    built = make_fact(FactInt, 7, "sysfs", "sys/block/sda/size", "7", None)
    validated = Fact[int](value=7, source="sysfs", path="sys/block/sda/size", raw="7")
    assert built == validated and hash(built) == hash(validated)
    assert built.model_dump_json() == validated.model_dump_json()
    assert Fact[int].model_validate_json(built.model_dump_json()) == built
    with pytest.raises(Exception, match="frozen"):
        built.value = 8  # type: ignore[misc]


def test_a_reading_makes_the_fact_make_fact_makes() -> None:
    kept = Reading(FactInt, 7, "sysfs", "sys/block/sda", "size", "7", None)
    assert kept.path == "sys/block/sda/size"
    assert kept.fact() == make_fact(FactInt, 7, "sysfs", "sys/block/sda/size", "7", None)
    validated = Fact[int](value=7, source="sysfs", path="sys/block/sda/size", raw="7")
    assert kept.fact() == validated and hash(kept.fact()) == hash(validated)
    assert kept.fact().model_dump_json() == validated.model_dump_json()
    whole = reading(FactInt, None, "derived", "sys/block/md0/md", None, "unknown")
    assert whole.path == "sys/block/md0/md"
    assert whole.fact() == Fact[int](source="derived", path="sys/block/md0/md", note="unknown")


def test_scan_leaves_the_garbage_collector_as_it_found_it(tmp_path: object) -> None:
    import gc
    from pathlib import Path

    from advisor.inspect.devices import inspect_devices
    from advisor.system.sysroot import SysRoot
    from tests.inspect.sysfs_builder import Dev, write_tree

    root = write_tree(Path(str(tmp_path)), [Dev("sda", 1 << 30, "8:0")])
    assert gc.isenabled()
    inspect_devices(SysRoot.open(root))
    assert gc.isenabled()
    gc.disable()
    try:
        inspect_devices(SysRoot.open(root))
        assert not gc.isenabled()
    finally:
        gc.enable()



def test_a_held_device_gives_the_facts_its_readings_make() -> None:
    """A scan holds each device as a Held (its Readings packed in one list): the Facts it makes,
    and a fact read by key, are those of the Readings it was made from."""
    base = "sys/block/sda"
    read: dict[str, object] = {
        "name": "sda", "parents": [],
        "size_bytes": Reading(FactInt, 4096, "sysfs", base, "size", "8", None),
        "rotational": Reading(FactBool, None, "sysfs", base, "queue/rotational", "x",
                              "unparsable: x"),
        "storage_hint": reading(FactStr, None, "sysfs", base, None, "nothing says"),
        "thin": make_fact(FactStr, "lbpme", "sysfs", f"{base}/device/x", "1", None),
        "model": Reading(FactStr, "disk", "sysfs", "sys/block/sdb", "device/model", "disk", None),
    }
    kept = held(read)
    assert dict(kept) == {"name": "sda", "parents": [], "thin": read["thin"]}  # the rest packed
    made = kept.fields()
    assert made.keys() == read.keys()
    for key, value in read.items():
        want = value.fact() if isinstance(value, Reading) else value
        assert made[key] == want, key
        got = kept[key]
        assert (got.fact() if isinstance(got, Reading) else got) == want, key
        assert key in kept and kept.get(key) is not None
    assert made["rotational"].model_dump_json() == Fact[bool](
        source="sysfs", path=f"{base}/queue/rotational", raw="x", note="unparsable: x"
    ).model_dump_json()
    assert "serial" not in kept and kept.get("serial", 1) == 1
    with pytest.raises(KeyError):
        kept["serial"]
    kept["size_bytes"] = made["size_bytes"]  # what the stacking pass sets shadows what was read
    assert kept["size_bytes"] is made["size_bytes"] and kept.fields()["size_bytes"] is \
        made["size_bytes"]
    assert held(dict(read)).layout is kept.layout  # devices read alike share one layout


def test_a_value_parsed_once_is_shared_by_the_devices_that_read_it(tmp_path: Path) -> None:
    specs: list[Spec] = [
        ("opt_io", "optimal_io_size", FactInt, parsers.parse_int, False),
        ("min_io", "minimum_io_size", FactInt, parsers.parse_int, False),
    ]
    for name in ("sda", "sdb"):
        (tmp_path / "sys" / "block" / name).mkdir(parents=True)
        (tmp_path / "sys" / "block" / name / "optimal_io_size").write_text("524288\n")
        (tmp_path / "sys" / "block" / name / "minimum_io_size").write_text("bogus\n")
    root = SysRoot.open(tmp_path)
    first, again = (Reader(root).batch(f"sys/block/{name}", specs) for name in ("sda", "sdb"))
    assert first["opt_io"].value == 524288 and first["opt_io"].value is again["opt_io"].value
    assert again["opt_io"].path == "sys/block/sdb/optimal_io_size"
    assert first["min_io"].value is None and first["min_io"].note.startswith("unparsable")
