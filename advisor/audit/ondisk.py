"""Findings about the on-disk format and the layout against today's device. Pure: it takes the
geometry read from the filesystem and the facts of the host (kernel, xfsprogs, what the device
reports now, what the advisor would make today)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from advisor.audit.options import XFS_DOC
from advisor.models.audit import Finding, FixKind, Severity
from advisor.models.proposal import MkfsGeometry

#: xfs_admin -O bigtime=1 / inobtcount=1 (upgrade in place) came with xfsprogs 5.11; the kernel
#: reads both features since Linux 5.10.
UPGRADE_XFSPROGS = (5, 11)
UPGRADE_KERNEL = (5, 10)
#: More AGs than this many times what mkfs.xfs picks today for the size (and at least
#: AG_MINIMUM of them): a filesystem grown far beyond its first size.
AG_FACTOR = 8
AG_MINIMUM = 64
#: A log smaller than this share of what the advisor would make today.
LOG_SHARE = 0.5


def version(text: str | None) -> tuple[int, int] | None:
    """'6.18.44-fc' -> (6, 18)."""
    m = re.match(r"(\d+)\.(\d+)", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


@dataclass(frozen=True)
class Host:
    """What the findings depend on besides the filesystem."""

    kernel: str | None
    xfsprogs: str | None
    v4_supported: bool | None = None
    """CONFIG_XFS_SUPPORT_V4 of the running kernel (None: its config is not readable)."""
    ascii_ci_supported: bool | None = None
    """CONFIG_XFS_SUPPORT_ASCII_CI of the running kernel."""
    must_mount_on: str | None = None
    """The answered must_mount_on_kernel (as the workload normalises it: "5.4", "rhel8")."""
    must_mount_features: tuple[tuple[str, bool], ...] = ()
    """Feature -> whether that kernel mounts a filesystem with it (bigtime, inobtcount)."""

    def can_upgrade(self) -> bool:
        """True when this xfsprogs and this kernel can add bigtime/inobtcount in place."""
        progs, kernel = version(self.xfsprogs), version(self.kernel)
        return bool(progs and kernel and progs >= UPGRADE_XFSPROGS and kernel >= UPGRADE_KERNEL)


def _on(geometry: MkfsGeometry, feature: str) -> bool:
    return geometry.features.get(feature, 0) == 1


def _v4(host: Host) -> Finding:
    refused = host.v4_supported is False
    return Finding(
        rule="audit-v4", severity="breaks" if refused else "will-break",
        title="V4 filesystem (crc=0): " + ("this kernel cannot mount it" if refused
                                           else "kernels stop mounting it in September 2030"),
        evidence="xfs_info: crc=0" + ("; CONFIG_XFS_SUPPORT_V4 is not set in the running kernel"
                                      if refused else ""),
        source=f"{XFS_DOC}: V4 deprecation; rule crc-0", when="September 2030",
        fix="make a new V5 filesystem (mkfs.xfs defaults) and move the data to it "
        "(xfsdump/xfsrestore or rsync); no in-place upgrade exists",
        fix_kind="new-mkfs")


def _ascii_ci(host: Host) -> Finding:
    refused = host.ascii_ci_supported is False
    return Finding(
        rule="audit-ascii-ci", severity="breaks" if refused else "will-break",
        title="ASCII case-insensitive names (ascii-ci=1): " + (
            "this kernel cannot mount it" if refused else "kernels stop mounting it in "
            "September 2030"),
        evidence="xfs_info: ascii-ci=1", source=f"{XFS_DOC}: ascii-ci deprecation",
        when="September 2030",
        fix="make a new filesystem without -n version=ci and move the data", fix_kind="new-mkfs")


def _upgrade(feature: str, device: str, host: Host, *, severity: Severity, title: str,
             when: str | None) -> Finding:
    ok = host.can_upgrade()
    needs = (f"xfsprogs >= {'.'.join(map(str, UPGRADE_XFSPROGS))} and Linux >= "
             f"{'.'.join(map(str, UPGRADE_KERNEL))}")
    mounts = dict(host.must_mount_features).get(feature)
    if ok and host.must_mount_on is not None and mounts is False:
        return Finding(rule=f"audit-no-{feature}", severity=severity, title=title,
                       evidence=f"xfs_info: {feature}=0", source="xfs_admin(8); xfsprogs 5.11",
                       when=when, fix=(
                           f"keep it as it is: `xfs_admin -O {feature}=1` is one-way, and "
                           f"{host.must_mount_on} (must_mount_on_kernel) cannot mount a "
                           f"filesystem with {feature}; upgrade once that need is gone"),
                       fix_kind="none")
    target = (f"{host.must_mount_on} (must_mount_on_kernel) mounts it" if mounts else
              "kernels before Linux 5.10 can no longer mount the result (check any "
              "must_mount_on_kernel target, rescue media included)")
    fix = (f"unmount it, then `xfs_admin -O {feature}=1 {device}` (in place; needs {needs}; "
           "this host has both). xfs_admin runs a full xfs_repair pass to make the change, "
           "which takes as long as a repair of the filesystem; it is one-way (no xfs_admin "
           f"turns {feature} off again), and {target}" if ok
           else
           f"needs {needs} for `xfs_admin -O {feature}=1` (this host: xfsprogs "
           f"{host.xfsprogs or 'unknown'}, kernel {host.kernel or 'unknown'}); or a new mkfs")
    return Finding(rule=f"audit-no-{feature}", severity=severity,
                   title=title, evidence=f"xfs_info: {feature}=0",
                   source="xfs_admin(8); xfsprogs 5.11", when=when, fix=fix,
                   fix_kind="xfs_admin-offline" if ok else "new-mkfs",
                   fix_command=["xfs_admin", "-O", f"{feature}=1", device] if ok else None)


def _v5_findings(geometry: MkfsGeometry, device: str, host: Host) -> list[Finding]:
    """What a V5 filesystem made by an older mkfs.xfs lacks."""
    found = []
    if not _on(geometry, "bigtime"):
        found.append(_upgrade("bigtime", device, host, severity="will-break",
                              title="no bigtime: timestamps cannot go past January 2038",
                              when="2038-01-19 (timestamps)"))
    if _on(geometry, "finobt") and not _on(geometry, "inobtcount"):
        found.append(_upgrade("inobtcount", device, host, severity="performance",
                              title="no inobtcount: every mount walks the inode btrees to size "
                              "its reservations (slow mounts of large filesystems)", when=None))
    return found


def _mkfs_only(geometry: MkfsGeometry) -> list[Finding]:
    """Features only a new mkfs gives."""
    checks: list[tuple[str, Severity, str]] = [
        ("ftype", "performance", "ftype=0: directory entries lack the file type, so readdir "
         "callers (find, rsync, overlayfs refuses it) stat every inode"),
        ("finobt", "performance", "no finobt: allocating an inode searches the whole inode "
         "btree for free ones on an aged filesystem"),
        ("sparse", "info", "no sparse inodes: inode allocation fails on a fragmented "
         "filesystem while free space remains"),
        ("reflink", "info", "no reflink: no `cp --reflink`, no shared extents for copies"),
    ]
    found = []
    for feature, severity, title in checks:
        if geometry.features.get(feature) == 0:
            found.append(Finding(rule=f"audit-no-{feature}", severity=severity,
                                 title=title, evidence=f"xfs_info: {feature}=0",
                                 source="mkfs.xfs(8) (defaults since xfsprogs 3.2.3 to 5.1)",
                                 fix="only a new mkfs (today's defaults) adds it; move "
                                 "the data", fix_kind="new-mkfs"))
    return found


def format_findings(geometry: MkfsGeometry, ascii_ci: bool, device: str, host: Host
                    ) -> list[Finding]:
    """Findings about the on-disk format."""
    found = []
    if not _on(geometry, "crc"):
        found.append(_v4(host))
    else:
        found += _v5_findings(geometry, device, host)
    if ascii_ci:
        found.append(_ascii_ci(host))
    return found + _mkfs_only(geometry)


@dataclass(frozen=True)
class Today:
    """What the device and the advisor say today, for the layout checks."""

    stripe_unit: int | None
    """The stripe unit the device stack reports now, in bytes (None: none)."""
    stripe_width: int | None
    stripe_source: str
    default_agcount: int | None
    """What mkfs.xfs picks today for this size."""
    proposed_log_blocks: int | None
    """The log the advisor would make today, in blocks of this filesystem."""
    reports_stripes: bool = True
    """The device is one that always reports its stripe (md; LVM or dm above one): a stripe it
    no longer reports is stale. A disk, a hardware RAID LUN or a partition may never report one
    (guide 2.1.4), so a stripe set at mkfs by hand is not stale there."""


STRIPE_SOURCE = "guide 2.1.4; mkfs.xfs(8) su/sw; xfs(5) mount sunit/swidth, noalign"


def _stripe(geometry: MkfsGeometry, today: Today) -> list[Finding]:
    su = geometry.sunit_blocks * geometry.block_size
    sw = geometry.swidth_blocks * geometry.block_size
    dev_su, dev_sw = today.stripe_unit or 0, today.stripe_width or 0
    if (su, sw) == (dev_su, dev_sw):
        return []
    evidence = (f"xfs_info: sunit={geometry.sunit_blocks} swidth={geometry.swidth_blocks} blks "
                f"({su} / {sw} bytes); the device reports {dev_su} / {dev_sw} bytes "
                f"({today.stripe_source})")
    kind: FixKind
    if su and dev_su:
        title, fix, kind = ("stripe no longer matches the device (a RAID reshape?)",
                            f"mount with sunit={dev_su // 512},swidth={dev_sw // 512} (512-byte "
                            "units) so new allocations align", "next-mount")
    elif su and not today.reports_stripes:
        return [Finding(
            rule="audit-stripe", severity="info",
            title="stripe set at mkfs, which the device does not report (a hardware RAID LUN?)",
            evidence=evidence, source=STRIPE_SOURCE,
            fix="nothing if it is the controller's geometry (hardware RAID often hides it: "
                "guide 2.1.4); if the controller's stripe differs, mount with sunit=,swidth= "
                "of the controller's stripe (512-byte units)", fix_kind="none")]
    elif su:
        title, fix, kind = ("stripe set but the device reports none now (moved, or a reshape)",
                            "mount with noalign to stop aligning new data to the old stripe, or "
                            "with sunit=,swidth= (512-byte units) of the new geometry; existing "
                            "data keeps its layout", "next-mount")
    else:
        title, fix, kind = ("never aligned to the stripe the device reports",
                            "a new mkfs picks the stripe up (mkfs.xfs defaults); move the data",
                            "new-mkfs")
    return [Finding(rule="audit-stripe", severity="performance", title=title, evidence=evidence,
                    source=STRIPE_SOURCE, fix=fix, fix_kind=kind)]


def _agcount(geometry: MkfsGeometry, today: Today) -> list[Finding]:
    default = today.default_agcount
    if not default or geometry.agcount < max(AG_MINIMUM, AG_FACTOR * default):
        return []
    return [Finding(
        rule="audit-agcount", severity="performance",
        title=f"{geometry.agcount} allocation groups of {geometry.agsize_bytes >> 20} MiB: grown "
        "far beyond its first size",
        evidence=f"xfs_info: agcount={geometry.agcount}, agsize={geometry.agsize_blocks} blks; "
        f"mkfs.xfs makes {default} today for {geometry.size_bytes >> 20} MiB",
        source="guide 2.1.2.2 (a few AGs per device, growfs adds AGs of the first size)",
        fix="a new mkfs at today's size; move the data", fix_kind="new-mkfs")]


def _log(geometry: MkfsGeometry, today: Today) -> list[Finding]:
    want = today.proposed_log_blocks
    if not want or geometry.log_blocks >= LOG_SHARE * want:
        return []
    return [Finding(
        rule="audit-log-size", severity="performance",
        title=f"log of {geometry.log_bytes >> 20} MiB: the advisor would make "
        f"{want * geometry.block_size >> 20} MiB today",
        evidence=f"xfs_info: log blocks={geometry.log_blocks}; proposal: {want} blocks",
        source="mkfs.xfs(8) -l size; xfsprogs mkfs/xfs_mkfs.c calculate_log_size (1/2048 of "
               "the size, >= 64 MiB since xfsprogs 5.15)",
        fix="the internal log cannot grow in place: a new mkfs; move the data",
        fix_kind="new-mkfs")]


def layout_findings(geometry: MkfsGeometry, today: Today) -> list[Finding]:
    """Findings about the layout against what the device and the advisor say today."""
    return _stripe(geometry, today) + _agcount(geometry, today) + _log(geometry, today)
