"""The scratch-device guard: `validate --device` formats the device many times, so it refuses any
device that holds or serves anything. Every refusal names its reason; nothing is written before
every check has passed.

It reads only the Inventory (advisor.inspect.devices: sysfs, mountinfo, /proc/swaps, libblkid),
so tests can hand it a device with holders that this machine cannot build (no device-mapper)."""

from __future__ import annotations

import os

from advisor.errors import DeviceProblem
from advisor.models.device import Device, Inventory
from advisor.models.units import human_size

#: Mountpoints whose devices (and everything under them) are never scratch.
SYSTEM_MOUNTPOINTS = ("/", "/boot", "/boot/efi", "/usr", "/var")


def refusals(inv: Inventory, dev: Device, need_bytes: int) -> list[str]:
    """Every reason not to format `dev` (empty: it is a usable scratch device)."""
    reasons: list[str] = []
    below = inv.stacked(dev, "children")
    for mp in SYSTEM_MOUNTPOINTS:
        for d in inv.devices:
            if mp in d.usage.mountpoints and (
                d.name == dev.name or dev.name in {p.name for p in inv.stacked(d, "parents")}
            ):
                reasons.append(f"it is the device under {mp}")
    if dev.usage.mountpoints:
        reasons.append(f"it is mounted on {', '.join(dev.usage.mountpoints)}")
    for child in below:
        if child.usage.mountpoints:
            reasons.append(f"{child.name} on it is mounted on {', '.join(child.usage.mountpoints)}")
    if dev.holders:
        reasons.append(f"it has holders ({', '.join(dev.holders)}: LVM, md, dm-crypt or "
                       "multipath use it)")
    if dev.usage.swap:
        reasons.append("it is in use as swap (/proc/swaps)")
    for child in below:
        if child.usage.swap:
            reasons.append(f"{child.name} on it is in use as swap")
    if not dev.usage.probed:
        reasons.append(f"libblkid could not check it for existing data ({_unprobed_why(dev)})")
    for sig in dev.usage.signatures:
        what = f"{sig.note}, " if sig.note else ""
        reasons.append(f"libblkid finds existing data on it: {sig.value} ({what}{sig.raw})")
    parts = [c.name for c in below if c.kind == "part"]
    if parts:
        reasons.append(f"it has partitions ({', '.join(parts)})")
    if dev.read_only.value:
        reasons.append("it is read-only")
    size = dev.size_bytes.value
    if size is None:
        reasons.append("its size is unknown")
    elif size < need_bytes:
        reasons.append(f"it is too small ({human_size(size)}; the benchmark needs at least "
                       f"{human_size(need_bytes)})")
    return list(dict.fromkeys(reasons))


def _unprobed_why(dev: Device) -> str:
    """What kept libblkid from probing: its own error when it had one (EPERM happens as root
    too), else the lack of root (libblkid is asked only as root)."""
    errors = [n.removeprefix("libblkid: ") for n in dev.notes if n.startswith("libblkid: ")]
    if errors:
        return errors[0]
    return "run as root" if os.geteuid() != 0 else "it was not probed"


def check_scratch(inv: Inventory, dev: Device, need_bytes: int) -> None:
    """Raise DeviceProblem naming every reason the device is not scratch."""
    reasons = refusals(inv, dev, need_bytes)
    if reasons:
        raise DeviceProblem(f"refusing to format {dev.path}: " + "; ".join(reasons))
