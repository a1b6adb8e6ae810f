"""`xfs-advisor audit [MOUNTPOINT|DEVICE ...] [--fstab FILE] [--fail-on SEVERITY]`: the host's XFS
filesystems and fstab against today's kernel, xfsprogs and devices. Read-only."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from advisor.answers import add_workload_flags

if TYPE_CHECKING:
    from advisor.models.audit import AuditDocument


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
    add_workload_flags(p, suppress=True)
    p.add_argument("--fail-on", default="breaks",
                   choices=("breaks", "will-break", "performance", "info"),
                   help="exit 6 when a finding is this bad or worse (default: breaks)")
    p.add_argument("--kernel", metavar="X.Y", default=None,
                   help="the kernel the host is moving to (spelt as must_mount_on_kernel: "
                   "\"6.19\", a `uname -r` or a distribution such as rhel9 or debian12): a "
                   "will-break finding due by that kernel is breaks (with --fail-on breaks: "
                   "will the new kernel refuse it?)")


def exit_code(doc: AuditDocument) -> int:
    """6 when some finding is at or above --fail-on, else 0."""
    from advisor.errors import EXIT_FINDINGS, EXIT_OK
    from advisor.models.audit import at_least

    worst = [f for fs in doc.filesystems for f in fs.findings if at_least(f.severity, doc.fail_on)]
    return EXIT_FINDINGS if worst else EXIT_OK


def run(args: argparse.Namespace) -> int:
    from advisor.answers import workload_from_args
    from advisor.console import out
    from advisor.session import Session

    session = Session(getattr(args, "sysroot", None), rules_dir=getattr(args, "rules", None))
    target = None
    if args.kernel is not None:
        from advisor.audit.kernel import target_version
        from advisor.engine.decide import distribution_kernels

        target = target_version(args.kernel, distribution_kernels(session.rulebook))
    doc = session.audit(args.names, args.fstab, args.fail_on, workload_from_args(args))
    if target is not None:
        from advisor.audit.kernel import at_kernel

        doc = at_kernel(doc, *target)
    if args.json:
        out(doc.model_dump_json(indent=2) + "\n", as_json=True)
    else:
        from advisor.render.audit import render as render_audit

        out(render_audit(doc))
    return exit_code(doc)
