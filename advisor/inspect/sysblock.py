"""The facts of one /sys/block entry and its partitions, as Device field dicts: what a device is
(its kind, transport, identity), its queue limits, md and dm details and what the storage is
(the storage hint). The tree, stripe and usage need every device and are made later."""

from __future__ import annotations

from typing import Any

from advisor.errors import DeviceProblem
from advisor.inspect import parsers
from advisor.inspect.specs import (
    COMMON,
    DM,
    MD,
    PARTITION,
    QUEUE,
    SYSFS,
    FactInt,
    FactStr,
    Reader,
    Reading,
    Spec,
    held,
    identity_specs,
    make_fact,
    reading,
    wanted,
)
from advisor.models.device import DeviceKind, Fact, MdInfo
from advisor.system.sysroot import Folder, SysRoot

#: RAM disks (major 1) are left out, as lsblk does by default: never a place for a filesystem.
EXCLUDED_MAJORS = frozenset({"1"})


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


def _hint(value: str, source: str, path: str, raw: str | None, note: str) -> Reading[str]:
    return reading(FactStr, value, source, path, raw, note)


def _storage_hint(root: SysRoot, name: str, kind: DeviceKind, link: str | None,
                  transport: str | None, model: str | None, hosts: dict[str, str]
                  ) -> Reading[str]:
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
        driver = _host_driver(root, where, hosts)
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
    return reading(FactStr, None, SYSFS, base, None, "nothing in sysfs says what the storage is")


def _host_driver(root: SysRoot, where: str, hosts: dict[str, str]) -> str:
    """The SCSI host's driver (its proc_name, "" when missing), read once per host a scan."""
    driver = hosts.get(where)
    if driver is None:
        driver = hosts[where] = (root.read(where) or "").strip()
    return driver


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


def kind_of(name: str) -> DeviceKind:
    for prefix, kind in (("dm-", "dm"), ("md", "md"), ("loop", "loop"), ("zram", "zram"),
                         ("sr", "rom")):
        if name.startswith(prefix):
            return kind  # type: ignore[return-value]  # the literal comes from the table above
    return "disk"


def _vanished(root: SysRoot, rel: str, name: str) -> DeviceProblem:
    return DeviceProblem(f"device {name} disappeared while it was being inspected "
                         f"({root.path(rel)} is gone); run the command again")


def read_device(root: SysRoot, name: str, needed: frozenset[str] | None = None,
                hosts: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """The facts of one /sys/block entry and its partitions, as Device fields held until their
    device is made (specs.Held; without the tree, stripe and usage, which need every device).
    Empty when the device is skipped.
    `needed`: the fields to read (fields_needed; None: all); the others keep their defaults.
    `hosts`: the SCSI hosts' drivers read so far in this scan (a SAN host has thousands of disks
    behind a few hosts), filled as they are read."""
    base = f"sys/block/{name}"
    kind = kind_of(name)
    transport: str | None = None
    link: str | None = None
    if kind in ("disk", "rom"):
        link = root.readlink(base)
        transport = parsers.transport_from_link(link) if link else None
    with root.folder(base) as folder:
        found = _read_entry(root, folder, name, kind, transport, link, needed,
                            {} if hosts is None else hosts)
    return [held(f) for f in found]


def _read_entry(root: SysRoot, folder: Folder, name: str, kind: DeviceKind,
                transport: str | None, link: str | None, needed: frozenset[str] | None,
                hosts: dict[str, str]) -> list[dict[str, Any]]:
    base = folder.rel
    rd = Reader(root)
    want_mq = needed is None or not needed.isdisjoint(("hw_queues", "hw_queue_tags"))
    want_md = kind == "md" and (needed is None or "md" in needed)
    mq = folder.listdir("mq") if want_mq else []
    facts = rd.batch(base, _specs(kind, transport, mq, want_md, needed), folder)

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
        fields["hw_queues"] = Reading(FactInt, len(mq), SYSFS, base, "mq", " ".join(mq), None)
    elif want_mq:
        fields["hw_queues"] = Reading(FactInt, None, SYSFS, base, "mq", None,
                                      "no blk-mq hardware queues")
    if kind == "dm":
        _dm_fields(base, facts, fields, rd.notes)
    elif want_md:
        fields["md"] = _md_info(base, *(facts.pop(spec[0]) for spec in MD))
    fields.update(facts)
    if needed is None or "storage_hint" in needed:
        fields["storage_hint"] = _storage_hint(
            root, name, kind, link, transport, fields["model"].value if "model" in fields else None,
            hosts)
    if kind == "disk" and (needed is None or not needed.isdisjoint(("thin", "discard_below"))):
        fields.update(_lbpme(folder))
    partitions = _links(root, folder, fields, needed)
    fields["notes"] = rd.notes
    return [fields, *partitions]


def _lbpme(folder: Folder) -> dict[str, Fact[str]]:
    """`thin`: `lbpme` when a SCSI disk reports logical block provisioning (thin_provisioning
    = 1 under device/scsi_disk/H:C:T:L, whose provisioning_mode says how it is told of freed
    blocks); nothing otherwise. Read with the disk's own facts, from its open folder."""
    for hctl in folder.listdir("device/scsi_disk"):
        at = f"device/scsi_disk/{hctl}"
        raw, = folder.read_many([f"{at}/thin_provisioning"])
        if raw is not None and raw.strip() == "1":
            mode = (folder.read_many([f"{at}/provisioning_mode"])[0] or "").strip()
            return {"thin": make_fact(FactStr, "lbpme", SYSFS,
                                      f"{folder.rel}/{at}/thin_provisioning", raw.strip(),
                                      f"provisioning_mode = {mode}" if mode else None)}
    return {}


def _specs(kind: DeviceKind, transport: str | None, mq: list[str], want_md: bool,
           needed: frozenset[str] | None) -> list[Spec]:
    """What this entry is asked: the common facts, then those of its kind."""
    specs = wanted(COMMON, needed)
    if mq:
        specs.append(("hw_queue_tags", f"mq/{mq[0]}/nr_tags", FactInt, parsers.parse_int, False))
    if kind in ("disk", "rom"):
        specs.extend(wanted(identity_specs(transport), needed))
    elif kind == "dm":
        specs.extend(DM)
    elif want_md:
        specs.extend(MD)
    return specs


def _dm_fields(base: str, facts: dict[str, Reading[Any]], fields: dict[str, Any],
               notes: list[str]) -> None:
    """A dm device's name (which names its /dev/mapper path), uuid and kind, into `fields`."""
    dm_name: str | None = facts.pop("dm_name").value
    dm_uuid: str | None = facts.pop("dm_uuid").value
    if dm_name:
        fields.update(dm_name=dm_name, display_name=dm_name, path=f"/dev/mapper/{dm_name}")
    else:
        notes.append(f"{base}/dm/name: missing")
    fields["dm_uuid"] = dm_uuid
    fields["dm_kind"] = parsers.dm_kind_from_uuid(dm_uuid) if dm_uuid else "other"


def _links(root: SysRoot, folder: Folder, fields: dict[str, Any],
           needed: frozenset[str] | None) -> list[dict[str, Any]]:
    """The device's partitions (read), and its parents, holders and children (named, into
    `fields`): the links the stacking pass follows."""
    name, kind = fields["name"], fields["kind"]
    # Hardware disks are built on nothing, and dm devices have no kernel partitions (kpartx makes
    # more dm devices): skipping those listings saves a syscall per path on a SAN host.
    hardware = kind in ("disk", "rom") and fields["transport"] is not None
    fields["parents"] = [] if hardware else folder.listdir("slaves")
    holders = folder.listdir("holders")
    fields["holders"] = holders
    partitions = [_read_partition(root, folder, entry, fields, needed)
                  for entry in ([] if kind == "dm" else folder.listdir())
                  if entry.startswith(name) and entry != name
                  and folder.exists(f"{entry}/partition")]
    fields["children"] = [p["name"] for p in partitions] + holders
    return partitions


def _md_info(base: str, level: Reading[str], chunk: Reading[int], disks: Reading[int],
             layout: Reading[int]) -> MdInfo:
    where = f"{base}/md"
    data: Fact[int]
    if level.value is None or disks.value is None:
        data = make_fact(FactInt, None, "derived", where, None, "md level or raid_disks unknown")
    else:
        raw = f"level={level.value} raid_disks={disks.value} layout={layout.raw}"
        try:
            value = parsers.md_data_disks(level.value, disks.value, layout.value or 0)
            data = make_fact(FactInt, value, "derived", where, raw, None)
        except ValueError as err:
            data = make_fact(FactInt, None, "derived", where, raw, str(err))
    return MdInfo(level=level.fact(), chunk_bytes=chunk.fact(), raid_disks=disks.fact(),
                  layout=layout.fact(), data_disks=data)


def _read_partition(root: SysRoot, disk: Folder, name: str, disk_fields: dict[str, Any],
                    needed: frozenset[str] | None = None) -> dict[str, Any]:
    rd = Reader(root)
    with disk.folder(name) as folder:
        base = folder.rel
        facts = rd.batch(base, wanted(PARTITION, needed), folder)
        holders = folder.listdir("holders")
    fields: dict[str, Any] = {
        "name": name, "display_name": name, "path": f"/dev/{name}", "kind": "part",
        "maj_min": facts.pop("maj_min").value, "transport": disk_fields.get("transport"),
        **facts,
    }
    # A partition has no queue of its own: its limits are the whole disk's (and it is as
    # removable, and on the same storage, as the disk).
    for attr in (*(q[0] for q in QUEUE), "removable", "storage_hint", "hw_queues",
                 "hw_queue_tags", "queue_depth"):
        if attr in disk_fields:
            fields[attr] = disk_fields[attr]
    fields.update(parents=[disk_fields["name"]], holders=holders, children=list(holders),
                  notes=rd.notes)
    return fields
