"""`xfs-advisor devices [DEVICE]`: the block devices, as a tree of stacked devices (like lsblk) or,
with --json, the full inventory with every fact's provenance."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from advisor.models.device import Device, Inventory, media_label


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "devices",
        parents=[common],
        help="list block devices and what mkfs.xfs would detect on them",
        description="List block devices as a tree (stacked devices under what they are built on) "
        "with size, rotational, write cache, FUA, the stripe mkfs.xfs would detect, and use. "
        "With --json: every fact with its source.",
    )
    p.add_argument("device", nargs="?", metavar="DEVICE",
                   help="show only this device (kernel name, dm name or /dev path) and what is "
                   "built on it, with all its facts")
    p.add_argument("--no-probe", action="store_true",
                   help="do not ask libblkid and udev (sysfs and /proc only)")


def run(args: argparse.Namespace) -> int:
    from advisor.inspect.devices import find_device, inspect_devices
    from advisor.system.sysroot import SysRoot

    root = SysRoot.open(getattr(args, "sysroot", None))
    inv = inspect_devices(root, probe=not args.no_probe)
    if args.device:
        dev = find_device(inv, args.device)
        inv = subtree(inv, dev)
    if args.json:
        # Bytes straight from the serializer: a SAN host's JSON is tens of MB, not worth a str copy.
        sys.stdout.flush()
        sys.stdout.buffer.write(inv.__pydantic_serializer__.to_json(inv, indent=2) + b"\n")
        sys.stdout.buffer.flush()
        return 0
    sys.stdout.write(render_tree(inv))
    if args.device:
        sys.stdout.write("\n" + render_details(inv.devices[0]))
    return 0


def subtree(inv: Inventory, top: Device) -> Inventory:
    """The inventory restricted to `top` and everything built on it."""
    keep = {d.name for d in inv.stacked(top, "children")} - {top.name}
    devices = [top, *(d for d in inv.devices if d.name in keep)]
    return inv.model_copy(update={"devices": devices})


def _size(n: int | None) -> str:
    from advisor.models.units import human_size

    return "?" if n is None else human_size(n)


def _flag(value: bool | None, yes: str, no: str) -> str:
    return "?" if value is None else (yes if value else no)


def stripe_cell(dev: Device) -> str:
    from advisor.models.units import format_size

    s = dev.stripe
    if s.sunit_bytes is None and s.swidth_bytes is None:
        return "-"
    if s.used_by_mkfs and s.sunit_bytes and s.data_disks:
        return f"{format_size(s.sunit_bytes)}x{s.data_disks}"
    return "ignored"


def usage_cell(dev: Device, by_name: dict[str, Device]) -> str:
    parts: list[str] = []
    u = dev.usage
    if u.swap:
        parts.append("[SWAP]")
    parts.extend(u.mountpoints)
    if u.fstype.value and not u.swap:
        parts.append(f"({u.fstype.value})" if u.mountpoints else u.fstype.value)
    for sig in u.signatures:
        if sig.value and sig.value != u.fstype.value:
            parts.append(sig.value)
    if dev.holders:
        parts.append("held by " + ",".join(by_name[h].display_name if h in by_name else h
                                           for h in dev.holders))
    return " ".join(parts) or "-"


HEADER = ("NAME", "SIZE", "MEDIA", "CACHE", "FUA", "STRIPE", "IN USE")


def render_tree(inv: Inventory) -> str:
    """lsblk-like: roots in inventory order, each child indented under every parent it has."""
    by_name = {d.name: d for d in inv.devices}
    names = set(by_name)
    rows: list[tuple[str, ...]] = []

    def walk(dev: Device, prefix: str, last: bool, depth: int) -> None:
        branch = "" if depth == 0 else prefix + ("`-" if last else "|-")
        rows.append((
            branch + dev.display_name,
            _size(dev.size_bytes.value),
            media_label(dev),
            {"write back": "volatile", "write through": "wt"}.get(dev.write_cache.value or "", "?"),
            _flag(dev.fua.value, "fua", "-"),
            stripe_cell(dev),
            usage_cell(dev, by_name),
        ))
        kids = [by_name[c] for c in dev.children if c in by_name]
        child_prefix = "" if depth == 0 else prefix + ("  " if last else "| ")
        for i, kid in enumerate(kids):
            walk(kid, child_prefix, i == len(kids) - 1, depth + 1)

    for dev in inv.devices:
        if not any(p in names for p in dev.parents):
            walk(dev, "", True, 0)
    if not rows:
        return "no block devices found\n"
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in [HEADER, *rows]]
    return "\n".join(lines) + "\n"


def render_details(dev: Device) -> str:
    """Every fact of one device: value, source and note."""
    lines = [f"{dev.display_name} ({dev.kind}, {dev.path}, {dev.maj_min or '?:?'})"]
    for name in type(dev).model_fields:
        value = getattr(dev, name)
        if hasattr(value, "known") and hasattr(value, "source"):
            if value.value is None and value.source == "unknown":
                continue  # not asked for this kind of device (a disk's partition start)
            shown = "null" if value.value is None else str(value.value)
            extra = f" ({value.note})" if value.note else ""
            lines.append(f"  {name:<20} {shown:<16} {value.source}:{value.path or ''}{extra}")
    s = dev.stripe
    if s.source == "none":
        lines.append("  stripe               none reported (no -d su/sw from the device)")
    else:
        lines.append(f"  stripe               {stripe_cell(dev)} from {s.source}"
                     + (f": {s.ignored_reason}" if s.ignored_reason else ""))
    if dev.md is not None:
        md = dev.md
        lines.append(f"  md                   {md.level.value} disks={md.raid_disks.value} "
                     f"data={md.data_disks.value} chunk={md.chunk_bytes.value} "
                     f"layout={md.layout.value}")
    lines.extend(f"  note: {n}" for n in dev.notes)
    return "\n".join(lines) + "\n"
