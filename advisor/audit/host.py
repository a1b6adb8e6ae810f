"""The audit's reads of the host, all read-only: mountinfo (options in effect), the fstab file,
`xfs_info` on a mount point, `xfs_db -r -c info` on an unmounted device, the kernel's config.
Nothing here mounts or writes anything."""

from __future__ import annotations

import gzip
import os
import re
import stat
from dataclasses import dataclass, field

from advisor.audit.fstab import FstabEntry
from advisor.errors import AdvisorError, BadInput, DeviceProblem
from advisor.inspect.parsers import MountEntry, parse_mountinfo
from advisor.models.device import Device, Inventory
from advisor.models.proposal import MkfsGeometry
from advisor.system import argv
from advisor.system.mkfs import parse_mkfs_output
from advisor.system.runner import run
from advisor.system.sysroot import SysRoot


@dataclass(frozen=True)
class Mount:
    """An XFS mount from mountinfo, with its options."""

    entry: MountEntry
    per_mount: tuple[str, ...]
    per_super: tuple[str, ...]

    @property
    def options(self) -> list[str]:
        """Every option in effect: per-mount first, then the superblock's."""
        return [*self.per_mount, *(o for o in self.per_super if o not in self.per_mount)]


def xfs_mounts(root: SysRoot) -> list[Mount]:
    """XFS mounts, one per filesystem (a bind mount of the same one is skipped)."""
    seen: set[str] = set()
    mounts = []
    for e in parse_mountinfo(root.read("proc/self/mountinfo") or ""):
        if e.fstype != "xfs" or (e.maj_min or e.source) in seen:
            continue
        seen.add(e.maj_min or e.source)
        fields = e.raw.split()
        sep = fields.index("-", 6)
        mounts.append(Mount(e, tuple(fields[5].split(",")),
                            tuple(fields[sep + 3].split(",")) if len(fields) > sep + 3 else ()))
    return mounts


def devno(path: str) -> str | None:
    """MAJ:MIN of a block device node, None for anything else (or a vanished one)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}" if stat.S_ISBLK(st.st_mode) else None


def resolve_spec(spec: str) -> str | None:
    """The device node an fstab spec names (UUID=, LABEL=, PARTUUID=, PARTLABEL=, a path)."""
    tags = {"UUID": "by-uuid", "LABEL": "by-label", "PARTUUID": "by-partuuid",
            "PARTLABEL": "by-partlabel"}
    tag, sep, value = spec.partition("=")
    path = f"/dev/disk/{tags[tag]}/{value}" if sep and tag in tags else spec
    return os.path.realpath(path) if path.startswith("/") and devno(path) else None


def device_of(inventory: Inventory, maj_min: str | None) -> Device | None:
    return next((d for d in inventory.devices if maj_min and d.maj_min == maj_min), None)


@dataclass(frozen=True)
class FormatRead:
    """What xfs_info (or xfs_db -r) said about a filesystem."""

    tool: str
    geometry: MkfsGeometry
    ascii_ci: bool


def read_format(device: str, mount: Mount | None) -> FormatRead:
    """The on-disk format: xfs_info on the mount point when mounted, else `xfs_db -r` on the
    device (read-only; never mounts it). DeviceProblem when it cannot be read."""
    tool, command = (("xfs_info", argv.xfs_info(mount.entry.mountpoint)) if mount else
                     ("xfs_db -r", argv.xfs_db_info(device)))
    result = run(command, check=False, timeout=30)
    if not result.ok or "meta-data=" not in result.stdout:
        if not mount and devno(device) is None:
            raise DeviceProblem(f"{device} vanished during the audit")
        raise DeviceProblem(f"{device}: {tool} cannot read an XFS filesystem there "
                            f"({result.first_error_line()})")
    try:
        geometry = parse_mkfs_output(result.stdout)
    except AdvisorError as err:
        raise DeviceProblem(f"{device}: {tool}: {err.message}") from None
    return FormatRead(tool, geometry, bool(re.search(r"\bascii-ci=1\b", result.stdout)))


def kernel_config(root: SysRoot) -> dict[str, str]:
    """The running kernel's config (CONFIG_X -> y/m/n) from /proc/config.gz, when it has one."""
    if not root.live:
        return {}
    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            text = f.read(1 << 22)
    except (OSError, EOFError):
        return {}
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
    extra: list[FstabEntry] = field(default_factory=list)


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
