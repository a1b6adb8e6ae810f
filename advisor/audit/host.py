"""The audit's reads of the host, all read-only: mountinfo (options in effect), the fstab file,
`xfs_info` on a mount point, `xfs_db -r -c info` on an unmounted device, the kernel's config.
Nothing here mounts or writes anything. A capture (`xfs-advisor capture`) holds the same texts
under AUDIT_DIR, so that `--sysroot DIR audit` replays them."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass

from advisor.audit.fstab import FstabEntry
from advisor.errors import AdvisorError, BadInput, DeviceProblem
from advisor.inspect.mounts import Mount
from advisor.models.device import Device, Inventory
from advisor.models.proposal import MkfsGeometry
from advisor.system import blkid
from advisor.system.auditfiles import (
    AUDIT_DIR,
    TOOLS,
    devno,
    live_kernel_config,
    run_format_tool,
)
from advisor.system.mkfs import parse_mkfs_output
from advisor.system.sysroot import SysRoot


def resolve_spec(spec: str) -> str | None:
    """The device node an fstab spec names (UUID=, LABEL=, PARTUUID=, PARTLABEL=, a path)."""
    tags = {"UUID": "by-uuid", "LABEL": "by-label", "PARTUUID": "by-partuuid",
            "PARTLABEL": "by-partlabel"}
    tag, sep, value = spec.partition("=")
    path = f"/dev/disk/{tags[tag]}/{value}" if sep and tag in tags else spec
    if sep and tag in tags and not devno(path):  # no udev symlinks: ask libblkid, as mount does
        path = blkid.evaluate_tag(tag, value) or path
    return os.path.realpath(path) if path.startswith("/") and devno(path) else None


def device_of(inventory: Inventory, maj_min: str | None) -> Device | None:
    return next((d for d in inventory.devices if maj_min and d.maj_min == maj_min), None)


@dataclass(frozen=True)
class FormatRead:
    """What xfs_info (or xfs_db -r) said about a filesystem."""

    tool: str
    geometry: MkfsGeometry
    ascii_ci: bool


def captured_format_tool(root: SysRoot, name: str, device: str) -> tuple[str, str]:
    """What the capture's run of xfs_info or xfs_db -r printed for device `name`."""
    for tool in TOOLS:
        text = root.read(f"{AUDIT_DIR}/{name}.{tool}")
        if text is not None:
            return tool, text
    raise DeviceProblem(f"{device}: the capture holds no xfs_info or xfs_db output for it")


def parse_format(device: str, tool: str, text: str) -> FormatRead:
    """The geometry and features in a tool's output."""
    try:
        geometry = parse_mkfs_output(text)
    except AdvisorError as err:
        raise DeviceProblem(f"{device}: {TOOLS[tool]}: {err.message}") from None
    return FormatRead(TOOLS[tool], geometry, bool(re.search(r"\bascii-ci=1\b", text)))


def read_format(device: str, mount: Mount | None, root: SysRoot | None = None,
                name: str | None = None) -> FormatRead:
    """The on-disk format, from the live device or (`root` a capture) what the capture read."""
    if root is not None and not root.live:
        tool, text = captured_format_tool(root, name or os.path.basename(device), device)
    else:
        tool, text = run_format_tool(device, mount.entry.mountpoint if mount else None)
    return parse_format(device, tool, text)


def kernel_config(root: SysRoot) -> dict[str, str]:
    """The kernel's config (CONFIG_X -> y/m/n): the running one's, or the capture's."""
    text = live_kernel_config() if root.live else root.read(f"{AUDIT_DIR}/kernel-config") or ""
    config = dict(re.findall(r"^(CONFIG_\w+)=(\S+)", text, re.MULTILINE))
    config.update((k, "n") for k in re.findall(r"^# (CONFIG_\w+) is not set", text, re.MULTILINE))
    return config


def supported(config: dict[str, str], name: str) -> bool | None:
    """A kernel option as True/False, None when the config is not known."""
    value = config.get(name)
    return None if value is None else value in ("y", "m")


@dataclass
class Target:
    """One filesystem to audit: its device, its mount, its fstab line (any may be missing)."""

    device: str | None
    mount: Mount | None = None
    fstab: FstabEntry | None = None
    maj_min: str | None = None


def captured_target(name: str, mounts: list[Mount], inventory: Inventory) -> Target:
    """The filesystem a MOUNTPOINT or DEVICE argument names in a capture."""
    mount = next((m for m in mounts if m.entry.mountpoint == name), None)
    if mount is not None:
        return Target(mount.entry.source, mount, maj_min=mount.entry.maj_min)
    from advisor.inspect.devices import find_device

    device = find_device(inventory, name)
    mount = next((m for m in mounts if m.entry.maj_min == device.maj_min), None)
    return Target(device.path, mount, maj_min=device.maj_min)


def named_target(name: str, mounts: list[Mount]) -> Target:
    """The filesystem a MOUNTPOINT or DEVICE argument names; BadInput/DeviceProblem otherwise."""
    try:
        mode = os.stat(name).st_mode
    except OSError as err:
        kind = DeviceProblem if name.startswith("/dev/") else BadInput
        raise kind(f"cannot audit {name}: {err.strerror}") from None
    if stat.S_ISDIR(mode):
        real = os.path.realpath(name)
        mount = next((m for m in mounts if m.entry.mountpoint == real), None)
        if mount is None:
            raise BadInput(f"{name} is not the mount point of an XFS filesystem")
        return Target(mount.entry.source, mount, maj_min=mount.entry.maj_min)
    if not stat.S_ISBLK(mode):
        raise BadInput(f"{name} is neither a block device nor a mount point")
    number = devno(name)
    mount = next((m for m in mounts if number and m.entry.maj_min == number), None)
    return Target(os.path.realpath(name), mount, maj_min=number)
