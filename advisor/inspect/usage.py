"""What each device is used for: mounts (mountinfo or /proc/mounts), swap, loop devices bound
over it, the libblkid signatures on it and, as root on the live system, the processes holding it
open."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from advisor.inspect import parsers
from advisor.inspect.probes import Probes, can_probe
from advisor.inspect.specs import FactStr, make_fact
from advisor.models.device import Fact, OpenBy, Usage
from advisor.system.sysroot import SysRoot

_NO_FSTYPE = FactStr()


class Fields(Protocol):
    """A device's fields as the tables read them (name, kind, maj_min, path): its dict, or a
    stacking.Node of the graph a scan keeps (the tables walk them more than once)."""

    def __getitem__(self, key: str) -> Any: ...


@dataclass
class UsageTables:
    """What every device's usage is looked up in, read once per scan."""

    #: The file the mount table came from ("none": neither mountinfo nor /proc/mounts).
    table: str = "none"
    mounts: dict[str, list[parsers.MountEntry]] = field(default_factory=dict)
    swaps: set[str] = field(default_factory=set)
    loops: dict[str, list[str]] = field(default_factory=dict)
    #: None: not looked for (not asked, or not root on the live system).
    held: dict[str, list[OpenBy]] | None = None

    def usage(self, dev: dict[str, Any], probes: Probes) -> Usage:
        """The usage of `dev` (a device's fields), with what `probes` found on it."""
        name = dev["name"]
        entries = self.mounts.get(name, [])
        fstype: Fact[str] = _NO_FSTYPE
        if entries:
            fstype = make_fact(FactStr, entries[0].fstype, "mountinfo", self.table,
                               entries[0].raw, None)
        probed = probes.of(name)
        signatures = probed.signatures
        if fstype.value is None:
            for sig in signatures:
                if sig.raw and sig.raw.startswith("TYPE="):
                    fstype = sig
                    break
        return Usage(
            mountpoints=[e.mountpoint for e in entries], fstype=fstype,
            swap=name in self.swaps, signatures=signatures, probed=probed.probed,
            loops=self.loops.get(name, []),
            held_open=None if self.held is None else self.held.get(name, []))


def usage_tables(root: SysRoot, fields: Iterable[Fields], users: bool) -> UsageTables:
    """The mount table, swaps and loop devices of `root` by device; with `users`, the processes
    holding each device open (as root on the live system)."""
    loops = _loops_over(root, fields)
    held = _held_open(fields) if users and can_probe(root) else None
    table, entries = _mount_table(root)
    mounts = _by_device(fields, entries)
    swap_paths = set(parsers.parse_swaps(root.read("proc/swaps") or ""))
    swaps = {f["name"] for f in fields if f["path"] in swap_paths
             or f"/dev/{f['name']}" in swap_paths}
    return UsageTables(table=table, mounts=mounts, swaps=swaps, loops=loops, held=held)


def _held_open(fields: Iterable[Fields]) -> dict[str, list[OpenBy]]:
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


def _loops_over(root: SysRoot, fields: Iterable[Fields]) -> dict[str, list[str]]:
    """Device name -> the loop devices bound over it. On the live system the kernel says what
    each loop device is bound to (LOOP_GET_STATUS64: the backing's device number, whatever path
    it was opened by), falling back to the backing path when the device cannot be opened (not
    root); a capture has only that path (`/dev/NAME`). The devices are looked up by those
    numbers and paths only: maps of every device (a SAN host's 100,000) for a loop device or
    two would be most of a scan's memory."""
    from advisor.system.loopdev import dev_name, loop_status

    loops = [f["name"] for f in fields if f["kind"] == "loop"]
    if not loops:
        return {}
    backing_devno: dict[str, str] = {}  # loop device -> what it is bound to, as the kernel says
    if root.live:
        for name in loops:
            try:
                status = loop_status(f"/dev/{name}")
            except OSError:
                status = None
            if status is not None and status.on_block_device:
                backing_devno[name] = dev_name(status.backing_rdev)
    by_devno = _lookups(fields, set(backing_devno.values()), set())[0]
    under: dict[str, str | None] = {name: by_devno.get(backing_devno.get(name, ""))
                                    for name in loops}
    backing_path = {name: (root.read(f"sys/block/{name}/loop/backing_file") or "").strip()
                    for name in loops if under[name] is None}
    by_path = _lookups(fields, set(), set(backing_path.values()) - {""})[1]
    under.update((name, by_path.get(path)) for name, path in backing_path.items())
    found: dict[str, list[str]] = {}
    for name in loops:
        device = under[name]
        if device is not None and device != name:
            found.setdefault(device, []).append(name)
    return found


def no_usage() -> Usage:
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


def _by_device(fields: Iterable[Fields], entries: list[parsers.MountEntry]
               ) -> dict[str, list[parsers.MountEntry]]:
    by_devno, by_path = _lookups(fields, {e.maj_min for e in entries if e.maj_min},
                                 {e.source for e in entries})
    out: dict[str, list[parsers.MountEntry]] = {}
    for e in entries:
        name = by_devno.get(e.maj_min or "") or by_path.get(e.source)
        if name is not None:
            out.setdefault(name, []).append(e)
    return out


def _lookups(fields: Iterable[Fields], devnos: set[str], paths: set[str]
             ) -> tuple[dict[str, str], dict[str, str]]:
    """Device names by device number and by path (its own, then /dev/NAME over it), of those
    numbers and paths only: maps of every device of a host with 100,000 devices would be ~30 MB
    for a few mounts. The devices are not gone through for a map of nothing."""
    by_devno: dict[str, str] = {}
    if devnos:
        by_devno = {f["maj_min"]: f["name"] for f in fields
                    if f["maj_min"] and f["maj_min"] in devnos}
    by_path: dict[str, str] = {}
    if paths:
        by_path = {f["path"]: f["name"] for f in fields if f["path"] in paths}
        by_path.update({f"/dev/{f['name']}": f["name"] for f in fields
                        if f"/dev/{f['name']}" in paths})
    return by_devno, by_path
