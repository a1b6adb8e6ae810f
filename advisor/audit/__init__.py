"""`xfs-advisor audit`: the XFS filesystems a host already has, and its fstab, checked against
today's kernel, today's xfsprogs and today's device. Read-only throughout (advisor.audit.host).

host reads; fstab parses; options, ondisk judge (pure); this module puts them together."""

from __future__ import annotations

import os
from collections.abc import Sequence

from advisor.audit import host as h
from advisor.audit.fstab import FstabEntry, parse_fstab
from advisor.audit.ondisk import UPGRADE_KERNEL, Host, Today, format_findings, layout_findings
from advisor.audit.options import fstab_findings, log_stripe_findings, obsolete_findings
from advisor.errors import AdvisorError, DeviceProblem
from advisor.inspect.mounts import Mount, xfs_mounts
from advisor.models.audit import (
    SEVERITIES,
    AuditDocument,
    FilesystemAudit,
    Finding,
    Severity,
    TodayProposal,
)
from advisor.models.environment import parse_version
from advisor.models.session import Advising, RulesByKind
from advisor.models.workload import Workload
from advisor.system.auditfiles import devno, sysroot_fstab
from advisor.system.files import read_text
from advisor.system.sysroot import SysRoot

DEFAULT_FSTAB = "/etc/fstab"


def _fstab(path: str | None, root: SysRoot) -> tuple[str | None, list[FstabEntry], list[Finding]]:
    """The fstab's XFS lines and its unusable lines as findings. A named file must be readable
    (BadInput otherwise); a missing default (/etc/fstab; in a --sysroot tree a capture's copy,
    else the tree's etc/fstab: a host's root mounted elsewhere) is no fstab."""
    default = DEFAULT_FSTAB if root.live else str(sysroot_fstab(root))
    if path is None and not os.path.exists(default):
        return None, [], []
    name = path or default
    entries, errors = parse_fstab(read_text(name, "fstab"))
    bad = [Finding(rule="audit-fstab-syntax", severity="breaks",
                   title=f"fstab line {e.line} has fewer than three fields",
                   evidence=f"{name}:{e.line}: {e.raw[:120]}", source="fstab(5)",
                   fix="correct or remove the line: mount -a (and boot) stumble on it",
                   fix_kind="next-mount") for e in errors]
    return name, [e for e in entries if e.fstype == "xfs"], bad


def _targets(session: Advising, names: Sequence[str], mounts: list[Mount],
             fstab: list[FstabEntry]) -> list[h.Target]:
    """The filesystems to audit, each with its mount and its fstab line; with no names, every
    XFS mount, every unmounted XFS device libblkid finds, and every XFS fstab line."""
    if names and session.live:
        targets = [h.named_target(n, mounts) for n in names]
    elif names:
        targets = [h.captured_target(n, mounts, session.inventory()) for n in names]
    else:
        targets = [h.Target(m.entry.source, m, maj_min=m.entry.maj_min) for m in mounts]
        mounted = {t.maj_min for t in targets}
        targets += [h.Target(d.path, maj_min=d.maj_min) for d in session.inventory().devices
                    if d.usage.fstype.value == "xfs" and d.maj_min not in mounted
                    and not d.usage.mountpoints]
    for entry in fstab:
        path = h.resolve_spec(entry.spec) if session.live else None
        number = devno(path or "")
        match = next((t for t in targets if (number and t.maj_min == number) or
                      (t.mount and t.mount.entry.mountpoint == entry.mountpoint)), None)
        if match is not None and match.fstab is None:
            match.fstab = entry
        elif match is not None:  # a second line for one filesystem: audited on its own
            targets.append(h.Target(match.device, match.mount, entry, match.maj_min))
        elif not names:  # its device is here without XFS found on it, or not here at all
            targets.append(h.Target(path, fstab=entry, maj_min=number))
    return targets


def _today(session: Advising, target: h.Target, read: h.FormatRead, workload: Workload
           ) -> tuple[Today, TodayProposal | None]:
    """What the device stack reports now and what the advisor would make on it today, for the
    workload answers given (none: the defaults' view)."""
    device = h.device_of(session.inventory(), target.maj_min)
    if device is None:
        return Today(None, None, "device not in the inventory", None, None,
                     reports_stripes=False), None
    stripe = device.stripe
    usable = stripe.sunit_bytes is not None and stripe.ignored_reason is None
    agcount = log_blocks = None
    try:
        proposal = session.propose(device, workload)
    except AdvisorError:
        proposal = None
    if proposal is not None and proposal.mkfs_defaults is not None:
        agcount = proposal.mkfs_defaults.agcount
    if proposal is not None and proposal.check is not None:
        log_blocks = proposal.check.geometry.log_bytes // read.geometry.block_size
    today = Today(stripe.sunit_bytes if usable else None,
                  stripe.swidth_bytes if usable else None, stripe.source, agcount, log_blocks,
                  reports_stripes=device.kind in ("md", "dm"))
    if proposal is None:
        return today, None
    in_effect = set(target.mount.options) if target.mount else set()
    return today, TodayProposal(
        mkfs_command=proposal.mkfs_command, mount_options=proposal.mount_options,
        mount_options_missing=[o for o in proposal.mount_options if o not in in_effect])


def _format_and_layout(session: Advising, root: SysRoot, target: h.Target, host: Host,
                       named: bool, result: FilesystemAudit, workload: Workload
                       ) -> list[Finding]:
    """Read the on-disk format (filling in `result`) and judge it and the layout. A named
    filesystem that cannot be read is an error; in a whole-host audit, a finding: one that
    fstab mounts breaks at the next mount, any other is worth a look."""
    assert target.device is not None
    try:
        device = h.device_of(session.inventory(), target.maj_min)
        read = h.read_format(target.device, target.mount, root,
                             device.name if device else None)
    except DeviceProblem as err:
        if named:
            raise
        fstab = target.fstab is not None and target.mount is None
        # Never `info`: a filesystem the audit cannot read has not been checked, and must not
        # pass a gate as if it had.
        return [Finding(rule="audit-unreadable", severity="breaks",
                        title="no XFS filesystem could be read" + (
                            f" where fstab line {target.fstab.line} mounts one"
                            if fstab and target.fstab else ": it has not been checked"),
                        evidence=err.message, source="xfs_db(8)",
                        fix="check the device and the fstab line", fix_kind="none")]
    result.read_with = "xfs_info" if read.tool == "xfs_info" else "xfs_db -r"
    result.geometry, result.ascii_ci = read.geometry, read.ascii_ci
    today, result.today = _today(session, target, read, workload)
    return (format_findings(read.geometry, read.ascii_ci, target.device, host)
            + layout_findings(read.geometry, today))


def _audit_one(session: Advising, root: SysRoot, target: h.Target, host: Host, named: bool,
               workload: Workload) -> FilesystemAudit:
    """Every finding about one filesystem: its fstab line, its mount, its format, its layout."""
    obsolete = session.rulebook.of_kind("obsolete")
    mount = target.mount
    result = FilesystemAudit(
        device=target.device, mounted=mount is not None, read_with=None,
        mountpoint=mount.entry.mountpoint if mount else (target.fstab.mountpoint
                                                         if target.fstab else None),
        mount_options=mount.options if mount else [],
        fstab_line=target.fstab.line if target.fstab else None,
        fstab_options=list(target.fstab.options) if target.fstab else [])
    findings: list[Finding] = []
    if target.fstab:
        findings += fstab_findings(target.fstab, mount.options if mount else None, obsolete)
    if mount:
        findings += obsolete_findings(mount.per_mount, "the running mount", [
            r for r in obsolete if r.id == "nodiratime"])
    if target.device is None:
        findings.append(Finding(
            rule="audit-no-device", severity="info",
            title=f"the device of fstab line {result.fstab_line} is not on this host",
            evidence=target.fstab.raw if target.fstab else "", source="fstab(5)",
            fix="check the spec; add nofail if the disk may be absent", fix_kind="next-mount"))
    else:
        findings += _format_and_layout(session, root, target, host, named, result, workload)
        g = result.geometry
        if target.fstab and g is not None and g.log_sunit_blocks:
            findings += log_stripe_findings(target.fstab, g.log_sunit_blocks * g.block_size)
    result.findings = sorted(findings, key=lambda f: SEVERITIES.index(f.severity))
    return result


def _mounts_upgrades(book: RulesByKind, target: str | None) -> tuple[tuple[str, bool], ...]:
    """Whether the answered must_mount_on_kernel mounts bigtime and inobtcount: a distribution
    by the kernel-compat rule's table (its backports), a version from Linux 5.10."""
    if target is None:
        return ()
    loaded = book.rules.get("kernel-compat")
    table = getattr(loaded.params, "distributions", None) if loaded else None
    distro = (table or {}).get(target)
    meta = distro.features.get("metadata", {}) if distro is not None else {}
    kernel = parse_version(distro.kernel if distro is not None else target) or (0, 0)
    return tuple((f, meta[f] == 1 if f in meta else kernel >= UPGRADE_KERNEL)
                 for f in ("bigtime", "inobtcount"))


def audit(session: Advising, root: SysRoot, names: Sequence[str] = (), fstab: str | None = None,
          fail_on: Severity = "breaks", workload: Workload | None = None) -> AuditDocument:
    """Audit the named filesystems (mount points or devices), or all of the host's (`root`, the
    session's own), against the fstab file (default /etc/fstab, or a capture's copy). Never
    writes, never mounts. On a capture, what `xfs-advisor capture` recorded stands for xfs_info
    and xfs_db."""
    fstab_name, entries, syntax = _fstab(fstab, root)
    mounts = xfs_mounts(root)
    config = h.kernel_config(root)
    env = session.environment
    answers = workload or Workload()
    host = Host(env.kernel, env.xfsprogs_version, h.supported(config, "CONFIG_XFS_SUPPORT_V4"),
                h.supported(config, "CONFIG_XFS_SUPPORT_ASCII_CI"),
                answers.must_mount_on_kernel,
                _mounts_upgrades(session.rulebook, answers.must_mount_on_kernel))
    targets = _targets(session, names, mounts, entries)
    filesystems = [_audit_one(session, root, t, host, bool(names), answers) for t in targets]
    if syntax:
        filesystems.append(FilesystemAudit(device=None, mountpoint=None, mounted=False,
                                           read_with=None, findings=syntax))
    counts = {s: sum(f.severity == s for fs in filesystems for f in fs.findings)
              for s in SEVERITIES}
    return AuditDocument(kernel=env.kernel, xfsprogs=env.xfsprogs_version, fstab=fstab_name,
                         fail_on=fail_on, filesystems=filesystems, counts=counts)
