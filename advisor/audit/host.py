"""The audit's reads of the host, all read-only: mountinfo (options in effect), the fstab file,
`xfs_info` on a mount point, `xfs_db -r -c info` on an unmounted device, the kernel's config.
Nothing here mounts or writes anything. A capture (`xfs-advisor capture`) holds the same texts
under AUDIT_DIR, so that `--sysroot DIR audit` replays them."""

from __future__ import annotations

import gzip
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from advisor.audit.fstab import FstabEntry
from advisor.errors import AdvisorError, BadInput, DeviceProblem
from advisor.inspect.parsers import MountEntry, parse_mountinfo
from advisor.models.device import Device, Inventory
from advisor.models.proposal import MkfsGeometry
from advisor.system import argv, blkid
from advisor.system.files import OwnFolder, read_text
from advisor.system.mkfs import parse_mkfs_output
from advisor.system.runner import run
from advisor.system.sysroot import SysRoot

#: Where a capture keeps what the audit read: `<device name>.xfs_info` or `.xfs_db` (the
#: tools' output), `kernel-config` (the kernel's XFS options), `fstab`.
AUDIT_DIR = "xfs-advisor-audit"
_TOOLS = {"xfs_info": "xfs_info", "xfs_db": "xfs_db -r"}


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


def run_format_tool(device: str, mount: Mount | None) -> tuple[str, str]:
    """xfs_info on the mount point when mounted, else `xfs_db -r` on the device (read-only;
    never mounts it): the tool's key in _TOOLS and its output. DeviceProblem when it fails."""
    tool, command = (("xfs_info", argv.xfs_info(mount.entry.mountpoint)) if mount else
                     ("xfs_db", argv.xfs_db_info(device)))
    result = run(command, check=False, timeout=30)
    if not result.ok or "meta-data=" not in result.stdout:
        if not mount and devno(device) is None:
            raise DeviceProblem(f"{device} vanished during the audit")
        raise DeviceProblem(f"{device}: {_TOOLS[tool]} cannot read an XFS filesystem there "
                            f"({result.first_error_line()})")
    return tool, result.stdout


def captured_format_tool(root: SysRoot, name: str, device: str) -> tuple[str, str]:
    """What the capture's run of xfs_info or xfs_db -r printed for device `name`."""
    for tool in _TOOLS:
        text = root.read(f"{AUDIT_DIR}/{name}.{tool}")
        if text is not None:
            return tool, text
    raise DeviceProblem(f"{device}: the capture holds no xfs_info or xfs_db output for it")


def parse_format(device: str, tool: str, text: str) -> FormatRead:
    """The geometry and features in a tool's output."""
    try:
        geometry = parse_mkfs_output(text)
    except AdvisorError as err:
        raise DeviceProblem(f"{device}: {_TOOLS[tool]}: {err.message}") from None
    return FormatRead(_TOOLS[tool], geometry, bool(re.search(r"\bascii-ci=1\b", text)))


def read_format(device: str, mount: Mount | None, root: SysRoot | None = None,
                name: str | None = None) -> FormatRead:
    """The on-disk format, from the live device or (`root` a capture) what the capture read."""
    if root is not None and not root.live:
        tool, text = captured_format_tool(root, name or os.path.basename(device), device)
    else:
        tool, text = run_format_tool(device, mount)
    return parse_format(device, tool, text)


def live_kernel_config() -> str:
    """The running kernel's XFS options from /proc/config.gz (empty when it has none)."""
    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            text = f.read(1 << 22)
    except (OSError, EOFError):
        return ""
    return "\n".join(line for line in text.splitlines() if "CONFIG_XFS" in line)


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


def sysroot_fstab(root: SysRoot) -> Path:
    """The fstab of a --sysroot tree: a capture's copy (AUDIT_DIR/fstab) when there is one, else
    the tree's etc/fstab (a host's root file system mounted elsewhere, `--sysroot /host`)."""
    copy = root.path(f"{AUDIT_DIR}/fstab")
    return copy if copy.exists() or not root.path("etc/fstab").exists() else root.path("etc/fstab")


def capture_sources(root: SysRoot, inventory: Inventory, dest: OwnFolder) -> int:
    """Write what the audit reads that a sysfs capture lacks into dest/AUDIT_DIR: every XFS
    device's xfs_info (or xfs_db -r) output, the kernel's XFS options, /etc/fstab; and the
    kernel release (the xfs_admin upgrades depend on it). Read-only on the devices. The number
    of files written."""
    release = "proc/sys/kernel/osrelease"
    if not dest.lexists(release):
        dest.write(release, os.uname().release + "\n")
    written = {"kernel-config": live_kernel_config()}
    fstab = "/etc/fstab" if root.live else str(sysroot_fstab(root))
    if os.path.isfile(fstab):  # the tree's own, never this machine's
        written["fstab"] = read_text(fstab, "fstab")
    mounts = xfs_mounts(root)
    for device in inventory.devices:
        mount = next((m for m in mounts if m.entry.maj_min == device.maj_min), None)
        if device.usage.fstype.value != "xfs" and mount is None:
            continue
        try:
            tool, text = run_format_tool(device.path, mount)
        except AdvisorError:
            continue  # unreadable now: the replay reports it as the live audit would
        written[f"{device.name}.{tool}"] = text
    dest.makedirs(AUDIT_DIR)
    for name, text in written.items():
        dest.write(f"{AUDIT_DIR}/{name}", text)
    return len(written)


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
