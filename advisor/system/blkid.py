"""The boundary around libblkid (pylibblkid, imported as `blkid`): what is on a live device, and the
I/O topology the kernel reports for it. Only live devices can be probed; captures carry the results.

`probe_signatures` asks the way mkfs.xfs checks for existing data before it overwrites a device:
superblocks (type and usage) and partition tables, in one safe probe. (The I/O topology is read
from sysfs, which is where libblkid itself takes it from, for live and captured hosts alike.)
"""

from __future__ import annotations

import errno
import os
from typing import Any

from advisor.errors import DeviceProblem
from advisor.models.device import Fact

SOURCE = "blkid"


def _library() -> Any:
    try:
        import blkid
    except ImportError as exc:  # the binding is a declared dependency; say how to get it back
        raise DeviceProblem(
            f"cannot probe devices: the libblkid binding is missing ({exc}); install "
            "pylibblkid in xfs-advisor's environment (it builds against Debian's libblkid-dev "
            "and pkg-config)"
        ) from exc
    return blkid


def _open(path: str) -> Any:
    lib = _library()
    probe = lib.Probe()
    try:
        probe.set_device(path, flags=os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        even = " even as root" if os.geteuid() == 0 and exc.errno in (errno.EPERM,
                                                                        errno.EACCES) else ""
        raise DeviceProblem(f"cannot open {path} for probing: {exc.strerror or exc}{even}") \
            from exc
    except RuntimeError as exc:
        raise DeviceProblem(f"cannot probe {path}: {exc}") from exc
    return probe


def _value(probe: Any, key: str) -> str | None:
    try:
        raw = probe.lookup_value(key)
    except RuntimeError:  # pylibblkid raises when the key was not found
        return None
    if isinstance(raw, bytes):
        return raw.decode("utf-8", "replace")
    return str(raw)


def evaluate_tag(tag: str, value: str) -> str | None:
    """The device node with this tag (UUID, LABEL, PARTUUID, PARTLABEL), found the way mount(8)
    finds it: libblkid's udev symlinks, else its scan of the block devices (read-only probes;
    libblkid keeps its cache in /run/blkid as it does for mount). None when no device has it or
    the binding is missing."""
    try:
        found = _library().evaluate_tag(tag, value)
    except (DeviceProblem, RuntimeError, OSError, ValueError):
        return None
    return str(found) if found else None


def probe_signatures(path: str) -> list[Fact[str]]:
    """Every signature libblkid finds on `path`: a filesystem, swap, RAID or LVM member (TYPE, with
    USAGE) and a partition table (PTTYPE). Empty when the device holds nothing libblkid knows.
    Raises DeviceProblem when the device cannot be opened."""
    lib = _library()
    probe = _open(path)
    probe.enable_superblocks(True)
    probe.set_superblocks_flags(lib.SUBLKS_TYPE | lib.SUBLKS_USAGE | lib.SUBLKS_VERSION)
    probe.enable_partitions(True)
    note: str | None = None
    try:
        found = bool(probe.do_safeprobe())
    except RuntimeError:
        # Ambivalent results (two filesystems, or a filesystem and a RAID signature): a full probe
        # still names the first one, which is what matters before overwriting.
        probe.reset_probe()
        found = bool(probe.do_fullprobe())
        note = "libblkid found more than one signature (ambivalent); the first is reported"
    if not found:
        return []
    facts: list[Fact[str]] = []
    fstype = _value(probe, "TYPE")
    if fstype is not None:
        usage = _value(probe, "USAGE")
        version = _value(probe, "VERSION")
        raw = " ".join(
            f"{k}={v}" for k, v in (("TYPE", fstype), ("USAGE", usage), ("VERSION", version)) if v
        )
        facts.append(Fact[str](value=fstype, source=SOURCE, path=path, raw=raw, note=note))
    pttype = _value(probe, "PTTYPE")
    if pttype is not None:
        facts.append(Fact[str](value=pttype, source=SOURCE, path=path, raw=f"PTTYPE={pttype}",
                               note="partition table"))
    return facts
