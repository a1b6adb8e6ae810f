"""What the advisor knows about a block device. Every fact carries where it came from.

This is the contract between inspection (advisor.inspect) and everything that reads devices (the
rule engine, the scratch-device guard, the TUI, `devices --json`).
"""

# No `from __future__ import annotations` here: pydantic then reads the models' annotations as
# the objects they are, instead of evaluating each from its text (ForwardRef) as a class is built.

import re
from collections.abc import Callable, Mapping
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from advisor.models.base import Documented, FrozenModel, Model

T = TypeVar("T")

DeviceKind = Literal["disk", "part", "md", "dm", "loop", "zram", "rom", "other"]
DmKind = Literal["lvm", "crypt", "multipath", "other"]


class Fact(Documented, BaseModel, Generic[T]):
    """One fact about a device, with its provenance. `value` is null when the source is missing or
    unparsable; `note` then says why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: T | None = None
    """The parsed value (bytes for sizes), or null when unknown."""
    source: str = "unknown"
    """Where it came from: `sysfs`, `udev`, `blkid`, `mountinfo`, `swaps`, `derived`, `answer`."""
    path: str | None = None
    """The sysfs path (relative to the sysroot) or the probe that gave the raw value."""
    raw: str | None = None
    """The raw text as read, before parsing."""
    note: str | None = None
    """Why the value is null or was adjusted."""

    @property
    def known(self) -> bool:
        return self.value is not None


class StripeGeometry(FrozenModel):
    """The data stripe unit and width, as mkfs.xfs would detect them (or as the user gave them)."""

    sunit_bytes: int | None = None
    """Stripe unit in bytes (null: no usable stripe)."""
    swidth_bytes: int | None = None
    """Stripe width in bytes (unit times data disks)."""
    data_disks: int | None = None
    """swidth / sunit."""
    source: str = "none"
    """Which device or answer the geometry comes from, e.g. `md0 (md raid6)` or `sdb topology`."""
    used_by_mkfs: bool = False
    """True when mkfs.xfs will apply this geometry on its own (no -d su/sw needed)."""
    ignored_reason: str | None = None
    """Why mkfs.xfs ignores the geometry the device reports, when it does."""


class MdInfo(Model):
    """Linux software RAID (md) facts from /sys/block/mdX/md/."""

    level: Fact[str] = Fact()
    """RAID level as the kernel names it (raid0, raid1, raid5, raid6, raid10, linear...)."""
    chunk_bytes: Fact[int] = Fact()
    """Chunk size in bytes."""
    raid_disks: Fact[int] = Fact()
    """Member count."""
    layout: Fact[int] = Fact()
    """Layout number (for raid10: near/far/offset copies encoded)."""
    data_disks: Fact[int] = Fact()
    """Disks holding data per stripe, derived from level, raid_disks and layout."""


class OpenBy(Model):
    """A process that holds the device open without claiming it (a VM on a raw disk, a
    database, a `dd`): the kernel lets anyone format it meanwhile."""

    pid: int
    """Its process id."""
    command: str
    """Its command name (/proc/PID/comm, chosen by the process): control characters escaped."""
    mapped: bool = False
    """True when it holds the device only through a memory mapping (no open descriptor)."""
    backing_file: bool = False
    """True when what it holds is the loop device's backing file, not the device itself."""

    def describe(self) -> str:
        """`pid 123 (qemu)`, with how when it is not a plain open."""
        how = [w for w, on in (("mapped", self.mapped),
                               ("its backing file", self.backing_file)) if on]
        return f"pid {self.pid} ({self.command}{', ' if how else ''}{', '.join(how)})"


class Usage(Model):
    """What is on the device and who uses it."""

    mountpoints: list[str] = Field(default_factory=list)
    """Where it is mounted (from mountinfo), empty when not mounted."""
    fstype: Fact[str] = Fact()
    """Filesystem type from mountinfo, or the filesystem signature libblkid found."""
    swap: bool = False
    """Listed in /proc/swaps."""
    signatures: list[Fact[str]] = Field(default_factory=list)
    """Signatures libblkid found: filesystem, partition table, RAID or LVM member, swap (live
    only)."""
    probed: bool = False
    """True when libblkid was asked (live system as root), so an empty `signatures` means empty."""
    loops: list[str] = Field(default_factory=list)
    """Loop devices bound over this device, at any offset (the kernel's loop status on the live
    system; loop/backing_file in a capture). The kernel records no holder for them and loop
    does not claim its backing exclusively: formatting this device destroys what they hold."""
    held_open: list[OpenBy] | None = None
    """Processes holding it (or a loop device's backing file) open or mapped, from every
    process's /proc/PID/fd and /proc/PID/maps; None when not looked at (only `devices` looks,
    on the live system as root)."""


class Device(Model):
    """One block device: a disk, partition, md, dm, loop, zram... with its facts."""

    name: str
    """Kernel name (sda, nvme0n1p1, dm-0, md127)."""
    display_name: str
    """Name people use: the dm name (vg-lv) for dm devices, else the kernel name."""
    path: str
    """Device node, /dev/NAME (or /dev/mapper/NAME for dm)."""
    maj_min: str | None = None
    """MAJ:MIN from sysfs dev."""
    kind: DeviceKind
    """disk, part, md, dm, loop, zram, rom or other."""
    dm_kind: DmKind | None = None
    """For dm devices: lvm, crypt, multipath or other (from the dm uuid prefix)."""
    transport: str | None = None
    """nvme, sata/scsi, virtio, ... when it can be told."""

    model: Fact[str] = Fact()
    """Model as udev or sysfs reports it."""
    serial: Fact[str] = Fact()
    """Serial number (udev)."""
    wwn: Fact[str] = Fact()
    """World-wide name (udev or sysfs)."""

    size_bytes: Fact[int] = Fact()
    """Size in bytes (sysfs size is always in 512-byte sectors)."""
    read_only: Fact[bool] = Fact()
    """ro flag."""
    removable: Fact[bool] = Fact()
    """removable flag."""

    rotational: Fact[bool] = Fact()
    """queue/rotational: true for spinning disks (and for loop devices unless set otherwise)."""
    nr_requests: Fact[int] = Fact()
    """queue/nr_requests: the request queue size."""
    queue_depth: Fact[int] = Fact()
    """device/queue_depth: SCSI tagged command queue depth."""
    hw_queues: Fact[int] = Fact()
    """Number of blk-mq hardware queues (mq/* entries)."""
    hw_queue_tags: Fact[int] = Fact()
    """Tags per hardware queue (mq/0/nr_tags)."""
    write_cache: Fact[str] = Fact()
    """queue/write_cache: `write back` (volatile cache, flushes sent) or `write through`."""
    fua: Fact[bool] = Fact()
    """queue/fua: Force Unit Access supported."""
    dax: Fact[bool] = Fact()
    """queue/dax."""
    zoned: Fact[str] = Fact()
    """queue/zoned: none, host-aware or host-managed."""
    scheduler: Fact[str] = Fact()
    """queue/scheduler: the active I/O scheduler."""
    discard_granularity: Fact[int] = Fact()
    """queue/discard_granularity in bytes (0: no discard)."""
    discard_max_bytes: Fact[int] = Fact()
    """queue/discard_max_bytes."""

    logical_sector: Fact[int] = Fact()
    """queue/logical_block_size in bytes."""
    physical_sector: Fact[int] = Fact()
    """queue/physical_block_size in bytes."""
    min_io: Fact[int] = Fact()
    """queue/minimum_io_size in bytes (mkfs.xfs's stripe unit candidate)."""
    opt_io: Fact[int] = Fact()
    """queue/optimal_io_size in bytes (0: not reported; mkfs.xfs's stripe width candidate)."""
    alignment_offset: Fact[int] = Fact()
    """alignment_offset in bytes (non-zero: misaligned; mkfs.xfs refuses without -f)."""
    partition_start: Fact[int] = Fact()
    """For partitions: start in bytes from the start of the disk."""

    md: MdInfo | None = None
    """md RAID facts, for md devices."""
    dm_name: str | None = None
    """dm/name, for dm devices."""
    dm_uuid: str | None = None
    """dm/uuid, for dm devices."""

    parents: list[str] = Field(default_factory=list)
    """Kernel names this device is built on (slaves/, or the disk of a partition)."""
    children: list[str] = Field(default_factory=list)
    """Kernel names built on this device (holders/ and partitions)."""
    holders: list[str] = Field(default_factory=list)
    """Kernel names in holders/ only (LVM, md, dm-crypt, multipath using this device)."""

    # ---- what sits below ----
    thin: Fact[str] = Fact()
    """Thin provisioning under the device: `dm-thin` (an LVM thin volume: a -tpool device
    below), `lbpme` (a SCSI LUN reporting thin_provisioning = 1); null when none is seen."""
    discard_below: Fact[int] = Fact()
    """For a dm device that takes no discards (queue/discard_max_bytes = 0): the
    discard_max_bytes of the device below that does (the layer drops them: dm-crypt without
    allow_discards, a thin pool without passdown); null otherwise."""
    # ---- end: what sits below ----

    storage_hint: Fact[str] = Fact()
    """What the storage probably is (hardware-raid, md-raid, ssd, virtual-disk, cloud-volume),
    and what says so: a RAID HBA driver (the SCSI host's proc_name), a virtio or Xen transport,
    an NVMe bus, a cloud volume's model string, md, or a loop device's backing file. A hint for
    the answer storage.kind, never a single disk (nothing in sysfs tells that)."""

    stripe: StripeGeometry = StripeGeometry()
    """The stripe geometry mkfs.xfs would detect for this device, and where it came from."""
    usage: Usage = Usage()
    """Mounts, swap and signatures."""

    notes: list[str] = Field(default_factory=list)
    """Anything odd seen while inspecting (missing or garbage attributes)."""


def reachable(dev: Device, links: Callable[[Device], list[str]],
              by_name: Mapping[str, Device]) -> list[Device]:
    """Every device reached from `dev` by following `links` (kernel names) again and again, each
    once, `dev` itself never, depth first; a name `by_name` does not hold is passed over."""
    found: list[Device] = []
    seen = {dev.name}
    stack = list(links(dev))
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        other = by_name.get(name)
        if other is not None:
            found.append(other)
            stack.extend(links(other))
    return found


class Inventory(Model):
    """Every block device of a host (or capture), in sysfs order, parents before children."""

    schema_version: int = 1
    """Version of this document's shape."""
    sysroot: str
    """The root read (`/` for the live system)."""
    live: bool
    """True when read from the running system."""
    devices: list[Device]
    """All block devices and partitions."""

    def stacked(self, dev: Device, direction: Literal["children", "parents"],
                by_name: dict[str, Device] | None = None) -> list[Device]:
        """Every device built on `dev` ("children"), or that `dev` is built on ("parents"),
        transitively, each once (partitions, holders and slaves alike). `by_name`: the devices
        by kernel name, when the caller asks about many devices (built here otherwise)."""
        if by_name is None:
            by_name = {d.name: d for d in self.devices}
        return reachable(dev, lambda d: getattr(d, direction), by_name)

    def get(self, name: str) -> Device | None:
        """Find a device by kernel name, display name, /dev path or /dev/mapper path."""
        key = name.removeprefix("/dev/mapper/").removeprefix("/dev/")
        for d in self.devices:
            if key in (d.name, d.display_name) or name == d.path:
                return d
        return None


#: Short labels of the storage hints, for device lists.
_MEDIA = {"hardware-raid": "raid", "md-raid": "md", "ssd": "ssd", "virtual-disk": "virt",
          "cloud-volume": "cloud"}


def media_label(device: Device) -> str:
    """What the device is in a word, for lists: its storage hint when it has one (a loop device
    is `virt`, a RAID LUN `raid`), else `rot` or `ssd` from the rotational flag (`rot`, not
    `hdd`: RAID LUNs, virtual disks and loop devices report it too), `?` when unknown."""
    hint = device.storage_hint.value
    if hint in _MEDIA:
        return _MEDIA[hint]
    if device.rotational.value is None:
        return "?"
    return "rot" if device.rotational.value else "ssd"


def device_size(device: Device) -> int:
    """The device's size in bytes; DeviceProblem when unknown (nothing can be planned then)."""
    from advisor.errors import DeviceProblem

    size = device.size_bytes.value
    if not size:
        raise DeviceProblem(f"{device.name}: size unknown, cannot plan a filesystem for it")
    return size


def reports_nothing(min_io: int | None, opt_io: int | None, logical: int | None,
                    physical: int | None) -> bool:
    """A plain disk: no optimal I/O size and a minimum I/O size that is just the sector size."""
    return not opt_io and (not min_io or min_io in (logical, physical))


def stripe_hidden_below(device: Device) -> bool:
    """True when the device's stripe is that of an md array below it which the device itself
    (LVM or dm-crypt that does not stack the array's limits) does not report: mkfs.xfs cannot
    see it, so it has to be given with -d su=,sw= (advisor.inspect.geometry.hidden_below)."""
    g = device.stripe
    if g.used_by_mkfs or not g.sunit_bytes or not g.data_disks:
        return False
    return reports_nothing(device.min_io.value, device.opt_io.value,
                           device.logical_sector.value, device.physical_sector.value)


def natural_key(name: str) -> tuple[tuple[int, str | int], ...]:
    """Sort key that orders numbers by value: loop1, loop2, loop10 (not loop1, loop10, loop2)."""
    return tuple((1, int(part)) if part.isdigit() else (0, part)
                 for part in re.split(r"(\d+)", name) if part)
