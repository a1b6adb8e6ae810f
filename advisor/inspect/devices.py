"""Every block device of a host, from sysfs and /proc (live or a captured tree), plus libblkid and
udev on the live system. One code path: the live system is just the sysroot `/`.

Reads go through SysRoot; parsing is in advisor.inspect.parsers; the stripe rules are in
advisor.inspect.geometry. A missing or garbage attribute becomes a null fact with a note.
"""

from __future__ import annotations

import gc
import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from advisor import SCHEMA_VERSION
from advisor.errors import DeviceProblem
from advisor.inspect import geometry, parallel, parsers
from advisor.inspect.probes import Probes, can_probe, load_probes, probe_live
from advisor.models.device import (
    Device,
    DeviceKind,
    Fact,
    Inventory,
    MdInfo,
    OpenBy,
    StripeGeometry,
    Usage,
)
from advisor.models.units import format_size
from advisor.system.sysroot import SysRoot

T = TypeVar("T")

SYSFS = "sysfs"
#: RAM disks (major 1) are left out, as lsblk does by default: never a place for a filesystem.
EXCLUDED_MAJORS = frozenset({"1"})

# Concrete Fact classes, built once: parametrising a generic model on every call is costly.
FactInt = Fact[int]
FactBool = Fact[bool]
FactStr = Fact[str]


_FACT_FIELDS = frozenset(Fact.model_fields)
_new = object.__new__
_set = object.__setattr__


def _fact(cls: type[Fact[T]], value: T | None, source: str, path: str | None, raw: str | None,
          note: str | None) -> Fact[T]:
    """A Fact from values already parsed and typed, built the way model_construct does but with
    one shared fields-set: a SAN host has ~150,000 facts, and a per-instance set (700 bytes) and
    model_construct's Python loop (6 us) would double the memory and the time of a scan.
    tests/inspect/test_parsers.py checks these equal validated Facts."""
    fact = _new(cls)
    _set(fact, "__dict__", {"value": value, "source": source, "path": path, "raw": raw,
                            "note": note})
    _set(fact, "__pydantic_fields_set__", _FACT_FIELDS)
    _set(fact, "__pydantic_extra__", None)
    _set(fact, "__pydantic_private__", None)
    return fact


@dataclass
class _Reader:
    """Reads one attribute into a Fact, collecting notes about garbage values for the device."""

    root: SysRoot
    notes: list[str] = field(default_factory=list)

    def parsed(self, cls: type[Fact[T]], rel: str, raw: str | None, parse: Callable[[str], T],
               optional: bool = False) -> Fact[T]:
        """`optional`: an empty file is as good as a missing one (identity strings)."""
        if raw is None or (optional and not raw):
            return _fact(cls, None, SYSFS, rel, None, "missing")
        try:
            value = parse(raw)
        except ValueError as err:
            self.notes.append(f"{rel}: unparsable ({err})")
            return _fact(cls, None, SYSFS, rel, raw[:200], f"unparsable: {err}")
        return _fact(cls, value, SYSFS, rel, raw, None)

    def batch(self, base: str, specs: list[_Spec]) -> dict[str, Fact[Any]]:
        """Facts for (field, file under base, class, parser, optional) specs, read in one go.
        The common case (present and parsable) is inlined: this loop runs ~120,000 times on a
        SAN host."""
        raws = self.root.read_many(base, [spec[1] for spec in specs])
        out: dict[str, Fact[Any]] = {}
        for (attr, rel, cls, parse, optional), raw in zip(specs, raws, strict=True):
            if raw:
                try:
                    value = parse(raw)
                except ValueError:
                    pass
                else:
                    out[attr] = _fact(cls, value, SYSFS, f"{base}/{rel}", raw, None)
                    continue
            out[attr] = self.parsed(cls, f"{base}/{rel}", raw, parse, optional)
        return out


_Spec = tuple[str, str, type[Fact[Any]], Callable[[str], Any], bool]

#: Queue attributes: Device field, file under queue/, parser. Partitions share their disk's.
_QUEUE: tuple[tuple[str, str, type[Fact[Any]], Callable[[str], Any]], ...] = (
    ("rotational", "rotational", FactBool, parsers.parse_flag),
    ("nr_requests", "nr_requests", FactInt, parsers.parse_int),
    ("write_cache", "write_cache", FactStr, parsers.parse_write_cache),
    ("fua", "fua", FactBool, parsers.parse_flag),
    ("dax", "dax", FactBool, parsers.parse_flag),
    ("zoned", "zoned", FactStr, parsers.parse_zoned),
    ("scheduler", "scheduler", FactStr, parsers.parse_scheduler),
    ("discard_granularity", "discard_granularity", FactInt, parsers.parse_int),
    ("discard_max_bytes", "discard_max_bytes", FactInt, parsers.parse_int),
    ("logical_sector", "logical_block_size", FactInt, parsers.parse_int),
    ("physical_sector", "physical_block_size", FactInt, parsers.parse_int),
    ("min_io", "minimum_io_size", FactInt, parsers.parse_int),
    ("opt_io", "optimal_io_size", FactInt, parsers.parse_int),
)


#: What every /sys/block entry is asked.
_COMMON: list[_Spec] = [
    ("maj_min", "dev", FactStr, parsers.parse_maj_min, False),
    ("size_bytes", "size", FactInt, parsers.parse_sectors, False),
    ("read_only", "ro", FactBool, parsers.parse_flag, False),
    ("removable", "removable", FactBool, parsers.parse_flag, False),
    ("alignment_offset", "alignment_offset", FactInt, parsers.parse_int, False),
    *((attr, f"queue/{fname}", cls, parse, False) for attr, fname, cls, parse in _QUEUE),
]
_PARTITION: list[_Spec] = [
    ("maj_min", "dev", FactStr, parsers.parse_maj_min, False),
    ("size_bytes", "size", FactInt, parsers.parse_sectors, False),
    ("read_only", "ro", FactBool, parsers.parse_flag, False),
    ("alignment_offset", "alignment_offset", FactInt, parsers.parse_int, False),
    ("partition_start", "start", FactInt, parsers.parse_sectors, False),
]
_DM: list[_Spec] = [
    ("dm_name", "dm/name", FactStr, parsers.parse_word, True),
    ("dm_uuid", "dm/uuid", FactStr, parsers.parse_word, True),
]
_MD: list[_Spec] = [
    ("level", "md/level", FactStr, parsers.parse_word, False),
    ("chunk_bytes", "md/chunk_size", FactInt, parsers.parse_int, False),
    ("raid_disks", "md/raid_disks", FactInt, parsers.parse_int, False),
    ("layout", "md/layout", FactInt, parsers.parse_int, False),
]


#: Device fields every scan fills, whatever was asked: who the device is and where it sits in the
#: tree (lsblk reads these for any column set too), and the notes.
IDENTITY = frozenset({"name", "display_name", "path", "maj_min", "kind", "dm_kind", "transport",
                      "dm_name", "dm_uuid", "parents", "children", "holders", "notes"})
#: Read whatever was asked: sizes and device numbers decide which devices are listed at all.
_ALWAYS_READ = frozenset({"maj_min", "size_bytes", "dm_name", "dm_uuid"})
#: Derived fields and the facts they are derived from.
_DERIVED_FROM: dict[str, frozenset[str]] = {
    "stripe": frozenset({"min_io", "opt_io", "physical_sector", "logical_sector", "md"}),
    "storage_hint": frozenset({"model"}),
    "discard_below": frozenset({"discard_max_bytes"}),
}
#: Fields the libblkid/udev probe fills or corrects: without them the probe is not run.
_PROBED = frozenset({"usage", "model", "serial", "wwn"})


def fields_needed(fields: frozenset[str] | None) -> frozenset[str] | None:
    """What a scan that must fill `fields` (Device field names; None: all) has to read."""
    if fields is None:
        return None
    needed = set(fields) | IDENTITY | _ALWAYS_READ
    for name in fields:
        needed |= _DERIVED_FROM.get(name, frozenset())
    return frozenset(needed)


def _wanted(specs: list[_Spec], needed: frozenset[str] | None) -> list[_Spec]:
    """A new list (callers extend it) of the specs whose field is needed."""
    return list(specs) if needed is None else [s for s in specs if s[0] in needed]


def _identity(transport: str | None) -> list[_Spec]:
    """Where the kernel puts model, serial and WWID depends on the driver: asking only there
    saves thousands of failed opens on a SAN host."""
    specs: list[_Spec] = [
        ("queue_depth", "device/queue_depth", FactInt, parsers.parse_int, False),
        ("model", "device/model", FactStr, parsers.parse_word, True),
        ("wwn", "wwid" if transport == "nvme" else "device/wwid", FactStr, parsers.parse_word,
         True),
    ]
    serial_at = {"nvme": "device/serial", "virtio": "serial"}.get(transport or "")
    if serial_at:
        specs.append(("serial", serial_at, FactStr, parsers.parse_word, True))
    return specs


#: SCSI host drivers (sys/class/scsi_host/hostN/proc_name) of RAID controllers, whose disks are
#: usually logical volumes over several drives that report rotational=1 and no geometry.
RAID_HBA_DRIVERS = {
    "megaraid_sas": "Broadcom/LSI MegaRAID",
    "hpsa": "HPE Smart Array",
    "smartpqi": "Microchip/Adaptec Smart Storage (HPE Gen10+)",
    "aacraid": "Adaptec RAID",
    "mpt3sas": "Broadcom SAS HBA (RAID only with IR firmware; may pass disks through)",
}
#: SCSI host drivers of hypervisors' virtual controllers.
VIRTUAL_HBA_DRIVERS = {"virtio_scsi": "virtio-scsi", "hv_storvsc": "Hyper-V storvsc",
                       "vmw_pvscsi": "VMware PVSCSI", "xen-scsifront": "Xen pvscsi"}
#: Model strings of cloud block volumes (as the disks report them).
CLOUD_MODELS = {"Amazon Elastic Block Store": "AWS EBS", "PersistentDisk": "Google Persistent Disk"}


def _hint(value: str, source: str, path: str, raw: str | None, note: str) -> Fact[str]:
    return _fact(FactStr, value, source, path, raw, note)


def _storage_hint(root: SysRoot, name: str, kind: DeviceKind, link: str | None,
                  transport: str | None, model: str | None) -> Fact[str]:
    """What the device's own facts say the storage is, with what says so (null: nothing does;
    in particular rotational=1 alone says nothing)."""
    base = f"sys/block/{name}"
    if kind == "md":
        return _hint("md-raid", SYSFS, f"{base}/md", None, "Linux software RAID")
    if kind == "loop":
        backing = root.read(f"{base}/loop/backing_file")
        return _hint("virtual-disk", SYSFS, f"{base}/loop/backing_file",
                     backing.strip() if backing else None,
                     "a loop device: its storage is whatever holds the backing file, and its "
                     "rotational flag says nothing about that")
    for marker, what in CLOUD_MODELS.items():
        if model and model.startswith(marker):
            return _hint("cloud-volume", SYSFS, f"{base}/device/model", model, what)
    host = _scsi_host(link)
    if host is not None:
        where = f"{host[0]}/scsi_host/{host[1]}/proc_name"
        driver = (root.read(where) or "").strip()
        if driver in RAID_HBA_DRIVERS:
            return _hint("hardware-raid", SYSFS, where, driver,
                         f"behind a RAID controller's driver ({RAID_HBA_DRIVERS[driver]})")
        if driver in VIRTUAL_HBA_DRIVERS:
            return _hint("virtual-disk", SYSFS, where, driver,
                         f"behind a virtual controller ({VIRTUAL_HBA_DRIVERS[driver]})")
    if transport == "virtio" or name.startswith("xvd"):
        return _hint("virtual-disk", SYSFS, base, link,
                     "a virtio disk" if transport == "virtio" else "a Xen virtual disk")
    if transport == "nvme":
        return _hint("ssd", SYSFS, base, link, "an NVMe device")
    return _fact(FactStr, None, SYSFS, base, None, "nothing in sysfs says what the storage is")


def _scsi_host(link: str | None) -> tuple[str, str] | None:
    """(sysfs path of the SCSI host, its name hostN) from a disk's /sys/block link target."""
    if not link:
        return None
    parts = link.split("/")
    for i, part in enumerate(parts):
        if part.startswith("host") and part[4:].isdigit():
            rel = "/".join(p for p in parts[:i + 1] if p not in ("..", ""))
            return (rel if rel.startswith("sys/") else f"sys/{rel}"), part
    return None


def _kind_of(name: str) -> DeviceKind:
    for prefix, kind in (("dm-", "dm"), ("md", "md"), ("loop", "loop"), ("zram", "zram"),
                         ("sr", "rom")):
        if name.startswith(prefix):
            return kind  # type: ignore[return-value]  # the literal comes from the table above
    return "disk"


def _vanished(root: SysRoot, rel: str, name: str) -> DeviceProblem:
    return DeviceProblem(f"device {name} disappeared while it was being inspected "
                         f"({root.path(rel)} is gone); run the command again")


def _read_device(root: SysRoot, name: str, needed: frozenset[str] | None = None
                 ) -> list[dict[str, Any]]:
    """The facts of one /sys/block entry and its partitions, as Device field dicts (without the
    tree, stripe and usage, which need every device). Empty when the device is skipped.
    `needed`: the fields to read (fields_needed; None: all); the others keep their defaults."""
    base = f"sys/block/{name}"
    rd = _Reader(root)
    kind = _kind_of(name)
    transport: str | None = None
    link: str | None = None
    if kind in ("disk", "rom"):
        link = root.readlink(base)
        transport = parsers.transport_from_link(link) if link else None
    want_mq = needed is None or not needed.isdisjoint(("hw_queues", "hw_queue_tags"))
    want_md = kind == "md" and (needed is None or "md" in needed)
    mq = root.listdir(f"{base}/mq") if want_mq else []
    specs = _wanted(_COMMON, needed)
    if mq:
        specs.append(("hw_queue_tags", f"mq/{mq[0]}/nr_tags", FactInt, parsers.parse_int, False))
    if kind in ("disk", "rom"):
        specs.extend(_wanted(_identity(transport), needed))
    elif kind == "dm":
        specs.extend(_DM)
    elif want_md:
        specs.extend(_MD)
    facts = rd.batch(base, specs)

    maj_min, size = facts.pop("maj_min"), facts["size_bytes"]
    if maj_min.value is None and size.value is None and not root.exists(base):
        raise _vanished(root, base, name)
    if maj_min.value is not None and maj_min.value.split(":")[0] in EXCLUDED_MAJORS:
        return []
    if size.value == 0:
        return []  # an unattached loop device, an empty drive: lsblk hides these too

    fields: dict[str, Any] = {
        "name": name, "display_name": name, "path": f"/dev/{name}", "maj_min": maj_min.value,
        "kind": kind, "transport": transport,
    }
    if mq:
        fields["hw_queues"] = _fact(FactInt, len(mq), SYSFS, f"{base}/mq", " ".join(mq), None)
    elif want_mq:
        fields["hw_queues"] = _fact(FactInt, None, SYSFS, f"{base}/mq", None,
                                    "no blk-mq hardware queues")
    if kind == "dm":
        dm_name: str | None = facts.pop("dm_name").value
        dm_uuid: str | None = facts.pop("dm_uuid").value
        if dm_name:
            fields.update(dm_name=dm_name, display_name=dm_name, path=f"/dev/mapper/{dm_name}")
        else:
            rd.notes.append(f"{base}/dm/name: missing")
        fields["dm_uuid"] = dm_uuid
        fields["dm_kind"] = parsers.dm_kind_from_uuid(dm_uuid) if dm_uuid else "other"
    elif want_md:
        fields["md"] = _md_info(base, *(facts.pop(spec[0]) for spec in _MD))
    fields.update(facts)
    if needed is None or "storage_hint" in needed:
        fields["storage_hint"] = _storage_hint(
            root, name, kind, link, transport, fields["model"].value if "model" in fields else None)

    # Hardware disks are built on nothing, and dm devices have no kernel partitions (kpartx makes
    # more dm devices): skipping those listings saves a syscall per path on a SAN host.
    hardware = kind in ("disk", "rom") and transport is not None
    fields["parents"] = [] if hardware else root.listdir(f"{base}/slaves")
    holders = root.listdir(f"{base}/holders")
    fields["holders"] = holders
    partitions = [_read_partition(root, name, entry, fields, needed)
                  for entry in ([] if kind == "dm" else root.listdir(base))
                  if entry.startswith(name) and entry != name
                  and root.exists(f"{base}/{entry}/partition")]
    fields["children"] = [p["name"] for p in partitions] + holders
    fields["notes"] = rd.notes
    return [fields, *partitions]


def _md_info(base: str, level: Fact[str], chunk: Fact[int], disks: Fact[int],
             layout: Fact[int]) -> MdInfo:
    where = f"{base}/md"
    data: Fact[int]
    if level.value is None or disks.value is None:
        data = _fact(FactInt, None, "derived", where, None, "md level or raid_disks unknown")
    else:
        raw = f"level={level.value} raid_disks={disks.value} layout={layout.raw}"
        try:
            value = parsers.md_data_disks(level.value, disks.value, layout.value or 0)
            data = _fact(FactInt, value, "derived", where, raw, None)
        except ValueError as err:
            data = _fact(FactInt, None, "derived", where, raw, str(err))
    return MdInfo(level=level, chunk_bytes=chunk, raid_disks=disks, layout=layout,
                  data_disks=data)


def _read_partition(root: SysRoot, disk: str, name: str, disk_fields: dict[str, Any],
                    needed: frozenset[str] | None = None) -> dict[str, Any]:
    base = f"sys/block/{disk}/{name}"
    rd = _Reader(root)
    facts = rd.batch(base, _wanted(_PARTITION, needed))
    fields: dict[str, Any] = {
        "name": name, "display_name": name, "path": f"/dev/{name}", "kind": "part",
        "maj_min": facts.pop("maj_min").value, "transport": disk_fields.get("transport"),
        **facts,
    }
    # A partition has no queue of its own: its limits are the whole disk's (and it is as
    # removable, and on the same storage, as the disk).
    for attr in (*(q[0] for q in _QUEUE), "removable", "storage_hint", "hw_queues",
                 "hw_queue_tags", "queue_depth"):
        if attr in disk_fields:
            fields[attr] = disk_fields[attr]
    holders = root.listdir(f"{base}/holders")
    fields.update(parents=[disk], holders=holders, children=holders, notes=rd.notes)
    return fields


def _topological(fields: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Parents before children, otherwise in sysfs order."""
    index = {f["name"]: i for i, f in enumerate(fields)}
    waiting = [sum(1 for p in f["parents"] if p in index) for f in fields]
    ready = [i for i, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    order: list[dict[str, Any]] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(fields[i])
        for child in fields[i]["children"]:
            j = index.get(child)
            if j is not None and fields[i]["name"] in fields[j]["parents"]:
                waiting[j] -= 1
                if waiting[j] == 0:
                    heapq.heappush(ready, j)
    if len(order) < len(fields):  # a cycle in a broken tree: keep the rest in sysfs order
        seen = {f["name"] for f in order}
        order.extend(f for f in fields if f["name"] not in seen)
    return order


def _md_origin(dev: dict[str, Any]) -> tuple[tuple[int, int], str] | None:
    md: MdInfo | None = dev.get("md")
    if md is None:
        return None
    found = geometry.md_stripe(md.chunk_bytes.value, md.data_disks.value)
    if found is None:
        return None
    unit = found[0]
    label = (f"{dev['name']} (md {md.level.value}, {md.raid_disks.value} disks, "
             f"chunk {format_size(unit)})")
    return found, label


def _stripe(dev: dict[str, Any], by_name: dict[str, dict[str, Any]]) -> StripeGeometry:
    stripe = geometry.mkfs_detected_stripe(
        min_io=dev["min_io"].value, opt_io=dev["opt_io"].value,
        physical_sector=dev["physical_sector"].value, logical_sector=dev["logical_sector"].value,
        size_bytes=dev["size_bytes"].value, source=f"{dev['name']} (min/opt io)")
    own = _md_origin(dev)
    if own is not None:
        return geometry.with_origin(stripe, own[1]) if stripe.source != "none" else stripe
    # An md array further down (LVM or dm-crypt on md RAID): name it as the origin.
    seen: set[str] = set()
    stack = list(dev["parents"])
    while stack:
        name = stack.pop()
        if name in seen or name not in by_name:
            continue
        seen.add(name)
        below = _md_origin(by_name[name])
        if below is None:
            stack.extend(by_name[name]["parents"])
            continue
        md_geometry, label = below
        if stripe.sunit_bytes == md_geometry[0] and stripe.swidth_bytes == md_geometry[1]:
            return geometry.with_origin(stripe, f"{label}, passed up to {dev['display_name']}")
        if stripe.source == "none" and dev["kind"] != "part":
            return geometry.hidden_below(md_geometry, label, dev["display_name"])
    return stripe


# ---- what sits below (thin provisioning, discards a dm layer drops) ----

def _lbpme(root: SysRoot, name: str) -> Fact[str] | None:
    """`lbpme` when a SCSI disk reports logical block provisioning (thin_provisioning = 1 under
    device/scsi_disk/H:C:T:L, whose provisioning_mode says how it is told of freed blocks)."""
    base = f"sys/block/{name}/device/scsi_disk"
    for hctl in root.listdir(base):
        rel = f"{base}/{hctl}/thin_provisioning"
        raw = root.read(rel)
        if raw is not None and raw.strip() == "1":
            mode = (root.read(f"{base}/{hctl}/provisioning_mode") or "").strip()
            return _fact(FactStr, "lbpme", SYSFS, rel, raw.strip(),
                         f"provisioning_mode = {mode}" if mode else None)
    return None


def _below(root: SysRoot, dev: dict[str, Any], by_name: dict[str, dict[str, Any]]
           ) -> dict[str, Any]:
    """`thin` and `discard_below` of a device; parents are done first (topological order)."""
    out: dict[str, Any] = {}
    parents = [by_name[p] for p in dev["parents"] if p in by_name]
    if dev["kind"] == "disk":
        lbpme = _lbpme(root, dev["name"])
        if lbpme is not None:
            out["thin"] = lbpme
    pool = next((p for p in parents if (p.get("dm_uuid") or "").endswith("-tpool")), None)
    if pool is not None:
        out["thin"] = _fact(FactStr, "dm-thin", "derived", f"sys/block/{pool['name']}/dm/uuid",
                            pool["dm_uuid"], f"built on the thin pool {pool['display_name']}")
    elif "thin" not in out:
        inherited = next((p["thin"] for p in parents
                          if isinstance(p.get("thin"), Fact) and p["thin"].value), None)
        if inherited is not None:
            out["thin"] = inherited
    own = dev["discard_max_bytes"].value if "discard_max_bytes" in dev else None
    if dev["kind"] == "dm" and own == 0:
        # The nearest devices below that take discards (a thin pool's own layers may not).
        below: list[tuple[int, str]] = []
        level, seen = parents, set[str]()
        while level and not below:
            seen.update(p["name"] for p in level)
            below = [(p["discard_max_bytes"].value, p["name"]) for p in level
                     if p["discard_max_bytes"].value]
            level = [by_name[n] for p in level for n in p["parents"]
                     if n in by_name and n not in seen]
        if below:
            value, name = max(below)
            out["discard_below"] = _fact(FactInt, value, SYSFS,
                                         f"sys/block/{name}/queue/discard_max_bytes", str(value),
                                         f"{name} takes discards; {dev['display_name']} does not")
    return out


def _inherited_hint(dev: dict[str, Any], by_name: dict[str, dict[str, Any]]) -> Fact[str]:
    """A dm device (LVM, dm-crypt, multipath) is on the storage of what it is built on, when all
    of that says the same."""
    hints = {by_name[p]["storage_hint"].value for p in dev["parents"] if p in by_name}
    if len(hints) != 1 or None in hints:
        return _fact(FactStr, None, "derived", None, None,
                     "nothing below it says what the storage is")
    first = by_name[dev["parents"][0]]["storage_hint"]
    return _fact(FactStr, first.value, "derived", first.path, first.raw,
                 f"from {', '.join(dev['parents'])}: {first.note}")


_NO_FSTYPE = FactStr()


def _usage(dev: dict[str, Any], table: str, mounts: dict[str, list[parsers.MountEntry]],
           swaps: set[str], probes: Probes, loops: dict[str, list[str]],
           held: dict[str, list[OpenBy]] | None) -> Usage:
    entries = mounts.get(dev["name"], [])
    fstype: Fact[str] = _NO_FSTYPE
    if entries:
        fstype = _fact(FactStr, entries[0].fstype, "mountinfo", table, entries[0].raw, None)
    signatures = probes.signatures.get(dev["name"], [])
    if fstype.value is None:
        for sig in signatures:
            if sig.raw and sig.raw.startswith("TYPE="):
                fstype = sig
                break
    probed = probes.probed and dev["name"] in probes.signatures
    return Usage(
        mountpoints=[e.mountpoint for e in entries], fstype=fstype,
        swap=dev["name"] in swaps, signatures=signatures, probed=probed,
        loops=loops.get(dev["name"], []),
        held_open=None if held is None else held.get(dev["name"], []))


def _held_open(fields: list[dict[str, Any]]) -> dict[str, list[OpenBy]]:
    """Device name -> the processes holding it, or its loop backing file, open or mapped (one
    scan of every process, this one left out)."""
    import os

    from advisor.system.loopdev import loop_status
    from advisor.system.openers import scan

    backing: dict[str, tuple[int, int]] = {}
    for f in fields:
        if f["kind"] == "loop":
            try:
                status = loop_status(f"/dev/{f['name']}")
            except OSError:
                continue
            if status is not None and not status.on_block_device:
                backing[f["name"]] = (status.backing_dev, status.backing_ino)
    found = scan(frozenset(backing.values()), skip=frozenset({os.getpid()}))
    held: dict[str, list[OpenBy]] = {}
    for f in fields:
        major, _, minor = (f["maj_min"] or "").partition(":")
        if not (major.isdigit() and minor.isdigit()):
            continue
        users = [OpenBy(pid=o.pid, command=o.command, mapped=o.mapped)
                 for o in found.devices.get(os.makedev(int(major), int(minor)), [])]
        if f["name"] in backing:
            users += [OpenBy(pid=o.pid, command=o.command, mapped=o.mapped, backing_file=True)
                      for o in found.files.get(backing[f["name"]], [])]
        if users:
            held[f["name"]] = sorted(users, key=lambda u: (u.pid, u.backing_file))
    return held


def _loops_over(root: SysRoot, fields: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Device name -> the loop devices bound over it. On the live system the kernel says what
    each loop device is bound to (LOOP_GET_STATUS64: the backing's device number, whatever path
    it was opened by), falling back to the backing path when the device cannot be opened (not
    root); a capture has only that path (`/dev/NAME`)."""
    from advisor.system.loopdev import dev_name, loop_status

    by_devno = {f["maj_min"]: f["name"] for f in fields if f["maj_min"]}
    by_path = {f["path"]: f["name"] for f in fields}
    by_path.update({f"/dev/{f['name']}": f["name"] for f in fields})
    found: dict[str, list[str]] = {}
    for f in fields:
        if f["kind"] != "loop":
            continue
        under: str | None = None
        if root.live:
            try:
                status = loop_status(f"/dev/{f['name']}")
            except OSError:
                status = None
            if status is not None and status.on_block_device:
                under = by_devno.get(dev_name(status.backing_rdev))
        if under is None:
            backing = (root.read(f"sys/block/{f['name']}/loop/backing_file") or "").strip()
            under = by_path.get(backing)
        if under is not None and under != f["name"]:
            found.setdefault(under, []).append(f["name"])
    return found


def _no_usage() -> Usage:
    return Usage(mountpoints=[], fstype=_NO_FSTYPE, signatures=[])


def _mount_table(root: SysRoot) -> tuple[str, list[parsers.MountEntry]]:
    """The mount table and which file it came from: captures may hold either."""
    text = root.read("proc/self/mountinfo")
    if text is not None:
        return "proc/self/mountinfo", parsers.parse_mountinfo(text)
    text = root.read("proc/mounts")
    if text is not None:
        return "proc/mounts", parsers.parse_proc_mounts(text)
    return "none", []


def _by_device(fields: list[dict[str, Any]], entries: list[parsers.MountEntry]
               ) -> dict[str, list[parsers.MountEntry]]:
    by_devno = {f["maj_min"]: f["name"] for f in fields if f["maj_min"]}
    by_path = {f["path"]: f["name"] for f in fields}
    by_path.update({f"/dev/{f['name']}": f["name"] for f in fields})
    out: dict[str, list[parsers.MountEntry]] = {}
    for e in entries:
        name = by_devno.get(e.maj_min or "") or by_path.get(e.source)
        if name is not None:
            out.setdefault(name, []).append(e)
    return out


def inspect_devices(root: SysRoot, *, probe: bool = True,
                    fields: frozenset[str] | None = None, users: bool = False) -> Inventory:
    """Every block device under `root` (partitions included), parents before children.

    With `probe`, libblkid and udev are asked too: on the live system when running as root, or
    from the probe file of a capture. `fields`: only these Device fields are filled (and only
    what they need is read; the tree and IDENTITY always are), the rest keep their defaults
    (`devices --json --fields`, lsblk's -o). Raises DeviceProblem when a device vanishes
    mid-scan. `users`: also which processes hold each device open (usage.held_open: one scan of
    /proc, on the live system as root)."""
    return inspect_with_probes(root, probe=probe, fields=fields, users=users)[0]


def inspect_with_probes(root: SysRoot, *, probe: bool = True,
                        fields: frozenset[str] | None = None,
                        users: bool = False) -> tuple[Inventory, Probes]:
    """inspect_devices, also returning the live-only probe results it used (for capture)."""
    used: list[Probes] = []
    devices = list(iter_devices(root, probe=probe, fields=fields, probes_used=used, users=users))
    inventory = Inventory(schema_version=SCHEMA_VERSION, sysroot=str(root.root),
                                          live=root.live, devices=devices)
    return inventory, used[0]


def iter_devices(root: SysRoot, *, probe: bool = True, fields: frozenset[str] | None = None,
                 probes_used: list[Probes] | None = None, users: bool = False
                 ) -> Iterator[Device]:
    """inspect_devices' devices one at a time, in the same order, for a caller that writes each
    and lets it go (`devices --json` of a host with 100,000 devices: keeping them all and their
    JSON as well would double the memory). The facts read are kept until the last device is
    made (a device's stripe and storage hint come from the devices below it). `probes_used`
    receives the probe results, before the first device."""
    # A scan allocates hundreds of thousands of small objects and frees none of them: the cyclic
    # collector would walk them again and again for nothing (a quarter of a SAN host's scan).
    paused = gc.isenabled()
    gc.disable()
    try:
        yield from _inspect(root, probe=probe, needed=fields_needed(fields),
                            probes_used=probes_used if probes_used is not None else [],
                            users=users)
    finally:
        if paused:
            gc.enable()


def _inspect(root: SysRoot, *, probe: bool, needed: frozenset[str] | None,
             probes_used: list[Probes], entries: list[str] | None = None,
             users: bool = False) -> Iterator[Device]:
    """`entries`: the /sys/block entries to read (None: every one); `users`: look for processes
    holding each device open (as root on the live system)."""
    def want(name: str) -> bool:
        return needed is None or name in needed

    fields = parallel.read_all(root, root.listdir("sys/block") if entries is None else entries,
                               lambda name: _read_device(root, name, needed),
                               (FactInt, FactBool, FactStr), _fact)
    by_name = {f["name"]: f for f in fields}
    for f in fields:  # a holder/slave outside the inventory (excluded or empty) is not shown
        f["parents"] = [p for p in f["parents"] if p in by_name]
        f["children"] = [c for c in f["children"] if c in by_name]
        f["holders"] = [h for h in f["holders"] if h in by_name]

    probes = Probes()
    if probe and (needed is None or not needed.isdisjoint(_PROBED)):
        # The one place that decides: libblkid and udev on the live system as root, a capture's
        # own probe file for a captured tree, nothing on the live system otherwise.
        if can_probe(root):
            probes = probe_live([f["name"] for f in fields])
        elif not root.live:
            probes = load_probes(root)
    table: str = "none"
    mounts: dict[str, list[parsers.MountEntry]] = {}
    swaps: set[str] = set()
    loops: dict[str, list[str]] = {}
    held: dict[str, list[OpenBy]] | None = None
    if want("usage"):
        loops = _loops_over(root, fields)
        if users and can_probe(root):
            held = _held_open(fields)
        table, table_entries = _mount_table(root)
        mounts = _by_device(fields, table_entries)
        swap_paths = set(parsers.parse_swaps(root.read("proc/swaps") or ""))
        swaps = {f["name"] for f in fields if f["path"] in swap_paths
                 or f"/dev/{f['name']}" in swap_paths}

    probes_used.append(probes)
    for f in _topological(fields):
        if want("stripe"):
            f["stripe"] = _stripe(f, by_name)
        if f["kind"] == "dm" and want("storage_hint"):
            f["storage_hint"] = _inherited_hint(f, by_name)
        if want("thin") or want("discard_below"):
            f.update(_below(root, f, by_name))
        # Given even when not asked: a default Usage is deep-copied per device (a third of the
        # time of a `--fields` scan of a SAN host).
        f["usage"] = (_usage(f, table, mounts, swaps, probes, loops, held) if want("usage")
                      else _no_usage())
        error = probes.errors.get(f["name"])
        if error:
            f["notes"] = [*f["notes"], f"libblkid: {error}"]
        udev = probes.udev.get(f["name"], {})
        for attr, key in (("model", "ID_MODEL"), ("serial", "ID_SERIAL_SHORT"), ("wwn", "ID_WWN")):
            if key in udev and want(attr):
                f[attr] = FactStr(value=udev[key], source="udev",
                                                  path=f"udev:{key}", raw=udev[key], note=None)
        yield Device(**f)


def inspect_one(root: SysRoot, name: str) -> Device | None:
    """The device `name` (as find_device takes it), equal to what inspect_devices would say of
    it, reading only what its facts depend on: the /sys/block entries it is built on
    (transitively), those built on it (whether they are listed), the loop devices (which of
    them is bound over it), and every dm device's name (which one `name` may be). A proposal on
    a host with 100,000 devices then reads a handful. None when `name` does not name exactly one
    listed device this way: the caller scans everything (and gets the same answer, or the
    same error)."""
    entries = root.listdir("sys/block")
    present = set(entries)
    key = name.removeprefix("/dev/mapper/").removeprefix("/dev/")
    found: set[tuple[str, str]] = set()  # (its /sys/block entry, its name)
    if key in present:
        found.add((key, key))
    dms = [e for e in entries if e.startswith("dm-")]
    for entry, dm_name in zip(dms, root.read_many("sys/block", [f"{e}/dm/name" for e in dms]),
                              strict=True):
        if dm_name == key:
            found.add((entry, entry))
    for entry in entries:  # a partition: sys/block/DISK/NAME
        if key.startswith(entry) and key != entry and "/" not in key \
                and root.exists(f"sys/block/{entry}/{key}/partition"):
            found.add((entry, key))
    if len(found) != 1:
        return None
    (unit, kernel_name), = found
    wanted = {unit}
    todo = [unit]
    while todo:  # what it is built on, and what that is built on
        entry = todo.pop()
        for slave in root.listdir(f"sys/block/{entry}/slaves"):
            below = _entry_of(root, entry, slave, present)
            if below is not None and below not in wanted:
                wanted.add(below)
                todo.append(below)
    here = f"sys/block/{unit}" if unit == kernel_name else f"sys/block/{unit}/{kernel_name}"
    wanted.update(h for h in root.listdir(f"{here}/holders") if h in present)
    wanted.update(e for e in entries if _kind_of(e) == "loop")
    subset = [e for e in entries if e in wanted]
    paused = gc.isenabled()
    gc.disable()
    try:
        for dev in _inspect(root, probe=True, needed=None, probes_used=[], entries=subset):
            if dev.name == kernel_name:
                return dev
    finally:
        if paused:
            gc.enable()
    return None  # not listed (empty, or a RAM disk): the full scan says so


def _entry_of(root: SysRoot, holder: str, slave: str, present: set[str]) -> str | None:
    """The /sys/block entry of `slave` (a name under sys/block/HOLDER/slaves): itself, or the
    disk of a partition, as the slave link's target says (.../block/DISK/PART)."""
    if slave in present:
        return slave
    link = root.readlink(f"sys/block/{holder}/slaves/{slave}") or ""
    parts = link.rstrip("/").split("/")
    if len(parts) >= 2 and parts[-1] == slave and parts[-2] in present:
        return parts[-2]
    return next((e for e in sorted(present, key=len, reverse=True)
                 if slave.startswith(e) and slave != e), None)


def find_device(inv: Inventory, name: str) -> Device:
    """The device called `name` (kernel name, dm name, /dev path); DeviceProblem listing the known
    ones otherwise."""
    dev = inv.get(name)
    if dev is None:
        known = ", ".join(d.display_name for d in inv.devices) or "none"
        raise DeviceProblem(f"unknown device '{name}' (known: {known})")
    return dev

