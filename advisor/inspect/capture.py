"""Capture: write the files the advisor read (and nothing else) into a folder shaped like the
system root, plus the live-only probe results, so that `--sysroot DIR` replays the same inventory,
and (as root) what `audit` reads: xfs_info / xfs_db -r outputs, the kernel's XFS options, fstab.

sysfs is a forest of symlinks (sys/block/sda -> ../devices/...), and the advisor reads through
them, so the capture recreates each symlink on the way to every file, as lsblk's dumps do.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from advisor.errors import AdvisorError, BadInput
from advisor.inspect.devices import inspect_with_probes
from advisor.inspect.mounts import xfs_mounts
from advisor.inspect.probes import PROBES_FILE
from advisor.models.device import Inventory
from advisor.models.environment import PAGE_SIZE_FILE
from advisor.system.auditfiles import (
    AUDIT_DIR,
    live_kernel_config,
    run_format_tool,
    sysroot_fstab,
)
from advisor.system.files import OwnFolder, read_text
from advisor.system.sysroot import SysRoot
from advisor.system.versions import XFSPROGS_FILE, xfsprogs_version


@dataclass(frozen=True)
class CaptureResult:
    """What a capture wrote."""

    dest: Path
    files: int
    symlinks: int
    inventory: Inventory


class _RecordingRoot(SysRoot):
    """A SysRoot that also keeps the text it read, so the capture holds what the inspection saw
    even when a file changes between reading and copying (a loop device attached meanwhile)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, recorded=set())
        self.contents: dict[str, str] = {}

    def read(self, rel: str) -> str | None:
        text = super().read(rel)
        if text is not None:
            self.contents[rel.lstrip("/")] = text
        return text

    def read_many(self, folder: str, names: Sequence[str]) -> list[str | None]:
        texts = super().read_many(folder, names)
        folder = folder.strip("/")
        for name, text in zip(names, texts, strict=True):
            if text is not None:
                self.contents[f"{folder}/{name}"] = text
        return texts


class _Mirror:
    def __init__(self, source: Path, dest: OwnFolder, contents: dict[str, str]) -> None:
        self.source = source
        self.dest = dest
        self.written: set[str] = set()
        self.contents = contents
        self.files = 0
        self.symlinks = 0

    def _resolve(self, rel: str) -> str | None:
        """The physical relative path of `rel` in the source, recreating every symlink met on the
        way (only under sys/: /proc/self is a per-process link best stored as a plain folder)."""
        parts = [p for p in rel.split("/") if p]
        current = ""
        for i, part in enumerate(parts):
            current = f"{current}/{part}" if current else part
            if not current.startswith("sys/"):
                continue
            live = self.source / current
            if live.is_symlink():
                target = os.readlink(live)
                self._link(current, target)
                if i == len(parts) - 1:
                    return None  # the link itself was the thing read (readlink)
                current = os.path.normpath(os.path.join(os.path.dirname(current), target))
                if current.startswith("..") or os.path.isabs(current):
                    return None  # points outside the root: nothing to mirror
        return current

    def _link(self, rel: str, target: str) -> None:
        if self.dest.lexists(rel):
            return
        self.dest.symlink(rel, target)
        self.symlinks += 1

    def copy(self, rel: str) -> None:
        physical = self._resolve(rel)
        if physical is None:
            return
        live = self.source / physical
        if live.is_dir():
            self.dest.makedirs(physical)
            # Entries that are links or folders are what listdir callers use (partitions, slaves,
            # holders, mq); plain files come in only when they were read.
            for entry in os.listdir(live):
                if (live / entry).is_symlink():
                    self._link(f"{physical}/{entry}", os.readlink(live / entry))
                elif (live / entry).is_dir():
                    self.dest.makedirs(f"{physical}/{entry}")
        elif (rel in self.contents or live.is_file()) and physical not in self.written:
            text = self.contents.get(rel)
            if text is None:
                try:
                    text = live.read_bytes().decode("utf-8", "replace")
                except OSError:
                    return  # unreadable: the replay sees it missing, as the live run did
            self.dest.write(physical, text if text.endswith("\n") else text + "\n")
            self.written.add(physical)
            self.files += 1


def capture(source: SysRoot, dest: Path) -> CaptureResult:
    """Inspect `source` while recording every path read, then copy those paths into `dest`."""
    folder, made = OwnFolder.make(dest, "capture folder")
    try:
        recorder = _RecordingRoot(source.root)
        inventory, probes = inspect_with_probes(recorder, probe=True)
        recorder.read(PAGE_SIZE_FILE)  # the block size rule reads the page size
        mirror = _Mirror(source.root, folder, recorder.contents)
        for rel in sorted((recorder.recorded or set()) - {PROBES_FILE}):
            mirror.copy(rel)
        if probes.probed:
            folder.write(PROBES_FILE, probes.to_json())
        if source.live:
            version = xfsprogs_version()
            if version:  # the host's own mkfs.xfs: the proposal's flags are for that one
                folder.write(XFSPROGS_FILE, f"mkfs.xfs version {version}\n")
                mirror.files += 1
        if source.live and os.geteuid() == 0:
            mirror.files += _capture_audit_files(recorder, inventory, folder)
        elif not source.live:
            # A host's root mounted elsewhere (or a capture): its fstab, for `audit` on the copy.
            fstab = sysroot_fstab(source)
            if fstab.is_file():
                folder.write(f"{AUDIT_DIR}/fstab", read_text(fstab, "fstab",
                                                                 errors="surrogateescape"))
                mirror.files += 1
    except OSError as err:  # the disk filled up, a link appeared where a file was to go
        raise BadInput(f"capture into {dest} failed: {err.strerror or err} (what it wrote is "
                       "incomplete: remove it)") from None
    finally:
        if made:
            folder.remove_if_empty()  # an inspection that failed leaves nothing
        folder.close()
    return CaptureResult(dest=dest, files=mirror.files, symlinks=mirror.symlinks,
                         inventory=inventory)


def _capture_audit_files(root: SysRoot, inventory: Inventory, dest: OwnFolder) -> int:
    """Write what the audit reads that a sysfs capture lacks into dest/AUDIT_DIR: every XFS
    device's xfs_info (or xfs_db -r) output, the kernel's XFS options, /etc/fstab; and the
    kernel release (the xfs_admin upgrades depend on it). Read-only on the devices; written
    through the capture's own folder (no link followed). The number of files written."""
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
            tool, text = run_format_tool(device.path, mount.entry.mountpoint if mount else None)
        except AdvisorError:
            continue  # unreadable now: the replay reports it as the live audit would
        written[f"{device.name}.{tool}"] = text
    dest.makedirs(AUDIT_DIR)
    for name, text in written.items():
        dest.write(f"{AUDIT_DIR}/{name}", text)
    return len(written)
