"""Hand-written sysfs trees with known answers: one host holding every shape the rules use."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from advisor.inspect import devices
from advisor.inspect.devices import find_device, inspect_devices
from advisor.inspect.specs import make_device
from advisor.models.device import Device, Inventory, stripe_hidden_below
from advisor.system.sysroot import SysRoot
from tests.conftest import require
from tests.inspect.sysfs_builder import Dev, Part, write_tree
from tests.inspect.test_lsblk_oracle import COLUMNS, lsblk_tree

GiB = 1 << 30
TiB = 1 << 40
KiB = 1 << 10
SATA = "pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0"
NVME = "pci0000:00/0000:00:01.0/0000:01:00.0/nvme/nvme0"
SAS = "pci0000:00/0000:00:02.0/host2/target2:0:0/2:0:0:0"


def _members(prefix: str, n: int, first_minor: int, holder: str) -> list[Dev]:
    return [Dev(f"{prefix}{i}", 2 * TiB, f"8:{first_minor + 16 * i}", devpath=SAS,
                holders=[holder], queue_depth=64) for i in range(n)]


def _md(name: str, maj_min: str, level: str, disks: int, chunk: int, data: int,
        slaves: list[str], layout: int = 0, holders: list[str] | None = None) -> Dev:
    return Dev(name, data * 2 * TiB, maj_min, rotational=1, min_io=chunk or None,
               opt_io=chunk * data if data > 1 else 0, slaves=slaves, holders=holders or [],
               scheduler="none", hw_queues=0,
               md={"level": level, "chunk_size": str(chunk), "raid_disks": str(disks),
                   "layout": str(layout), "component_size": str(2 * TiB // 1024)})


def _host(root: Path) -> Path:
    devs: list[Dev] = [
        # A SATA HDD: volatile cache, no FUA, one partition that is mounted, one swap.
        Dev("sda", 4 * TiB, "8:0", devpath=SATA, rotational=1, physical=4096, min_io=4096,
            queue_depth=32, model="WDC WD40EFRX",
            partitions=[Part("sda1", 2048, 100 * GiB), Part("sda2", 2048 + 100 * GiB // 512,
                                                            8 * GiB)]),
        # An NVMe SSD: no rotation, FUA, several hardware queues, discard.
        Dev("nvme0n1", 1 * TiB, "259:0", devpath=NVME, rotational=0, write_cache="write back",
            fua=1, hw_queues=4, nr_tags=1023, nr_requests=1023, scheduler="[none] mq-deadline",
            discard_granularity=512, discard_max_bytes=2199023255040,
            files={"wwid": "eui.0025388b71b2c1a5"}),
        # Hardware RAID LUNs: one exposing its geometry, one exposing nothing.
        Dev("sdh", 16 * TiB, "8:112", devpath=SAS, min_io=64 * KiB, opt_io=512 * KiB,
            write_cache="write through", queue_depth=256),
        Dev("sdi", 16 * TiB, "8:128", devpath=SAS, write_cache="write through", queue_depth=256),
        # A partition starting off the physical sector boundary.
        Dev("sdj", 2 * TiB, "8:144", devpath=SATA, physical=4096, min_io=4096,
            partitions=[Part("sdj1", 63, 100 * GiB, alignment_offset=3584)]),
        # 4Kn and host-managed zoned disks.
        Dev("sdk", 8 * TiB, "8:160", devpath=SAS, logical=4096, physical=4096),
        Dev("sdl", 14 * TiB, "8:176", devpath=SAS, physical=4096, min_io=4096,
            zoned="host-managed", files={"queue/chunk_sectors": "524288"}),
        # Missing and garbage attributes.
        Dev("sdm", 1 * TiB, "8:192", devpath=SAS, files={
            "queue/rotational": "banana", "queue/nr_requests": None, "queue/scheduler": "",
            "queue/write_cache": "write sideways", "queue/logical_block_size": "-512",
            "ro": None}),
        # md arrays over SAS disks.
        _md("md0", "9:0", "raid0", 4, 512 * KiB, 4, ["sdr0", "sdr1", "sdr2", "sdr3"]),
        _md("md1", "9:1", "raid1", 2, 0, 1, ["sds0", "sds1"]),
        _md("md5", "9:5", "raid5", 4, 64 * KiB, 3, ["sdt0", "sdt1", "sdt2", "sdt3"]),
        _md("md6", "9:6", "raid6", 6, 512 * KiB, 4, [f"sdu{i}" for i in range(6)],
            holders=["dm-0"]),
        _md("md10", "9:10", "raid10", 4, 512 * KiB, 2, ["sdv0", "sdv1", "sdv2", "sdv3"],
            layout=0x102),
        _md("md7", "9:7", "raid6", 6, 256 * KiB, 4, [f"sdw{i}" for i in range(6)],
            holders=["dm-1"]),
        # raid10 "far 2" on 4 disks: the kernel counts near copies only (raid10_nr_stripes), so
        # its optimal IO is 4 chunks; dm-crypt on it passes nothing up.
        _md("md11", "9:11", "raid10", 4, 512 * KiB, 4, [f"sdy{i}" for i in range(4)],
            layout=0x201, holders=["dm-2"]),
        # LVM on md6 (the kernel passes the geometry up), and an old dm that does not (on md7).
        Dev("dm-0", 4 * TiB, "253:0", min_io=512 * KiB, opt_io=2 * 1024 * KiB, slaves=["md6"],
            dm_name="data-vol", dm_uuid="LVM-abcdefABCDEF", hw_queues=0, scheduler="none"),
        Dev("dm-1", 4 * TiB, "253:1", slaves=["md7"], dm_name="old-vol",
            dm_uuid="LVM-0123456789", hw_queues=0, scheduler="none"),
        Dev("dm-2", 4 * TiB, "253:2", slaves=["md11"], dm_name="crypt-vol",
            dm_uuid="CRYPT-LUKS2-0123456789abcdef-crypt-vol", hw_queues=0, scheduler="none"),
        *_members("sdr", 4, 200, "md0"), *_members("sds", 2, 300, "md1"),
        *_members("sdt", 4, 400, "md5"), *_members("sdu", 6, 500, "md6"),
        *_members("sdv", 4, 600, "md10"), *_members("sdw", 6, 700, "md7"),
        *_members("sdy", 4, 800, "md11"),
        # A small device whose geometry mkfs.xfs ignores (under 1 GiB), and an unattached loop.
        Dev("sdx", 512 << 20, "65:0", devpath=SAS, min_io=64 * KiB, opt_io=256 * KiB),
        Dev("loop999", 0, "7:999"),  # no /dev node: lsblk stats /dev/NAME live
        Dev("ram0", 64 << 20, "1:0"),
    ]
    mountinfo = "\n".join([
        "1 0 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw",
        "2 1 253:0 / /srv/data rw,relatime shared:2 - xfs /dev/mapper/data-vol rw",
        "3 1 0:5 / /proc rw - proc proc rw",
        r"4 1 259:0 / /mnt/with\040space rw - xfs /dev/nvme0n1 rw",
    ])
    return write_tree(root, devs, mountinfo=mountinfo,
                      swaps="/dev/sda2                               partition\t8388604\t0\t-2\n")


@pytest.fixture(scope="module")
def host_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _host(tmp_path_factory.mktemp("host"))


@pytest.fixture(scope="module")
def host(host_root: Path) -> Inventory:
    return inspect_devices(SysRoot.open(host_root))


def dev(inv: Inventory, name: str) -> Device:
    return find_device(inv, name)


def test_sata_hdd_with_volatile_cache_and_no_fua(host: Inventory) -> None:
    sda = dev(host, "sda")
    assert (sda.kind, sda.transport, sda.rotational.value) == ("disk", "sata", True)
    assert sda.write_cache.value == "write back" and sda.fua.value is False
    assert sda.queue_depth.value == 32 and sda.model.value == "WDC WD40EFRX"
    assert sda.size_bytes.value == 4 * TiB and sda.size_bytes.path == "sys/block/sda/size"
    assert sda.children == ["sda1", "sda2"] and sda.stripe.source == "none"
    sda1 = dev(host, "sda1")
    assert sda1.parents == ["sda"] and sda1.partition_start.value == 2048 * 512
    assert sda1.rotational.value is True  # a partition's queue is its disk's
    assert sda1.usage.mountpoints == ["/"] and sda1.usage.fstype.value == "ext4"
    assert sda1.usage.fstype.source == "mountinfo"
    assert dev(host, "sda2").usage.swap is True and not sda1.usage.swap


def test_nvme_ssd(host: Inventory) -> None:
    nvme = dev(host, "nvme0n1")
    assert (nvme.transport, nvme.rotational.value, nvme.fua.value) == ("nvme", False, True)
    assert (nvme.hw_queues.value, nvme.hw_queue_tags.value) == (4, 1023)
    assert nvme.scheduler.value == "none" and nvme.nr_requests.value == 1023
    assert nvme.discard_granularity.value == 512
    assert nvme.wwn.value == "eui.0025388b71b2c1a5"
    assert nvme.queue_depth.value is None  # SCSI only
    assert nvme.usage.mountpoints == ["/mnt/with space"]


@pytest.mark.parametrize(("name", "level", "data", "sunit", "swidth"), [
    ("md0", "raid0", 4, 512 * KiB, 2048 * KiB),
    ("md5", "raid5", 3, 64 * KiB, 192 * KiB),
    ("md6", "raid6", 4, 512 * KiB, 2048 * KiB),
    ("md10", "raid10", 2, 512 * KiB, 1024 * KiB),
    ("md11", "raid10", 4, 512 * KiB, 2048 * KiB),
])
def test_md_arrays(host: Inventory, name: str, level: str, data: int, sunit: int,
                   swidth: int) -> None:
    md = dev(host, name)
    assert md.kind == "md" and md.md is not None
    assert md.md.level.value == level and md.md.data_disks.value == data
    assert (md.stripe.sunit_bytes, md.stripe.swidth_bytes) == (sunit, swidth)
    assert md.stripe.used_by_mkfs and md.stripe.data_disks == data
    assert md.stripe.source.startswith(f"{name} (md {level}")
    assert len(md.parents) == md.md.raid_disks.value
    assert all(name in dev(host, p).holders for p in md.parents)


def test_md_raid1_has_no_stripe(host: Inventory) -> None:
    md1 = dev(host, "md1")
    assert md1.md is not None and md1.md.data_disks.value == 1
    assert md1.stripe.sunit_bytes is None and not md1.stripe.used_by_mkfs


def test_lvm_on_md_raid6_passes_geometry_up(host: Inventory) -> None:
    lv = dev(host, "data-vol")
    assert (lv.name, lv.kind, lv.dm_kind, lv.path) == ("dm-0", "dm", "lvm", "/dev/mapper/data-vol")
    assert lv.parents == ["md6"]
    assert lv.stripe.used_by_mkfs and lv.stripe.sunit_bytes == 512 * KiB
    assert lv.stripe.data_disks == 4
    assert lv.stripe.source.startswith("md6 (md raid6")
    assert "passed up to data-vol" in lv.stripe.source
    assert lv.usage.mountpoints == ["/srv/data"] and lv.usage.fstype.value == "xfs"


def test_dm_hiding_md_geometry_says_so(host: Inventory) -> None:
    old = dev(host, "old-vol")
    assert not old.stripe.used_by_mkfs
    assert (old.stripe.sunit_bytes, old.stripe.swidth_bytes) == (256 * KiB, 1024 * KiB)
    assert old.stripe.ignored_reason is not None and "-d su=" in old.stripe.ignored_reason
    assert stripe_hidden_below(old) and old.stripe.data_disks == 4
    assert not stripe_hidden_below(dev(host, "data-vol"))
    assert not stripe_hidden_below(dev(host, "md6"))


def test_dm_crypt_hiding_md_raid10_far_counts_near_copies_only(host: Inventory) -> None:
    """md11 is raid10 f2 on 4 disks: 4 data disks per stripe, as raid10_nr_stripes counts
    (raid_disks / near copies), not 2; the crypt device above hides it."""
    crypt = dev(host, "crypt-vol")
    assert crypt.dm_kind == "crypt" and not crypt.stripe.used_by_mkfs
    assert stripe_hidden_below(crypt)
    assert (crypt.stripe.sunit_bytes, crypt.stripe.data_disks) == (512 * KiB, 4)
    assert crypt.stripe.source.startswith("md11 (md raid10, 4 disks")


def test_hardware_raid_luns(host: Inventory) -> None:
    sdh = dev(host, "sdh")
    assert sdh.stripe.used_by_mkfs and (sdh.stripe.sunit_bytes, sdh.stripe.data_disks) == (
        64 * KiB, 8)
    assert sdh.stripe.source == "sdh (min/opt io)" and sdh.write_cache.value == "write through"
    sdi = dev(host, "sdi")
    assert sdi.stripe.sunit_bytes is None and sdi.stripe.source == "none"
    assert sdi.stripe.ignored_reason is None


def test_misaligned_partition(host: Inventory) -> None:
    part = dev(host, "sdj1")
    assert part.alignment_offset.value == 3584 and part.partition_start.value == 63 * 512
    assert dev(host, "sdj").alignment_offset.value == 0


def test_4kn_and_zoned_disks(host: Inventory) -> None:
    sdk = dev(host, "sdk")
    assert (sdk.logical_sector.value, sdk.physical_sector.value) == (4096, 4096)
    assert sdk.stripe.source == "none"  # min io = the 4 KiB sector: nothing to detect
    assert dev(host, "sdl").zoned.value == "host-managed"
    assert sdk.zoned.value == "none"


def test_small_device_geometry_is_ignored(host: Inventory) -> None:
    sdx = dev(host, "sdx")
    assert not sdx.stripe.used_by_mkfs and sdx.stripe.ignored_reason is not None
    assert "1 GiB" in sdx.stripe.ignored_reason


def test_missing_and_garbage_attributes_are_null_with_a_note(host: Inventory) -> None:
    sdm = dev(host, "sdm")
    assert sdm.rotational.value is None and sdm.rotational.raw == "banana"
    assert sdm.rotational.note is not None and sdm.rotational.note.startswith("unparsable")
    assert sdm.nr_requests.value is None and sdm.nr_requests.note == "missing"
    assert sdm.read_only.value is None and sdm.scheduler.value is None
    assert sdm.write_cache.value is None and sdm.logical_sector.value is None
    assert any("rotational" in n for n in sdm.notes)
    assert sdm.size_bytes.value == TiB  # the rest still read


def test_empty_and_ram_devices_are_left_out_like_lsblk(host: Inventory) -> None:
    names = {d.name for d in host.devices}
    assert "loop999" not in names and "ram0" not in names
    assert len(host.devices) == 52


def test_parents_come_before_children(host: Inventory) -> None:
    seen: set[str] = set()
    for d in host.devices:
        assert all(p in seen for p in d.parents), d.name
        seen.add(d.name)


def test_inventory_validates_against_its_own_model(host: Inventory) -> None:
    again = Inventory.model_validate_json(host.model_dump_json())
    assert again == host
    assert again.schema_version == 1 and again.live is False


def test_hand_written_host_agrees_with_lsblk(host_root: Path, host: Inventory) -> None:
    require(shutil.which("lsblk") is not None, "needs lsblk")
    theirs, edges = lsblk_tree(host_root)
    assert sorted(theirs) == sorted(d.name for d in host.devices)
    assert edges == {(d.name, c) for d in host.devices for c in d.children}
    for d in host.devices:
        if d.name == "sdm":  # garbage attributes: lsblk prints them raw, we say null
            continue
        for column, getter in COLUMNS.items():
            assert getter(d) == theirs[d.name][column], (d.name, column)


@pytest.mark.parametrize("fields", [None, frozenset({"size_bytes", "rotational"})])
def test_scanned_devices_equal_validated_ones(host_root: Path, fields: frozenset[str] | None,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan builds its Devices without validating them again (make_device): each equals the
    Device validated from the same fields (Device(**fields)), with the same fields-set, in
    model order; the defaults of a `--fields` scan too."""
    built = inspect_devices(SysRoot.open(host_root), fields=fields).devices
    monkeypatch.setattr(devices, "make_device", lambda given: Device(**given))
    validated = inspect_devices(SysRoot.open(host_root), fields=fields).devices
    assert [d.name for d in built] == [d.name for d in validated]
    for got, want in zip(built, validated, strict=True):
        assert got == want, got.name
        assert got.model_fields_set == want.model_fields_set, got.name
        assert list(got.__dict__) == list(want.__dict__), got.name
        assert got.model_dump_json() == want.model_dump_json(), got.name


def test_make_device_refuses_what_is_not_a_device() -> None:
    with pytest.raises(TypeError, match="not Device fields: \\['colour'\\]"):
        make_device({"name": "sda", "display_name": "sda", "path": "/dev/sda", "kind": "disk",
                     "colour": "red"})
    with pytest.raises(TypeError, match="needs its path"):
        make_device({"name": "sda", "display_name": "sda", "kind": "disk"})


def test_make_device_fills_defaults_as_validation_does() -> None:
    """Only the required fields: every default as Device(...) gives it, and the mutable ones
    (lists, a Usage and its lists) made anew for each device, never shared."""
    named = {"name": "sda", "display_name": "sda", "path": "/dev/sda", "kind": "disk"}
    first, second = make_device(named), make_device(named)
    validated = Device(**named)
    assert first == validated and first.model_fields_set == validated.model_fields_set
    assert list(first.__dict__) == list(validated.__dict__)
    assert first.usage is not second.usage
    assert first.usage.mountpoints is not second.usage.mountpoints
    assert first.parents is not second.parents and first.notes is not second.notes
