"""Findings about mount options: what fstab says against what today's kernel accepts and what the
running mount has in effect. Pure: the obsolete advice comes from the rule book, the rest from
Documentation/admin-guide/xfs.rst and mount(8)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from advisor.audit.fstab import FstabEntry
from advisor.engine.context import KiB, mkfs_size
from advisor.models.audit import Finding, Severity
from advisor.models.rule import Rule
from advisor.models.units import format_size, parse_size

XFS_DOC = "Documentation/admin-guide/xfs.rst"


#: The deprecated mount options' scheduled removal (Documentation/admin-guide/xfs.rst).
REMOVAL_2025 = "September 2025"
REMOVAL_DUE = date(2025, 9, 1)
#: The first kernel that may refuse attr2 and ikeep: 6.18-rc1 removed them, 6.18-rc3 took them
#: back as ignored ("xfs: loudly complain about defunct mount options"), and 6.18 mounts with
#: them (checked on a real mount); the removal is overdue, so any later kernel may drop them.
REMOVAL_AFTER = "6.19"


def when_text(when: str | None, today: date) -> str | None:
    """A scheduled removal said as what it is on `today`: still ahead, or overdue (Linux 6.18
    still accepts attr2 and ikeep, checked on a real mount; the next kernel may not)."""
    if when != REMOVAL_2025:
        return when
    if today < REMOVAL_DUE:
        return f"removal scheduled for {when} ({XFS_DOC})"
    return (f"removal was scheduled for {when} and is due: Linux 6.18 still mounts with it, any "
            f"later kernel may refuse it ({XFS_DOC})")


@dataclass(frozen=True)
class Verdict:
    """How the audit rates a piece of obsolete advice found in mount options."""

    severity: Severity
    when: str | None
    fix: str
    due_kernel: str | None = None
    """The first kernel that may refuse it (see Finding.due_kernel)."""
    says_today: bool = False
    """The fix already says what the rule's `today` text says (not repeated after it)."""


#: The rule book's obsolete mount advice, rated for the audit (other obsolete rules are mkfs
#: options, which a mount never carries).
VERDICTS = {
    "nobarrier": Verdict("breaks", None, "remove nobarrier from the fstab line: kernels since "
                         "4.19 refuse it (\"Unknown parameter\") and the filesystem does not "
                         "mount (a root filesystem does not boot)"),
    "barrier": Verdict("breaks", None, "remove barrier from the fstab line: kernels since 4.19 "
                       "refuse it"),
    "delaylog": Verdict("breaks", None, "remove the option from the fstab line: kernels since "
                        "4.0 refuse it"),
    "attr2": Verdict("will-break", REMOVAL_2025,
                     "remove attr2/noattr2 from the fstab line: attr2 is always on, and the "
                     "option is ignored with a warning today", REMOVAL_AFTER, says_today=True),
    "ikeep": Verdict("will-break", REMOVAL_2025,
                     "remove ikeep/noikeep from the fstab line (ignored today)", REMOVAL_AFTER,
                     says_today=True),
    "logbufs-8": Verdict("info", None, "drop logbufs=8: it is the default", says_today=True),
    "inode64": Verdict("info", None, "drop inode64: it is the default since Linux 3.7",
                       says_today=True),
    "nodiratime": Verdict("info", None, "drop nodiratime: noatime already implies it"),
}

def _words(text: str) -> frozenset[str]:
    """A set of names written as text, one table per line of topic."""
    return frozenset(text.split())


#: Options the kernel's XFS or the VFS accept (mount(8), xfs.rst), by key.
KNOWN = _words("""
allocsize attr2 noattr2 dax discard nodiscard grpid bsdgroups nogrpid sysvgroups filestreams
ikeep noikeep inode32 inode64 largeio nolargeio logbufs logbsize logdev noalign norecovery nouuid
noquota uquota usrquota quota uqnoenforce qnoenforce gquota grpquota gqnoenforce pquota prjquota
pqnoenforce sunit swidth swalloc wsync rtdev
ro rw sync async atime noatime relatime norelatime strictatime nostrictatime lazytime nolazytime
diratime nodiratime dev nodev exec noexec suid nosuid dirsync mand nomand iversion noiversion
silent loud defaults auto noauto nofail user users nouser owner group _netdev context fscontext
defcontext rootcontext nosymfollow
""")

#: Options mount(8) or systemd act on, or defaults the kernel never shows in mountinfo.
NOT_SHOWN = _words("""
defaults auto noauto nofail user users nouser owner group _netdev rw exec suid dev async atime
diratime nolazytime noiversion nostrictatime silent loud strictatime norelatime iversion
nolargeio nodiscard nogrpid sysvgroups
attr2 noattr2 ikeep noikeep
""")

#: Mount points a system needs to boot: a missing device there is fatal anyway.
SYSTEM_MOUNTS = frozenset({"/", "/usr", "/var", "/boot", "/boot/efi", "/home", "/tmp"})


def key(option: str) -> str:
    """`logbufs=8` -> `logbufs`."""
    return option.split("=", 1)[0]


def _hits(rule: Rule, options: Sequence[str]) -> list[str]:
    assert rule.obsolete is not None
    return [o for o in options if o in rule.obsolete.matches or key(o) in rule.obsolete.matches]


def obsolete_findings(options: Sequence[str], where: str, obsolete: Sequence[Rule],
                      today: date | None = None) -> list[Finding]:
    """The rule book's obsolete mount advice in `options` (`where`: the fstab line or the
    mount, as evidence)."""
    found = []
    for rule in obsolete:
        verdict = VERDICTS.get(rule.id)
        hits = _hits(rule, options) if verdict and rule.obsolete else []
        if rule.id == "nodiratime" and not {"noatime"} & set(options):
            hits = []
        if hits and verdict and rule.obsolete:
            found.append(Finding(
                rule=rule.id, severity=verdict.severity, title=rule.title,
                evidence=f"{', '.join(hits)} in {where}",
                source=f"{rule.source}; since {rule.obsolete.since}",
                when=when_text(verdict.when, today or date.today()),
                due_kernel=verdict.due_kernel,
                fix=verdict.fix if verdict.says_today else f"{verdict.fix}. {rule.obsolete.today}",
                fix_kind="next-mount"))
    return found


def obsolete_options(options: Sequence[str], obsolete: Sequence[Rule]) -> set[str]:
    """The options the rule book's obsolete advice covers (reported as that, not as typos)."""
    return {o for rule in obsolete if rule.id in VERDICTS for o in _hits(rule, options)}


def unknown_findings(entry: FstabEntry, covered: set[str]) -> list[Finding]:
    """Options neither XFS nor the VFS know (a typo): the kernel refuses them. `covered`:
    options already reported as obsolete advice."""
    unknown = [o for o in entry.options if o not in covered and key(o) not in KNOWN
               and not o.startswith(("x-", "X-", "comment="))]
    return [Finding(
        rule="audit-unknown-option", severity="breaks",
        title=f"fstab line {entry.line} has an option no kernel knows: {', '.join(unknown)}",
        evidence=f"fstab line {entry.line}: {entry.raw}",
        source=f"{XFS_DOC}; mount(8); measured on 6.18: \"xfs: Unknown parameter\"",
        fix="correct or remove it: the next mount (or boot) fails on it", fix_kind="next-mount",
    )] if unknown else []


#: logbsize values a version 2 log takes (xfs(5): 16k and 32k, and 64k, 128k, 256k).
LOGBSIZES = tuple(16 * KiB << i for i in range(5))
#: allocsize: the kernel keeps the lowest power of two of the value, which must lie from the
#: page size to 1 GiB (xfs(5); fs/xfs/xfs_super.c, XFS_MIN_IO_LOG..XFS_MAX_IO_LOG).
ALLOCSIZE_RANGE = (4 * KiB, 1 << 30)
#: logbufs: from 2 to 8 (xfs(5)).
LOGBUFS_RANGE = (2, 8)
#: Where the value ranges are checked: on a real mount of Linux 6.18 (tests/audit).
VALUE_SOURCE = "xfs(5); fs/xfs/xfs_super.c; checked against mount on Linux 6.18"


def _value_finding(entry: FstabEntry, option: str, why: str, fix: str,
                   severity: Severity = "breaks") -> Finding:
    return Finding(
        rule="audit-mount-value", severity=severity,
        title=f"fstab line {entry.line}: {option} " + (
            "is refused by the kernel" if severity == "breaks" else "does not do what it says"),
        evidence=f"fstab line {entry.line}: {option}: {why}", source=VALUE_SOURCE,
        fix=fix, fix_kind="next-mount")


def _size(text: str) -> int | None:
    """A mount option's size (`32k`, `1g`, `65536`), None when it is not one."""
    try:
        return parse_size(text)
    except ValueError:
        return None


def value_findings(entry: FstabEntry) -> list[Finding]:
    """Values the kernel refuses at mount (allocsize, logbsize, logbufs out of range), or takes
    as something else (an allocsize that is not a power of two)."""
    found = []
    for option in entry.options:
        name, _, text = option.partition("=")
        if name == "logbsize":
            size = _size(text)
            if size not in LOGBSIZES:
                found.append(_value_finding(
                    entry, option, "a version 2 log takes 16k, 32k, 64k, 128k or 256k",
                    "use one of 16k, 32k, 64k, 128k, 256k (or drop it: 32k, or the log stripe "
                    "unit when larger); the next mount fails on this one"))
        elif name == "allocsize":
            size = _size(text)
            low = size & -size if size else 0
            if not ALLOCSIZE_RANGE[0] <= low <= ALLOCSIZE_RANGE[1]:
                found.append(_value_finding(
                    entry, option, "allocsize must be a power of two from the page size (4k) "
                    "to 1g", "use a power of two from 4k to 1g (or drop it: dynamic "
                    "preallocation); the next mount fails on this one"))
            elif size != low:
                found.append(_value_finding(
                    entry, option, f"not a power of two: the kernel uses {format_size(low)}, its "
                    "lowest power of two", f"write allocsize={mkfs_size(low)}, what the kernel "
                    "uses, or the power of two meant", "info"))
        elif name == "logbufs":
            count = int(text) if text.isdigit() else 0
            if not LOGBUFS_RANGE[0] <= count <= LOGBUFS_RANGE[1]:
                found.append(_value_finding(
                    entry, option, "logbufs takes 2 to 8", "use 2 to 8 (or drop it: 8, the "
                    "default); the next mount fails on this one"))
    return found


def log_stripe_findings(entry: FstabEntry, log_sunit_bytes: int) -> list[Finding]:
    """A logbsize below the filesystem's log stripe unit: the kernel refuses the mount ("logbuf
    size must be greater than or equal to log stripe size")."""
    for option in entry.options:
        name, _, text = option.partition("=")
        size = _size(text) if name == "logbsize" else None
        if size in LOGBSIZES and log_sunit_bytes and size is not None \
                and size < log_sunit_bytes:
            return [_value_finding(
                entry, option, f"below the filesystem's {mkfs_size(log_sunit_bytes)} log stripe "
                "unit (xfs_info: log sunit): \"logbuf size must be greater than or equal to log "
                "stripe size\"", f"use logbsize={mkfs_size(max(log_sunit_bytes, 32 * KiB))} or "
                "larger, or drop it (the default follows the log stripe unit); the next mount "
                "fails on this one")]
    return []


def _shown(option: str) -> str:
    """The option as mountinfo writes it (quota names differ)."""
    return {"quota": "usrquota", "uquota": "usrquota", "gquota": "grpquota",
            "pquota": "prjquota", "bsdgroups": "grpid", "dax": "dax=always"}.get(option, option)


def differs_findings(entry: FstabEntry, in_effect: Sequence[str], covered: set[str]
                     ) -> list[Finding]:
    """Known options of the fstab line the running mount lacks: fstab was edited since the mount,
    or the option never took; the next mount differs from today's."""
    effect = set(in_effect)
    missing = [o for o in entry.options if key(o) in KNOWN and o not in NOT_SHOWN
               and o not in covered
               and _shown(o) not in effect]
    return [Finding(
        rule="audit-fstab-differs", severity="info",
        title=f"the running mount lacks {', '.join(missing)} from fstab line {entry.line}",
        evidence=f"fstab: {','.join(entry.options)}; in effect: {','.join(in_effect)}",
        source="mountinfo",
        fix="remount (or reboot) to check that the fstab line mounts as intended",
        fix_kind="next-mount")] if missing else []


def nofail_findings(entry: FstabEntry) -> list[Finding]:
    """A data filesystem without nofail: if its disk is missing at boot, boot stops."""
    if entry.mountpoint in SYSTEM_MOUNTS or {"nofail", "noauto"} & set(entry.options):
        return []
    return [Finding(
        rule="audit-nofail", severity="info",
        title=f"{entry.mountpoint} stops the boot if its device is missing",
        evidence=f"fstab line {entry.line}: no nofail or noauto",
        source="systemd.mount(5)",
        fix="for a data disk that may be absent, add nofail,x-systemd.device-timeout=30s",
        fix_kind="next-mount")]


def fstab_findings(entry: FstabEntry, in_effect: Sequence[str] | None,
                   obsolete: Sequence[Rule]) -> list[Finding]:
    """Everything about one fstab line (`in_effect`: the running mount's options, None when
    not mounted)."""
    covered = obsolete_options(entry.options, obsolete)
    found = obsolete_findings(entry.options, f"fstab line {entry.line}", obsolete)
    found += unknown_findings(entry, covered)
    found += value_findings(entry)
    if in_effect is not None:
        found += differs_findings(entry, in_effect, covered)
    return found + nofail_findings(entry)
