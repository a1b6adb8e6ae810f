"""A proposal for a device and a workload: the host's mkfs.xfs (advisor.system.mkfs) tells what it
makes by default, the pure engine (advisor.engine) drafts the choices, and a real `mkfs.xfs -N` of
the draft gates it before anybody sees it."""

from __future__ import annotations

import time
from pathlib import Path

from advisor.engine import draft
from advisor.engine.rulebook import RuleBook, load_rulebook
from advisor.engine.rules.kernel_compat import target_kernel
from advisor.errors import DeviceProblem
from advisor.models.device import Device
from advisor.models.environment import Environment
from advisor.models.obstacles import obstacles
from advisor.models.proposal import Proposal, ProposalWarning
from advisor.models.workload import Workload
from advisor.render.fstab import fstab_line
from advisor.system import argv as system_argv
from advisor.system.mkfs import HostMkfs


def propose(device: Device, workload: Workload, *, env: Environment | None = None,
            rules_dir: Path | None = None, check: bool = True, rulebook: RuleBook | None = None,
            mkfs: HostMkfs | None = None, timings: dict[str, float] | None = None) -> Proposal:
    """The proposal, checked with `mkfs.xfs -N` on a stand-in file (check=False skips that, for
    rules of tool versions this host does not have). `timings`, when given, receives the wall
    time of each phase in seconds (scripts/bench_propose.py)."""
    started = time.perf_counter()
    refuse_unformattable(device)
    mkfs = mkfs or HostMkfs()
    if env is None:
        from advisor.system.versions import read_environment

        env = read_environment()
    book = rulebook or load_rulebook(rules_dir)
    loaded = time.perf_counter()
    defaults = mkfs.defaults(device)
    sets = mkfs.feature_sets(env) if target_kernel(workload, env) else {}
    asked = time.perf_counter()
    # Later rules read what mkfs.xfs makes with the options decided before them; with check=False
    # (rules of another xfsprogs) this host's mkfs.xfs cannot say, and the defaults stand in.
    measure = (lambda options: mkfs.check(device, options).geometry) if check else None
    drafted = draft(device, workload, env=env, defaults=defaults.geometry, book=book,
                    feature_sets=sets, measure=measure)
    decided = time.perf_counter()
    warnings = list(drafted.warnings)
    if env.target_older():
        warnings.append(ProposalWarning(rule="mkfs-check", message=(
            f"the command is for the captured host's mkfs.xfs (xfsprogs {env.target_xfsprogs}), "
            f"older than the local xfsprogs {env.xfsprogs_version} that checked it with "
            "mkfs.xfs -N: options it does not know are left out, but its defaults (features, "
            "log size, AG count) may differ from those shown; run mkfs.xfs -N with these options "
            "on that host before formatting")))
    proposal_check = None
    if check:
        proposal_check = mkfs.check(device, drafted.mkfs_options)
        warnings += [ProposalWarning(rule="mkfs-check", message=f"mkfs.xfs says: {m}")
                     for m in _joined_warnings(proposal_check.geometry.mkfs_warnings)]
    done = time.perf_counter()
    if timings is not None:
        timings.update(rules=loaded - started, defaults_check=asked - loaded,
                       engine=decided - asked, proposal_check=done - decided)
    argv = system_argv.mkfs_xfs(device.path, drafted.mkfs_options)
    return Proposal(
        mkfs_argv=argv,
        mkfs_options=drafted.mkfs_options,
        mkfs_command=system_argv.shell_line(argv),
        mount_options=drafted.mount_options,
        fstab=fstab_line(drafted.mount_options, workload.mount_point),
        decisions=drafted.decisions,
        warnings=warnings,
        questions=drafted.questions,
        mkfs_defaults=defaults.geometry,
        check=proposal_check,
        rules_dirs=book.dirs,
        disabled_rules=dict(book.disabled),
    )


def refuse_unformattable(device: Device) -> None:
    """DeviceProblem for a device no proposal of these rules can format: a host-managed zoned
    device accepts only sequential writes in its zones, which a conventional XFS (and the
    stand-in dry run) does not do."""
    for obstacle in obstacles(device):
        if obstacle.kind == "zoned" and obstacle.blocks:
            raise DeviceProblem(obstacle.sentence(device.name))


def _joined_warnings(lines: list[str]) -> list[str]:
    """mkfs.xfs wraps one warning over several lines: join them back into sentences."""
    text = " ".join(lines)
    return [text] if text else []
