"""How a device reads at a glance, in the same words on the command line (`xfs-advisor devices`)
and in the TUI's device list: the stacking tree, the short columns, and the badges for what stands
in the way of formatting. Pure functions over the device model.

The words: MEDIA `RAID`, `MD`, `SSD`, `VIRT`, `CLOUD` from the storage hint, else `ROT`/`SSD` from
the rotational flag (never `HDD`: RAID LUNs, virtual disks and loop devices report rotational too),
CACHE `wback` (a volatile write cache:
flushes are sent) or `wthru` (none, or one that survives power loss), FUA `yes`/`no`, STRIPE
`512KiBx4` (stripe unit x data disks that mkfs.xfs uses; in brackets when it would ignore it),
`?` for what is unknown, `-` for what there is none of.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from advisor.models.device import Device, Fact, Inventory, media_label, natural_key
from advisor.models.obstacles import obstacles
from advisor.models.units import human_size

HEADER = ("NAME", "SIZE", "MEDIA", "CACHE", "FUA", "STRIPE", "STATE")

BadgeKind = Literal["blocks", "warns", "free"]


@dataclass(frozen=True)
class Badge:
    """A short state marker: `blocks` formatting (mounted, swap, held, holds data, read-only,
    host-managed zoned), `warns` (misaligned, host-aware zoned), or `free`."""

    text: str
    kind: BadgeKind


@dataclass(frozen=True)
class TreeRow:
    """One line of the device tree: a device under the chain of devices it is built on."""

    key: str
    """Unique per line (a device with two parents appears twice): the chain of names."""
    device: Device
    prefix: str
    """The prefix that shows the stacking, as lsblk draws it."""


#: Tree branches: lines (the TUI, lsblk) or ASCII (text meant for pipes and any font).
BRANCHES = {"lines": ("├─ ", "└─ ", "│  ", "   "), "ascii": ("|-", "`-", "| ", "  ")}


def tree_rows(inventory: Inventory, style: Literal["lines", "ascii"] = "lines") -> list[TreeRow]:
    """Devices as lsblk shows them: roots first, then what is built on each, depth first; names
    in natural order."""
    middle, last_branch, through, blank = BRANCHES[style]
    by_name = {d.name: d for d in inventory.devices}
    rows: list[TreeRow] = []

    # Depth first with a stack of its own, not recursion: a capture may stack devices deeper
    # than Python's recursion limit (1,000 device-mapper layers ended in RecursionError).
    roots = [d for d in inventory.devices if not any(p in by_name for p in d.parents)]
    stack: list[tuple[Device, str, str, str, frozenset[str]]] = [
        (root, root.name, "", "", frozenset({root.name}))
        for root in sorted(roots, key=lambda d: natural_key(d.display_name), reverse=True)]
    while stack:
        device, chain, lead, branch, seen = stack.pop()
        rows.append(TreeRow(key=chain, device=device, prefix=lead + branch))
        kids = sorted((by_name[c] for c in device.children if c in by_name and c not in seen),
                      key=lambda d: natural_key(d.display_name))
        below = lead + ("" if not branch else (blank if branch == last_branch else through))
        stack.extend((kid, f"{chain}/{kid.name}", below,
                      last_branch if i == len(kids) - 1 else middle, seen | {kid.name})
                     for i, kid in reversed(list(enumerate(kids))))
    return rows


def yes_no(fact: Fact[bool]) -> str:
    return "?" if fact.value is None else ("yes" if fact.value else "no")


def media(device: Device) -> str:
    """What the device is in a word (advisor.models.device.media_label), upper case."""
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
    """What stands in the way of formatting the device (advisor.models.obstacles), or `free`
    when nothing does."""
    found = [Badge(o.badge, "blocks" if o.blocks else "warns") for o in obstacles(device)]
    held = device.usage.held_open
    if held:  # looked at only by `devices` as root: not an obstacle of the device's own facts
        more = f" +{len(held) - 1}" if len(held) > 1 else ""
        found.append(Badge(f"held open by {held[0].describe()}{more}", "blocks"))
    return found or [Badge("free", "free")]


def in_use(device: Device) -> list[str]:
    """The badges that say the device holds something (what choosing it for a reformat would
    destroy); empty when it is free."""
    return [b.text for b in badges(device) if b.kind == "blocks"]


def columns(device: Device) -> tuple[str, str, str, str, str]:
    """SIZE, MEDIA, CACHE, FUA, STRIPE."""
    size = device.size_bytes.value
    return (human_size(size) if size is not None else "?", media(device), cache(device),
            yes_no(device.fua), stripe(device))


def unprobed_reason(device: Device, *, live: bool, as_root: bool) -> str:
    """Why libblkid was not asked about the device: its own error when it had one, a capture
    (read from files), or the lack of root; never "run as root" to root."""
    errors = [n.removeprefix("libblkid: ") for n in device.notes if n.startswith("libblkid: ")]
    if errors:
        return f"libblkid failed: {errors[0]}"
    if not live:
        return "a capture: probe results only where it holds them"
    return "not probed (run as root)" if not as_root else "not probed"
