"""The host files the audit reads and a capture keeps (under AUDIT_DIR): the output of
`xfs_info` on a mount point or `xfs_db -r -c info` on an unmounted device, the kernel's XFS
options, the fstab. Read-only: nothing here mounts or writes to a device."""

from __future__ import annotations

import gzip
import os
import stat
from pathlib import Path

from advisor.errors import DeviceProblem
from advisor.system import argv
from advisor.system.runner import run
from advisor.system.sysroot import SysRoot

#: Where a capture keeps what the audit read: `<device name>.xfs_info` or `.xfs_db` (the
#: tools' output), `kernel-config` (the kernel's XFS options), `fstab`.
AUDIT_DIR = "xfs-advisor-audit"
#: The tools that read an XFS format (a capture file's suffix) and how messages name them.
TOOLS = {"xfs_info": "xfs_info", "xfs_db": "xfs_db -r"}


def devno(path: str) -> str | None:
    """MAJ:MIN of a block device node, None for anything else (or a vanished one)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}" if stat.S_ISBLK(st.st_mode) else None


def run_format_tool(device: str, mountpoint: str | None) -> tuple[str, str]:
    """xfs_info on the mount point when mounted, else `xfs_db -r` on the device (read-only;
    never mounts it): the tool's key in TOOLS and its output. DeviceProblem when it fails."""
    tool, command = (("xfs_info", argv.xfs_info(mountpoint)) if mountpoint else
                     ("xfs_db", argv.xfs_db_info(device)))
    result = run(command, check=False, timeout=30)
    if not result.ok or "meta-data=" not in result.stdout:
        if not mountpoint and devno(device) is None:
            raise DeviceProblem(f"{device} vanished during the audit")
        raise DeviceProblem(f"{device}: {TOOLS[tool]} cannot read an XFS filesystem there "
                            f"({result.first_error_line()})")
    return tool, result.stdout


def live_kernel_config() -> str:
    """The running kernel's XFS options from /proc/config.gz (empty when it has none)."""
    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            text = f.read(1 << 22)
    except (OSError, EOFError):
        return ""
    return "\n".join(line for line in text.splitlines() if "CONFIG_XFS" in line)


def sysroot_fstab(root: SysRoot) -> Path:
    """The fstab of a --sysroot tree: a capture's copy (AUDIT_DIR/fstab) when there is one, else
    the tree's etc/fstab (a host's root file system mounted elsewhere, `--sysroot /host`)."""
    copy = root.path(f"{AUDIT_DIR}/fstab")
    return copy if copy.exists() or not root.path("etc/fstab").exists() else root.path("etc/fstab")
