"""`xfs-advisor audit [MOUNTPOINT|DEVICE ...] [--fstab FILE] [--fail-on SEVERITY]`: the host's XFS
filesystems and fstab against today's kernel, xfsprogs and devices. Read-only."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from advisor.answers import add_workload_flags

if TYPE_CHECKING:
    from advisor.audit.models import AuditDocument, FilesystemAudit


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "audit", parents=[common],
        help="check existing XFS filesystems and fstab before the next upgrade (read-only)",
        description="For each XFS filesystem (every one the host has, or those named): fstab and "
        "mount options that fail or will fail, the on-disk format (V4, no bigtime...), and the "
        "layout against today's device. Reads with xfs_info and `xfs_db -r`; writes nothing. "
        "Exit 6 when a finding is at or above --fail-on.")
    p.add_argument("names", nargs="*", metavar="MOUNTPOINT|DEVICE",
                   help="filesystems to audit (default: all XFS mounts, unmounted XFS devices and "
                   "XFS fstab lines)")
    p.add_argument("--fstab", metavar="FILE", default=None,
                   help="the fstab file to check (default: /etc/fstab)")
    p.add_argument("--workload", metavar="FILE", default=argparse.SUPPRESS,
                   help="workload answers (TOML or JSON): what the advisor would propose today is "
                   "made for them (default: no answers)")
    p.add_argument("--rules", metavar="DIR", default=argparse.SUPPRESS,
                   help="extra rules for that proposal, as `xfs-advisor --rules DIR`")
    add_workload_flags(p)
    for action in p._actions:
        if action.dest.startswith("answer:"):
            action.default = argparse.SUPPRESS
    p.add_argument("--fail-on", default="breaks",
                   choices=("breaks", "will-break", "performance", "info"),
                   help="exit 6 when a finding is this bad or worse (default: breaks)")


def _text(fs: FilesystemAudit) -> list[str]:
    """One filesystem's findings for people."""
    where = fs.mountpoint or "-"
    how = "mounted" if fs.mounted else "not mounted"
    head = f"{fs.device or '(no device)'} on {where} ({how}"
    head += f", read with {fs.read_with})" if fs.read_with else ")"
    if fs.fstab_line is not None:
        head += f", fstab line {fs.fstab_line}"
    lines = [head]
    if not fs.findings:
        lines.append("  no findings")
    for f in fs.findings:
        lines.append(f"  [{f.severity}] {f.rule}: {f.title}" + (f" ({f.when})" if f.when else ""))
        lines.append(f"      evidence: {f.evidence}")
        lines.append(f"      fix ({f.fix_kind}): {f.fix}")
        lines.append(f"      source: {f.source}")
    return lines + _plan(fs)


def _plan(fs: FilesystemAudit) -> list[str]:
    """The fixes split by when they can happen, and what the advisor would make today."""
    lines = []
    for kind, label in (("next-mount", "at the next mount"),
                        ("xfs_admin-offline", "offline with xfs_admin"),
                        ("new-mkfs", "only with a new mkfs")):
        ids = sorted({f.rule for f in fs.findings if f.fix_kind == kind})
        if ids:
            lines.append(f"  {label}: {', '.join(ids)}")
    if fs.today is not None:
        lines.append(f"  the advisor today (no answers): {fs.today.mkfs_command}")
        if fs.today.mount_options_missing:
            lines.append("    mount options it would add: "
                         + ",".join(fs.today.mount_options_missing))
    return lines


def render(doc: AuditDocument) -> str:
    lines = [f"kernel {doc.kernel or 'unknown'}, xfsprogs {doc.xfsprogs or 'unknown'}, "
             f"fstab {doc.fstab or 'none'}"]
    if not doc.filesystems:
        lines.append("no XFS filesystem found")
    for fs in doc.filesystems:
        lines += ["", *_text(fs)]
    summary = ", ".join(f"{n} {s}" for s, n in doc.counts.items() if n)
    lines += ["", f"findings: {summary or 'none'}"]
    return "\n".join(lines) + "\n"


def exit_code(doc: AuditDocument) -> int:
    """6 when some finding is at or above --fail-on, else 0."""
    from advisor.audit.models import at_least
    from advisor.errors import EXIT_FINDINGS, EXIT_OK

    worst = [f for fs in doc.filesystems for f in fs.findings if at_least(f.severity, doc.fail_on)]
    return EXIT_FINDINGS if worst else EXIT_OK


def run(args: argparse.Namespace) -> int:
    from advisor.answers import workload_from_args
    from advisor.session import Session

    session = Session(getattr(args, "sysroot", None), rules_dir=getattr(args, "rules", None))
    doc = session.audit(args.names, args.fstab, args.fail_on, workload_from_args(args))
    if args.json:
        sys.stdout.write(doc.model_dump_json(indent=2) + "\n")
    else:
        sys.stdout.write(render(doc))
    return exit_code(doc)
