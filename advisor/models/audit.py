"""What `xfs-advisor audit` reports: findings per filesystem, each with how bad it is, what shows
it, which rule says so, and how to fix it (at the next mount, offline with xfs_admin, or only with
a new mkfs)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from advisor.models.base import Model
from advisor.models.proposal import MkfsGeometry

Severity = Literal["breaks", "will-break", "performance", "info"]

#: Worst first: `--fail-on` counts a severity and every one before it.
SEVERITIES: tuple[Severity, ...] = ("breaks", "will-break", "performance", "info")

FixKind = Literal["next-mount", "xfs_admin-offline", "new-mkfs", "none"]


def at_least(severity: Severity, threshold: Severity) -> bool:
    """True when `severity` is as bad as `threshold` or worse."""
    return SEVERITIES.index(severity) <= SEVERITIES.index(threshold)


class Finding(Model):
    """One thing wrong, or worth knowing, about a filesystem, its fstab line or its mount."""

    rule: str
    """Rule id: a rule book id (`nobarrier`, `attr2`...) or an audit check (`audit-v4`...);
    `xfs-advisor explain ID` tells more about rule book ids."""
    severity: Severity
    """breaks (fails now or at the next mount), will-break (on a named kernel or date),
    performance (costs speed or space), info (worth knowing)."""
    title: str
    """One line saying what is wrong."""
    evidence: str
    """What shows it: the fstab line, the mount options in effect, the xfs_info field."""
    source: str
    """Where the fact about the kernel or the tools comes from (a document, a kernel version)."""
    when: str | None = None
    """For will-break: the kernel or date from which it breaks."""
    due_kernel: str | None = None
    """For will-break: the first upstream kernel (X.Y) that may refuse it, when a kernel is
    known (null: due on a date, or not by a kernel); `audit --kernel` makes it breaks from
    there."""
    fix: str
    """What to do, in words."""
    fix_kind: FixKind
    """next-mount (edit fstab or remount), xfs_admin-offline (unmounted, in place), new-mkfs
    (data moved to a new filesystem), none (nothing to do)."""
    fix_command: list[str] | None = None
    """The command that fixes it, when there is one (argv; run it unmounted for xfs_admin)."""


class TodayProposal(Model):
    """What the advisor would propose today for the device, for the workload answers given
    (none: the defaults' view): the "if you made it again" side of the findings marked
    new-mkfs."""

    mkfs_command: str
    """The mkfs.xfs line (it would destroy the data: move it first)."""
    mount_options: list[str]
    """Mount options beyond the defaults it would use."""
    mount_options_missing: list[str] = Field(default_factory=list)
    """Of those, the ones the running mount lacks (they can change at the next mount)."""


class FilesystemAudit(Model):
    """One XFS filesystem (or one fstab line for XFS) and what the audit found."""

    device: str | None
    """The block device holding it (null: an fstab line whose device is not here)."""
    mountpoint: str | None
    """Where it is mounted now, or where fstab mounts it."""
    mounted: bool
    """True when mounted now (options read from mountinfo)."""
    read_with: Literal["xfs_info", "xfs_db -r"] | None
    """How the on-disk format was read (null: not read)."""
    geometry: MkfsGeometry | None = None
    """The on-disk geometry and features that were read."""
    ascii_ci: bool = False
    """True for a filesystem made with `-n version=ci` (ASCII case-insensitive names)."""
    mount_options: list[str] = Field(default_factory=list)
    """Options in effect (mountinfo: per-mount then superblock options)."""
    fstab_line: int | None = None
    """Line number of the fstab line for it (null: none)."""
    fstab_options: list[str] = Field(default_factory=list)
    """Options of that fstab line."""
    findings: list[Finding] = Field(default_factory=list)
    """What the audit found, worst first."""
    today: TodayProposal | None = None
    """What the advisor would propose for the device today (null: not asked, e.g. no device)."""


class AuditDocument(Model):
    """What `xfs-advisor audit --json` prints."""

    schema_version: int = 1
    """Version of this document's shape."""
    kernel: str | None
    """The running kernel the findings were judged against."""
    xfsprogs: str | None
    """The local xfsprogs version (xfs_admin upgrades depend on it)."""
    fstab: str | None
    """The fstab file read (null: none)."""
    fail_on: Severity
    """The severity at or above which the exit status is 6."""
    filesystems: list[FilesystemAudit]
    """Every filesystem audited, in the order found."""
    counts: dict[str, int]
    """Findings per severity."""
    target_kernel: str | None = None
    """--kernel: the kernel the findings were judged for as well (a will-break finding due by
    it is breaks); null: the running kernel only."""
