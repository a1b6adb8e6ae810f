"""A target kernel for the audit's findings (`audit --kernel`, `fleet --kernel`): the kernel the
hosts are moving to. A will-break finding due by that kernel (its `due_kernel` at or before it)
is a breaks finding on it, so that `--fail-on breaks` and the findings by rule answer "which
hosts will the new kernel refuse?"."""

from __future__ import annotations

from advisor.errors import BadInput
from advisor.models.audit import SEVERITIES, AuditDocument
from advisor.models.environment import parse_version
from advisor.models.workload import mount_target


def target_version(text: str, distributions: dict[str, str]) -> tuple[str, tuple[int, int]]:
    """The target as the rules name it (spelt as propose's must_mount_on_kernel: "6.19", a
    `uname -r`, or a distribution) and its upstream kernel version; BadInput otherwise.
    `distributions`: the kernel-compat rule's table (advisor.engine.decide.distribution_kernels)."""
    name = mount_target(text)
    if name is None:
        raise BadInput(f"--kernel {text}: give a kernel version (\"6.19\"), a `uname -r` "
                       "(\"6.1.0-18-amd64\") or a distribution (rhel9, ubuntu24.04, debian12...)")
    version = parse_version(name)
    if version is None:
        version = parse_version(distributions.get(name))
        if version is None:
            raise BadInput(f"--kernel {text}: no kernel known for {name} (known: "
                           f"{', '.join(sorted(distributions)) or 'none'}); give its kernel "
                           "version instead")
    return name, version


def at_kernel(doc: AuditDocument, target: str, version: tuple[int, int]) -> AuditDocument:
    """`doc` judged for the target kernel: each will-break finding due by it becomes breaks
    (its `when` says which kernel refuses it), counts recounted, target_kernel set."""
    for fs in doc.filesystems:
        for f in fs.findings:
            due = parse_version(f.due_kernel)
            if f.severity == "will-break" and due is not None and due <= version:
                f.severity = "breaks"
                f.when = (f"due from Linux {f.due_kernel}; the target kernel is {target}"
                          + (f"; {f.when}" if f.when else ""))
        fs.findings.sort(key=lambda f: SEVERITIES.index(f.severity))
    doc.counts = {s: sum(f.severity == s for fs in doc.filesystems for f in fs.findings)
                  for s in SEVERITIES}
    doc.target_kernel = target
    return doc
