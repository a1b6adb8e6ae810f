"""How devices read at a glance: the stacking tree as rows, short columns, badges, and every fact
with its provenance for the details pane. Pure functions over the device model (no widgets), so
they are cheap to test and the screens stay thin."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.models.device import Device, Fact, Inventory, media_label
from advisor.models.units import human_size

#: Facts measured in bytes: shown rounded, with the exact byte count beside them.
BYTE_FACTS = frozenset({
    "size_bytes", "discard_granularity", "discard_max_bytes", "logical_sector", "physical_sector",
    "min_io", "opt_io", "alignment_offset", "partition_start", "chunk_bytes",
    "sunit_bytes", "swidth_bytes",
})


@dataclass(frozen=True)
class Badge:
    """A short problem or state marker, with the style it is drawn in."""

    text: str
    style: str


@dataclass(frozen=True)
class TreeRow:
    """One line of the device tree: a device under the chain of devices it is built on."""

    key: str
    """Unique per line (a device with two parents appears twice): the chain of names."""
    device: Device
    prefix: str
    """Box-drawing prefix that shows the stacking, as lsblk draws it."""


def tree_rows(inventory: Inventory) -> list[TreeRow]:
    """Devices as lsblk shows them: roots first, then what is built on each, depth first."""
    by_name = {d.name: d for d in inventory.devices}
    rows: list[TreeRow] = []

    def walk(device: Device, chain: str, lead: str, branch: str, seen: frozenset[str]) -> None:
        rows.append(TreeRow(key=chain, device=device, prefix=lead + branch))
        kids = [by_name[c] for c in device.children if c in by_name and c not in seen]
        for i, kid in enumerate(kids):
            last = i == len(kids) - 1
            below = lead + ("" if not branch else ("   " if branch.startswith("└") else "│  "))
            walk(kid, f"{chain}/{kid.name}", below, "└─ " if last else "├─ ", seen | {kid.name})

    roots = [d for d in inventory.devices if not any(p in by_name for p in d.parents)]
    for root in roots:
        walk(root, root.name, "", "", frozenset({root.name}))
    return rows


def _yes_no(fact: Fact[bool]) -> str:
    if fact.value is None:
        return "?"
    return "yes" if fact.value else "no"


def media(device: Device) -> str:
    """RAID, VIRT, SSD, ROT... from the storage hint or the rotational flag (never HDD: a
    rotational flag is no proof of a spinning disk)."""
    return media_label(device).upper()


def cache(device: Device) -> str:
    """`wback` (volatile cache, flushes sent), `wthru`, or `?`."""
    value = device.write_cache.value
    if value is None:
        return "?"
    return "wback" if value.strip() == "write back" else "wthru"


def stripe(device: Device) -> str:
    """Stripe unit x data disks that mkfs.xfs will use or could use, `-` when none."""
    geometry = device.stripe
    if geometry.sunit_bytes is None:
        return "-"
    disks = geometry.data_disks if geometry.data_disks is not None else "?"
    text = f"{human_size(geometry.sunit_bytes).replace(' ', '')}x{disks}"
    return text if geometry.used_by_mkfs else f"({text})"


def badges(device: Device) -> list[Badge]:
    """What stands in the way of formatting the device, or `free` when nothing does."""
    found: list[Badge] = []
    if device.usage.mountpoints:
        found.append(Badge(f"mounted {device.usage.mountpoints[0]}", "bold red"))
    if device.usage.swap:
        found.append(Badge("swap", "bold red"))
    if device.holders:
        found.append(Badge("held by " + ",".join(device.holders), "yellow"))
    elif device.children and device.kind != "part":
        found.append(Badge("has " + ",".join(device.children), "yellow"))
    signature = device.usage.fstype.value or next(
        (s.value for s in device.usage.signatures if s.value), None)
    if signature and not device.usage.mountpoints:
        found.append(Badge(f"holds {signature}", "yellow"))
    offset = device.alignment_offset.value
    if offset:
        found.append(Badge(f"misaligned +{offset}B", "bold magenta"))
    if device.read_only.value:
        found.append(Badge("read-only", "red"))
    if device.zoned.value and device.zoned.value != "none":
        found.append(Badge(f"zoned {device.zoned.value}", "magenta"))
    if not found:
        found.append(Badge("free", "green"))
    return found


def columns(device: Device) -> tuple[str, str, str, str, str]:
    """SIZE, MEDIA, CACHE, FUA, STRIPE for the device list."""
    size = device.size_bytes.value
    return (
        human_size(size) if size is not None else "?",
        media(device),
        cache(device),
        _yes_no(device.fua),
        stripe(device),
    )


@dataclass(frozen=True)
class FactLine:
    """One fact for the details pane: its name, value, and where the value came from."""

    name: str
    value: str
    source: str
    origin: str
    """The sysfs path or probe, the raw text when it differs from the value, and any note."""
    help: str


def _show(name: str, value: Any) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and name in BYTE_FACTS:
        return f"{human_size(value)} ({value})" if value >= 1024 else f"{value} B"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "none"
    return str(value)


def _fact_line(name: str, fact: Fact[Any], help_text: str) -> FactLine:
    parts = [fact.path or ""]
    if fact.raw is not None and fact.raw != str(fact.value):
        parts.append(f"raw {fact.raw!r}")
    if fact.note:
        parts.append(fact.note)
    origin = "; ".join(p for p in parts if p)
    shown = _show(name.rsplit(".", 1)[-1], fact.value)
    return FactLine(name, shown, fact.source, origin, help_text)


def fact_lines(device: Device) -> list[FactLine]:
    """Every fact of the device, in model order, facts with their provenance."""
    lines: list[FactLine] = []
    for name, field in Device.model_fields.items():
        value = getattr(device, name)
        help_text = field.description or ""
        if isinstance(value, Fact):
            lines.append(_fact_line(name, value, help_text))
        elif name == "md" and value is not None:
            for sub, info in type(value).model_fields.items():
                lines.append(_fact_line(f"md.{sub}", getattr(value, sub), info.description or ""))
        elif name == "stripe":
            for sub, info in type(value).model_fields.items():
                shown = _show(sub, getattr(value, sub))
                help_text = info.description or ""
                lines.append(FactLine(f"stripe.{sub}", shown, "derived", "", help_text))
        elif name == "usage":
            usage = device.usage
            lines.append(FactLine("usage.mountpoints", _show("", usage.mountpoints), "mountinfo",
                                  "", "Where it is mounted"))
            lines.append(_fact_line("usage.fstype", usage.fstype, "Filesystem type"))
            lines.append(FactLine("usage.swap", _show("", usage.swap), "swaps", "",
                                  "Listed in /proc/swaps"))
            for i, sig in enumerate(usage.signatures):
                lines.append(_fact_line(f"usage.signature[{i}]", sig, "A signature libblkid found"))
            probed = "probed" if usage.probed else "not probed (capture or not root)"
            lines.append(FactLine("usage.probed", _show("", usage.probed), "blkid", probed,
                                  "Whether libblkid was asked"))
        elif name == "notes":
            for note in device.notes:
                lines.append(FactLine("note", note, "inspect", "", "Something odd seen"))
        elif value is not None and value != []:
            lines.append(FactLine(name, _show(name, value), "sysfs", "", help_text))
    return lines
