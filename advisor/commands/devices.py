"""`xfs-advisor devices [DEVICE]`: the block devices, as a tree of stacked devices (like lsblk) or,
with --json, the full inventory with every fact's provenance."""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
from typing import TYPE_CHECKING, Any, BinaryIO

from advisor.models.device import Device, Inventory

if TYPE_CHECKING:
    from advisor.system.sysroot import SysRoot


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "devices",
        parents=[common],
        help="list block devices and what mkfs.xfs would detect on them",
        description="List block devices as a tree (stacked devices under what they are built on) "
        "with size, MEDIA (HDD/SSD), CACHE (wback: a volatile write cache, flushes sent; wthru: "
        "none or a safe one), FUA, the STRIPE mkfs.xfs would use (in brackets: it would ignore "
        "it), and STATE (free, or what stands in the way: mounted, swap, held by, has partitions, "
        "holds data, read-only, zoned, misaligned; as root, held open by a process, named by "
        "pid and command). "
        "With --json: every fact with its source.",
    )
    p.add_argument("device", nargs="?", metavar="DEVICE",
                   help="show only this device (kernel name, dm name or /dev path) and what is "
                   "built on it, with all its facts")
    p.add_argument("--no-probe", action="store_true",
                   help="do not ask libblkid and udev (sysfs and /proc only)")
    p.add_argument("--fields", metavar="LIST",
                   help="with --json: only these device fields (comma-separated JSON keys, e.g. "
                   "size_bytes,rotational,min_io,opt_io), each still with its source; only what "
                   "they need is read, as lsblk -o does. Identity and tree fields (name, path, "
                   "kind, maj_min, parents, children, holders, notes...) are always given. "
                   "`--fields help` lists the names")


def run(args: argparse.Namespace) -> int:
    from advisor.console import out
    from advisor.inspect.devices import find_device
    from advisor.render.inert import json_text
    from advisor.session import Session

    fields = parse_fields(args.fields, json=args.json)
    if fields == frozenset({"help"}):
        sys.stdout.write("\n".join(selectable_fields()) + "\n")
        return 0
    session = Session(getattr(args, "sysroot", None))
    if args.json and not args.device:
        write_json(sys.stdout.buffer, session.root, session.live, fields,
                   probe=not args.no_probe)
        return 0
    inv = session.inventory(probe=not args.no_probe, fields=fields, users=True)
    if args.device:
        dev = find_device(inv, args.device)
        inv = subtree(inv, dev)
    if args.json:
        include: dict[str, Any] | None = None
        if fields is not None:
            from advisor.inspect.specs import IDENTITY
            include = {"schema_version": True, "sysroot": True, "live": True,
                       "devices": {"__all__": set(IDENTITY | fields)}}
        # Bytes straight from the serializer: a SAN host's JSON is tens of MB, not worth a str copy.
        sys.stdout.flush()
        data = inv.__pydantic_serializer__.to_json(inv, indent=2, include=include)
        if not data.isascii():  # a model or label from the device: hidden characters escaped
            data = json_text(data.decode()).encode()
        sys.stdout.buffer.write(data + b"\n")
        sys.stdout.buffer.flush()
        return 0
    out(render_tree(inv))
    if args.device:
        out("\n" + render_details(inv.devices[0]))
    return 0


#: How pydantic's indented JSON ends an inventory with no devices; the devices go in between.
_NO_DEVICES = b"[]\n}"


def write_json(out: BinaryIO, root: SysRoot, live: bool, fields: frozenset[str] | None, *,
               probe: bool = True) -> None:
    """The inventory's JSON (`devices --json`), byte for byte what Inventory's serializer
    writes, devices written a piece at a time as the scan makes them (iter_rendered): on a host
    with 100,000 devices the Device objects and a 500 MB JSON document are never held at once.
    `fields`: only these Device fields and the identity ones (`--fields`). Nothing is written
    before the scan has read the devices, so a device vanishing mid-scan is an error and no half
    document."""
    from advisor import SCHEMA_VERSION
    from advisor.inspect.devices import iter_rendered
    from advisor.inspect.specs import IDENTITY

    include: dict[str, Any] | None = None
    device_include: set[str] | None = None
    if fields is not None:
        device_include = set(IDENTITY | fields)
        include = {"schema_version": True, "sysroot": True, "live": True,
                   "devices": {"__all__": device_include}}
    empty = Inventory(schema_version=SCHEMA_VERSION, sysroot=str(root.root), live=live,
                      devices=[])
    head = empty.__pydantic_serializer__.to_json(empty, indent=2, include=include)
    if not head.endswith(_NO_DEVICES):
        raise RuntimeError("the inventory's JSON does not end with its device list")
    pieces = iter_rendered(root, functools.partial(_device_json, include=device_include),
                           probe=probe, fields=fields, users=True, separator=_BETWEEN)
    # Closed however this ends (a closed pipe, Ctrl-C): the scan's child is then killed at once.
    with contextlib.closing(pieces):
        first = next(pieces, None)
        if first is None:
            out.write(head + b"\n")
            out.flush()
            return
        sys.stdout.flush()
        out.write(head[:-len(_NO_DEVICES)] + b"[\n" + first)
        for piece in pieces:
            out.write(_BETWEEN)
            out.write(piece)  # not joined first: a copy of each piece for nothing
    out.write(b"\n  ]\n}\n")
    out.flush()


#: Between two devices of the document.
_BETWEEN = b",\n"


def _device_json(device: Device, include: set[str] | None) -> bytes:
    """The device's own JSON, indented as it is inside the inventory's (two levels down)."""
    from advisor.render.inert import json_text

    # warnings=False: the same bytes in 0.7x the time (37 us instead of 51 us for a SAN
    # device). A scanned Device gives the serializer nothing to warn of (its values are
    # those validation gives, tests/inspect/test_fixture_hosts.py).
    text = device.__pydantic_serializer__.to_json(device, indent=2, include=include,
                                                  warnings=False)
    if not text.isascii():  # a model or label from the device: hidden characters escaped
        text = json_text(text.decode()).encode()
    # JSON strings hold no raw newline: every newline is the serializer's own.
    return b"    " + text.replace(b"\n", b"\n    ")


def selectable_fields() -> list[str]:
    """Device fields --fields can ask for: everything but the identity and tree fields, which
    every device always has."""
    from advisor.inspect.specs import IDENTITY

    return [name for name in Device.model_fields if name not in IDENTITY]


def parse_fields(text: str | None, *, json: bool) -> frozenset[str] | None:
    """--fields LIST as a set of Device field names (None: all); BadInput (exit 2) for a name
    that is not one, or without --json (the tree view has its own columns)."""
    from advisor.errors import BadInput

    if text is None:
        return None
    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["help"]:
        return frozenset(names)
    if not json:
        raise BadInput("--fields selects what --json writes: add --json")
    known = selectable_fields()
    unknown = [n for n in names if n not in known and n not in Device.model_fields]
    if unknown or not names:
        raise BadInput(f"--fields: unknown field {', '.join(unknown) or '(none given)'} "
                       f"(known: {', '.join(known)})")
    return frozenset(names)


def subtree(inv: Inventory, top: Device) -> Inventory:
    """The inventory restricted to `top` and everything built on it."""
    keep = {d.name for d in inv.stacked(top, "children")} - {top.name}
    devices = [top, *(d for d in inv.devices if d.name in keep)]
    return inv.model_copy(update={"devices": devices})


def render_tree(inv: Inventory) -> str:
    """lsblk-like, in the TUI's words (advisor.render.devices): roots in natural order, each child
    under every parent it has, ASCII branches for any terminal and pipe."""
    from advisor.render.devices import HEADER, badges, columns, tree_rows
    from advisor.render.inert import terminal

    rows = [tuple(terminal(cell) for cell in (
                row.prefix + row.device.display_name, *columns(row.device),
                " ".join(b.text for b in badges(row.device))))
            for row in tree_rows(inv, style="ascii")]
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
        from advisor.render.devices import stripe

        lines.append(f"  stripe               {stripe(dev)} from {s.source}"
                     + (f": {s.ignored_reason}" if s.ignored_reason else ""))
    if dev.md is not None:
        md = dev.md
        lines.append(f"  md                   {md.level.value} disks={md.raid_disks.value} "
                     f"data={md.data_disks.value} chunk={md.chunk_bytes.value} "
                     f"layout={md.layout.value}")
    from advisor.models.obstacles import obstacles

    lines.extend(f"  {'in the way' if o.blocks else 'warning':<20} {dev.display_name} {o.says}"
                 for o in obstacles(dev))
    lines.extend(f"  {'in the way':<20} {dev.display_name} is held open by {o.describe()}"
                 for o in dev.usage.held_open or [])
    lines.extend(f"  note: {n}" for n in dev.notes)
    from advisor.render.inert import terminal

    return "\n".join(terminal(line) for line in lines) + "\n"
