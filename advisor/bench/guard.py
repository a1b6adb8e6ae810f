"""The scratch-device guard: `validate --device` formats the device many times, so it refuses any
device that holds or serves anything. Every refusal names its reason; nothing is written before
every check has passed, and the checks are made again right before each write (`check_now`).

`refusals` reads only the Inventory (advisor.inspect.devices: sysfs, mountinfo, /proc/swaps,
libblkid) and, for loop devices, what each is bound to (`Links`), so tests can hand it devices
that this machine cannot build (no device-mapper). A loop device stacked on another block device
or on a file has no holders/slaves link in sysfs: only the kernel's loop status (st_dev, st_ino,
st_rdev of the backing file) tells what it really writes to, so the guard follows that."""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass, field

from advisor.errors import AdvisorError, DeviceProblem
from advisor.models.device import Device, Inventory, reachable
from advisor.models.obstacles import obstacles, signature_text
from advisor.models.units import human_size
from advisor.system.blank import leftover_data
from advisor.system.loopdev import LoopStatus, dev_name, loop_status
from advisor.system.openers import Openers, scan

#: Mountpoints whose devices (and everything under them) are never scratch.
SYSTEM_MOUNTPOINTS = ("/", "/boot", "/boot/efi", "/usr", "/var")
#: Loop devices over loop devices over ...: deeper than this is refused, not followed.
MAX_LOOP_DEPTH = 8
#: The flag that lets `validate --device` format a device holding data nothing recognizes.
UNRECOGNIZED_FLAG = "--destroy-unrecognized-data"
#: Further looks at the processes holding a device open before they count (udev's probes).
SETTLE_LOOKS = 10


@dataclass(frozen=True)
class Links:
    """Live facts the sysfs inventory cannot show: what each loop device is bound to (None: the
    kernel could not be asked, with the reason in `errors`), the (st_dev, st_ino) of every swap
    file in /proc/swaps, and which processes hold a block device or a loop device's backing file
    open (None: not scanned, as for a captured tree)."""

    loops: dict[str, LoopStatus | None] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    swap_files: frozenset[tuple[int, int]] = frozenset()
    openers: Openers | None = None


def live_links(inv: Inventory) -> Links:
    """Ask the kernel about every loop device in `inv`, and stat every swap file."""
    loops: dict[str, LoopStatus | None] = {}
    errors: dict[str, str] = {}
    for d in inv.devices:
        if d.kind != "loop":
            continue
        try:
            loops[d.name] = loop_status(d.path)
        except OSError as err:
            loops[d.name] = None
            errors[d.name] = err.strerror or str(err)
    backing = frozenset((st.backing_dev, st.backing_ino) for st in loops.values()
                        if st is not None and not st.on_block_device)
    # This process is left out: it holds the device it is about to format (bench.hold).
    return Links(loops=loops, errors=errors, swap_files=_swap_files(),
                 openers=scan(backing, skip=frozenset({os.getpid()})))


def _swap_files() -> frozenset[tuple[int, int]]:
    from advisor.inspect.parsers import parse_swaps

    try:
        with open("/proc/swaps", encoding="utf-8", errors="surrogateescape") as f:
            paths = parse_swaps(f.read())
    except OSError:
        return frozenset()
    ids = set()
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue
        ids.add((st.st_dev, st.st_ino))
    return frozenset(ids)


@dataclass(frozen=True)
class Scope:
    """What each device's verdict reads of the whole inventory, worked out once: judging every
    device of a large host (the TUI's target list) must not rescan it per device."""

    by_name: dict[str, Device]
    under_system: dict[str, list[str]]
    """Device name -> the system mountpoints (SYSTEM_MOUNTPOINTS order) it is under: the
    mounted device itself and everything it is built on."""


def scope_of(inv: Inventory) -> Scope:
    by_name = {d.name: d for d in inv.devices}
    under: dict[str, list[str]] = {}
    for mp in SYSTEM_MOUNTPOINTS:
        for d in inv.devices:
            if mp in d.usage.mountpoints:
                for name in [d.name, *(p.name for p in inv.stacked(d, "parents", by_name))]:
                    if mp not in under.setdefault(name, []):
                        under[name].append(mp)
    return Scope(by_name=by_name, under_system=under)


def built_on(dev: Device, by_name: dict[str, Device]) -> list[Device]:
    """Every device that formatting `dev` would destroy the ground of: its partitions and holders
    and the loop devices bound over it (at any offset), and theirs, transitively, each once.
    sysfs links only the first two; a loop device over a block device shows only in the
    kernel's loop status (Usage.loops)."""
    return reachable(dev, lambda d: [*d.children, *d.usage.loops], by_name)


def _by_number(inv: Inventory, number: int) -> Device | None:
    want = dev_name(number)
    return next((d for d in inv.devices if d.maj_min == want), None)


def _loop_refusals(inv: Inventory, dev: Device, links: Links, depth: int,
                   scope: Scope) -> list[str]:
    """Why the loop device `dev` must not be formatted because of what it is bound to."""
    if dev.name not in links.loops:
        return [f"the kernel was not asked what {dev.name} is bound to"]
    status = links.loops[dev.name]
    if status is None:
        why = links.errors.get(dev.name, "not bound to a file")
        return [f"the kernel cannot say what {dev.name} is bound to ({why})"]
    reasons: list[str] = []
    own_stack = {dev.name} | {d.name for d in inv.stacked(dev, "children", scope.by_name)} | {
        d.name for d in inv.stacked(dev, "parents", scope.by_name)}
    for other, st in links.loops.items():
        if other != dev.name and st is not None and st.backing_dev == status.backing_dev and \
                st.backing_ino == status.backing_ino and st.backing_rdev == status.backing_rdev:
            reasons.append(f"{other} is bound to the same backing "
                           f"{'device' if status.on_block_device else 'file'} "
                           f"({status.file_name or '?'})")
    if status.on_block_device:
        under = _by_number(inv, status.backing_rdev)
        if under is None:
            return [*reasons, f"it is a loop device over block device "
                    f"{dev_name(status.backing_rdev)}, which the inventory does not show"]
        if under.name in own_stack:
            return [*reasons, f"it is a loop device over {under.path}, which is built on it"]
        if depth >= MAX_LOOP_DEPTH:
            return [*reasons, f"loop devices stacked more than {MAX_LOOP_DEPTH} deep"]
        for why in refusals(inv, under, 0, links=links, scope=scope, _depth=depth + 1):
            reasons.append(f"it is a loop device over {under.path}, and {why}")
        return reasons
    holder = _by_number(inv, status.backing_dev)
    if holder is not None and holder.name in own_stack:
        reasons.append(f"its backing file ({status.file_name or '?'}) sits on the filesystem "
                       "being tested")
    if (status.backing_dev, status.backing_ino) in links.swap_files:
        reasons.append(f"its backing file ({status.file_name or '?'}) is in use as swap")
    if links.openers is not None:
        for opener in links.openers.files.get((status.backing_dev, status.backing_ino), []):
            reasons.append(f"{opener.describe()} holds its backing file "
                           f"({status.file_name or '?'}) open")
    return reasons


def _number(dev: Device) -> int | None:
    """The device number sysfs gives `dev`; None when it has none."""
    major, _, minor = (dev.maj_min or "").partition(":")
    if not (major.isdigit() and minor.isdigit()):
        return None
    return os.makedev(int(major), int(minor))


def _process_refusals(dev: Device, below: list[Device], disks: list[Device],
                      openers: Openers) -> list[str]:
    """Processes holding the device, anything built on it, or the disk it is a partition of
    (or built on a partition of) open without claiming it: whoever has the whole disk open
    reads and writes the partition's blocks too."""
    reasons: list[str] = []
    for d in [dev, *below, *disks]:
        number = _number(d)
        if number is None:
            continue
        for opener in openers.devices.get(number, []):
            reasons.append(f"{opener.describe()} holds it open" if d is dev else
                           f"{opener.describe()} holds {d.name} open, which it is part of"
                           if d in disks else
                           f"{opener.describe()} holds {d.name} open, which is built on it")
    return reasons


def _whole_disks(dev: Device, above: list[Device], by_name: dict[str, Device]) -> list[Device]:
    """The disks that `dev`, or a device it is built on, is a partition of. (Only those: the
    slaves of device-mapper or md are held by it, and a daemon's path checker may keep them
    open.)"""
    found = [by_name[name] for d in [dev, *above] if d.kind == "part" for name in d.parents
             if name in by_name]
    return list({d.name: d for d in found}.values())


def _above_refusals(inv: Inventory, above: list[Device], links: Links, scope: Scope,
                    depth: int) -> list[str]:
    """What uses a device `dev` is built on (a partition's disk, a device-mapper or md device's
    slaves) in a way that reaches `dev`'s blocks: a loop device bound over it (at any offset),
    a mount or swap on it, and for a loop device, what else writes to its backing file or
    device (a partition of a loop device writes to the loop device's file)."""
    reasons: list[str] = []
    for d in above:
        if d.kind == "loop" and (inv.live or d.name in links.loops):
            reasons += [f"it is part of {d.name}: {why}"
                        for why in _loop_refusals(inv, d, links, depth, scope)]
        for name in d.usage.loops:
            reasons.append(f"{name} is a loop device over {d.name}, which it is part of")
        if d.usage.mountpoints:
            reasons.append(f"{d.name}, which it is part of, is mounted on "
                           f"{', '.join(d.usage.mountpoints)}")
        if d.usage.swap:
            reasons.append(f"{d.name}, which it is part of, is in use as swap (/proc/swaps)")
    return reasons


def _node_refusals(dev: Device) -> list[str]:
    """Why `dev.path` does not open the device sysfs describes (a stale or hand-made node
    names another device: the checks would be of one device and the writes to another)."""
    want = _number(dev)
    try:
        st = os.stat(dev.path)
    except OSError as err:
        return [f"its device node {dev.path} cannot be read ({err.strerror})"]
    if not stat.S_ISBLK(st.st_mode):
        return [f"{dev.path} is not a block device node"]
    if want is None or st.st_rdev != want:
        return [f"{dev.path} is device {dev_name(st.st_rdev)}, not {dev.name} "
                f"({dev.maj_min or 'no number in sysfs'}): a stale device node"]
    return []


def refusals(inv: Inventory, dev: Device, need_bytes: int, *, links: Links | None = None,
             scope: Scope | None = None, unrecognized_ok: bool = False,
             read_data: bool = True, _depth: int = 0) -> list[str]:
    """Every reason not to format `dev` (empty: it is a usable scratch device). `links`: what
    loop devices are bound to; asked of the live kernel when not given and `inv` is live.
    `scope`: scope_of(inv), when judging many devices of one inventory. On the live system a
    device nothing else stands in the way of is read where data lives (advisor.system.blank);
    `unrecognized_ok`: the user said what is there may be destroyed, or it is the test
    filesystem this tool made. `read_data` False: not read (a list of every device of a large
    host; the one chosen is judged again with it)."""
    if links is None:
        links = live_links(inv) if inv.live else Links()
    if scope is None:
        scope = scope_of(inv)
    reasons: list[str] = []
    below = built_on(dev, scope.by_name)
    above = inv.stacked(dev, "parents", scope.by_name)
    for mp in scope.under_system.get(dev.name, []):
        reasons.append(f"it is the device under {mp}")
    own = {o.kind: o for o in obstacles(dev) if o.blocks}
    reasons += [f"it {o.says}" for o in own.values()]
    for under in [dev, *below]:
        for name in under.usage.loops:
            if under is not dev:  # the device's own loops are its `looped` obstacle
                reasons.append(f"{name} is a loop device over {under.name}, which is built on it")
    for child in below:
        if child.usage.mountpoints:
            reasons.append(f"{child.name} on it is mounted on {', '.join(child.usage.mountpoints)}")
        if child.usage.swap:
            reasons.append(f"{child.name} on it is in use as swap (/proc/swaps)")
    reasons += _above_refusals(inv, above, links, scope, _depth)
    if links.openers is not None:
        reasons += _process_refusals(dev, below, _whole_disks(dev, above, scope.by_name),
                                     links.openers)
    if not dev.usage.probed:
        reasons.append(f"libblkid could not check it for existing data ({_unprobed_why(dev)})")
    elif dev.usage.signatures and "data" not in own:  # mounted or swap: listed all the same
        reasons.append(f"it holds data: {signature_text(dev)}")
    size = dev.size_bytes.value
    if size is None:
        reasons.append("its size is unknown")
    elif size < need_bytes:
        reasons.append(f"it is too small ({human_size(size)}; the benchmark needs at least "
                       f"{human_size(need_bytes)})")
    if dev.kind == "loop" and (inv.live or dev.name in links.loops):
        reasons += _loop_refusals(inv, dev, links, _depth, scope)
    if inv.live and read_data and not reasons and not unrecognized_ok and _depth == 0 \
            and size is not None:
        try:
            found = leftover_data(dev.path, size)
        except OSError as err:
            found = f"it cannot be read ({err.strerror})"
        if found:
            reasons.append(f"it is not blank, though no signature names what it holds: {found} "
                           f"({UNRECOGNIZED_FLAG} formats it anyway)")
    return list(dict.fromkeys(reasons))


def _unprobed_why(dev: Device) -> str:
    """What kept libblkid from probing: its own error when it had one (EPERM happens as root
    too), else the lack of root (libblkid is asked only as root)."""
    errors = [n.removeprefix("libblkid: ") for n in dev.notes if n.startswith("libblkid: ")]
    if errors:
        return errors[0]
    return "run as root" if os.geteuid() != 0 else "it was not probed"


def check_scratch(inv: Inventory, dev: Device, need_bytes: int, *,
                  unrecognized_ok: bool = False) -> None:
    """Raise DeviceProblem naming every reason the device is not scratch. When the only reasons
    are processes holding it open, the processes are looked at again for a moment first: udev
    opens a device to probe it after every change (an umount, a wipefs) and lets go at once.
    On the live system the device's node must also open the device judged (`refusals` reads
    sysfs by name; the writes go through the node): checked here, where every write is decided
    (before the prompt, and in check_now before each mkfs)."""
    node = _node_refusals(dev) if inv.live else []
    reasons = node + refusals(inv, dev, need_bytes, unrecognized_ok=unrecognized_ok)
    for _ in range(SETTLE_LOOKS):
        if not reasons or not all(r.startswith("pid ") for r in reasons):
            break
        time.sleep(0.1)
        reasons = refusals(inv, dev, need_bytes, unrecognized_ok=unrecognized_ok)
    if reasons:
        raise DeviceProblem(f"refusing to format {dev.path}: " + "; ".join(reasons))



def check_now(path: str, need_bytes: int, *, ours: str | None = None,
              unrecognized_ok: bool = False) -> Device:
    """The whole guard again, read afresh from the live system, right before a write: sysfs,
    mountinfo, swaps, the loop bindings, the processes, a new libblkid probe of the device and
    its blank places. `ours`: the UUID of the XFS our own previous round made there; that one
    signature (and its data) is expected, any other is refused. `unrecognized_ok`: the user
    said data no signature names may be destroyed. Returns the device as it is now; raises
    DeviceProblem otherwise."""
    from advisor.inspect.devices import find_device, inspect_devices
    from advisor.system.blkid import probe_signatures
    from advisor.system.superblock import read_xfs_uuid
    from advisor.system.sysroot import SysRoot

    inv = inspect_devices(SysRoot(), probe=False)
    try:
        dev = find_device(inv, path)
    except DeviceProblem:
        raise DeviceProblem(f"refusing to format {path}: it has vanished") from None
    try:
        signatures = probe_signatures(dev.path)
        if ours is not None and [s.value for s in signatures] == ["xfs"] and \
                read_xfs_uuid(dev.path) == ours:
            signatures = []
            unrecognized_ok = True
    except AdvisorError as err:
        raise DeviceProblem(f"refusing to format {path}: {err}") from None
    dev = dev.model_copy(update={"usage": dev.usage.model_copy(
        update={"signatures": signatures, "probed": True})})
    check_scratch(inv, dev, need_bytes, unrecognized_ok=unrecognized_ok)
    return dev
