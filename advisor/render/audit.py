"""The audit for people: per filesystem its findings with evidence, fix and source, the fixes by
when they can happen, and what the advisor would make today. Used by `xfs-advisor audit` and the
TUI's audit view alike."""

from __future__ import annotations

from advisor.models.audit import AuditDocument, FilesystemAudit
from advisor.render.inert import terminal


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
        lines.append(f"  the advisor today: {fs.today.mkfs_command}")
        if fs.today.mount_options_missing:
            lines.append("    mount options it would add: "
                         + ",".join(fs.today.mount_options_missing))
    return lines


def render(doc: AuditDocument) -> str:
    lines = [f"kernel {doc.kernel or 'unknown'}, xfsprogs {doc.xfsprogs or 'unknown'}, "
             f"fstab {doc.fstab or 'none'}"
             + (f", judged for kernel {doc.target_kernel} as well" if doc.target_kernel else "")]
    if not doc.filesystems:
        lines.append("no XFS filesystem found")
    for fs in doc.filesystems:
        lines += ["", *_text(fs)]
    summary = ", ".join(f"{n} {s}" for s, n in doc.counts.items() if n)
    lines += ["", f"findings: {summary or 'none'}"]
    # Mount points, devices and evidence come from the host: each line stays one line.
    return "\n".join(terminal(line) for line in lines) + "\n"
