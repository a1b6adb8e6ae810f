"""A fixed host for the TUI tests, built from the device models (deterministic: no sysfs, no
clock): an HDD with a mounted and a misaligned partition, an NVMe SSD, four disks in an md RAID6
with LVM on top, and a free loop device."""

from __future__ import annotations

from typing import Any

from advisor.models.device import Device, Fact, Inventory, MdInfo, StripeGeometry, Usage

GiB = 1 << 30
TiB = 1 << 40


def _sysfs(name: str, attr: str, value: Any, raw: str | None = None) -> Fact[Any]:
    return Fact(value=value, source="sysfs", path=f"sys/block/{name}/{attr}",
                raw=raw if raw is not None else str(value))


def _device(name: str, kind: str, size: int, *, rotational: bool, cache: str = "write back",
            fua: bool = False, **extra: Any) -> Device:
    fields: dict[str, Any] = {
        "name": name, "display_name": extra.pop("display_name", name),
        "path": extra.pop("path", f"/dev/{name}"), "kind": kind,
        "size_bytes": Fact(value=size, source="sysfs", path=f"sys/block/{name}/size",
                           raw=str(size // 512)),
        "rotational": _sysfs(name, "queue/rotational", rotational, "1" if rotational else "0"),
        "write_cache": _sysfs(name, "queue/write_cache", cache),
        "fua": _sysfs(name, "queue/fua", fua, "1" if fua else "0"),
        "logical_sector": _sysfs(name, "queue/logical_block_size", 512),
        "physical_sector": _sysfs(name, "queue/physical_block_size", 4096),
        "min_io": _sysfs(name, "queue/minimum_io_size", 4096),
        "opt_io": _sysfs(name, "queue/optimal_io_size", 0),
        "alignment_offset": _sysfs(name, "alignment_offset", 0),
        "scheduler": _sysfs(name, "queue/scheduler", "mq-deadline", "[mq-deadline] none"),
    }
    fields.update(extra)
    return Device(**fields)


def build_inventory() -> Inventory:
    raid = StripeGeometry(sunit_bytes=512 * 1024, swidth_bytes=2 * 512 * 1024, data_disks=2,
                          source="md0 (md raid6)", used_by_mkfs=True)
    members = [
        _device(n, "disk", 2 * TiB, rotational=True, holders=["md0"], children=["md0"],
                usage=Usage(signatures=[Fact(value="linux_raid_member", source="blkid")],
                            probed=True))
        for n in ("sdb", "sdc", "sdd", "sde")
    ]
    devices = [
        _device("sda", "disk", 4 * TiB, rotational=True, children=["sda1", "sda2"],
                model=Fact(value="WDC WD40EFRX", source="udev")),
        _device("sda1", "part", 100 * GiB, rotational=True, parents=["sda"],
                usage=Usage(mountpoints=["/"], fstype=Fact(value="ext4", source="mountinfo"))),
        _device("sda2", "part", 3 * TiB, rotational=True, parents=["sda"],
                alignment_offset=_sysfs("sda2", "alignment_offset", 3072)),
        _device("nvme0n1", "disk", 1 * TiB, rotational=False, cache="write through", fua=True,
                transport="nvme",
                hw_queues=Fact(value=2, source="sysfs", path="sys/block/nvme0n1/mq")),
        *members,
        _device("md0", "md", 4 * TiB, rotational=True, parents=["sdb", "sdc", "sdd", "sde"],
                children=["dm-0"], holders=["dm-0"], stripe=raid,
                md=MdInfo(level=Fact(value="raid6", source="sysfs", path="sys/block/md0/md/level"),
                          chunk_bytes=Fact(value=512 * 1024, source="sysfs",
                                           path="sys/block/md0/md/chunk_size"),
                          raid_disks=Fact(value=4, source="sysfs"),
                          data_disks=Fact(value=2, source="derived"))),
        _device("dm-0", "dm", 3 * TiB, rotational=True, parents=["md0"], dm_kind="lvm",
                display_name="vg0-data", path="/dev/mapper/vg0-data", dm_name="vg0-data",
                stripe=raid.model_copy(update={"source": "md0 (md raid6) via dm-0"})),
        _device("loop0", "loop", 1 * GiB, rotational=True,
                notes=["queue/zoned missing"]),
    ]
    return Inventory(sysroot="tests/tui fixture", live=False, devices=devices)
