"""Facts and answers in, one explained and checked proposal out.

Settings are decided in a fixed order (advisor.engine.settings); for each, every rule deciding it
runs; when several want a change the highest priority wins and the decision says so; when none
does, the default is kept and the decision says why."""

from __future__ import annotations

import time
from pathlib import Path

from advisor.engine.check import ProposalBug, device_size, dry_run
from advisor.engine.context import Change, Context, mkfs_size
from advisor.engine.deciders import DECIDERS
from advisor.engine.rulebook import RuleBook, load_rulebook
from advisor.engine.settings import SETTINGS, Setting
from advisor.models.device import Device
from advisor.models.environment import Environment
from advisor.models.proposal import (
    Alternative,
    Decision,
    MkfsGeometry,
    Proposal,
    ProposalWarning,
)
from advisor.models.units import human_size
from advisor.models.workload import Workload
from advisor.render.fstab import fstab_line
from advisor.render.mkfs import command_line, merge_options, mkfs_argv

POLICY_RULE = "keep-defaults"

#: Wall time of the last propose() phases, in seconds (for scripts/bench_propose.py).
TIMINGS: dict[str, float] = {}


def default_text(setting: str, g: MkfsGeometry, env: Environment) -> str:
    """What mkfs.xfs or the kernel uses for a setting when the proposal leaves it alone."""
    bs = g.block_size
    texts = {
        "-b size": mkfs_size(bs),
        "-m features": f"xfsprogs {env.xfsprogs_version or '?'} defaults: "
                       + ",".join(f"{k}={v}" for k, v in sorted(g.features.items())),
        "-d su/sw": (f"su={mkfs_size(g.sunit_blocks * bs)},sw={g.swidth_blocks // g.sunit_blocks}"
                     if g.sunit_blocks else "none"),
        "-d agcount/agsize": f"agcount={g.agcount}, agsize {human_size(g.agsize_bytes)}",
        "-i size": str(g.inode_size),
        "-n size": mkfs_size(g.naming_block_size),
        "-l size": human_size(g.log_bytes),
        "-l su": mkfs_size(g.log_sunit_blocks * bs) if g.log_sunit_blocks else "none",
        "mount inode32/inode64": "inode64",
        "mount logbsize": "32k, or the log stripe unit when larger",
        "mount logbufs": "8",
        "mount atime": "relatime",
        "mount discard": "nodiscard",
    }
    return texts[setting]


def _decide(setting: Setting, ctx: Context, book: RuleBook,
            warnings: list[ProposalWarning]) -> Decision:
    changes: list[tuple[str, int, Change]] = []
    keeps: list[tuple[str, str]] = []
    source = "guide 1 (defaults suit most workloads)"
    for loaded in book.for_setting(setting.name):
        rule = loaded.rule
        fn = loaded.rule.decide
        assert fn is not None
        outcome = DECIDERS[fn][0](ctx, loaded.params)
        warnings += [ProposalWarning(rule=rule.id, message=m) for m in outcome.warnings]
        if outcome.change:
            changes.append((rule.id, rule.priority, outcome.change))
        elif outcome.keep_reason:
            keeps.append((rule.id, outcome.keep_reason))
    default = default_text(setting.name, ctx.defaults, ctx.env)
    if not changes:
        rule_id = keeps[0][0] if keeps else POLICY_RULE
        if keeps:
            source = book.rules[rule_id].rule.source
        reason = "; ".join(r for _, r in keeps) if keeps else (
            "nothing in the answers or the device calls for a change: the default is kept")
        return Decision(setting=setting.name, value="default", default=default, changed=False,
                        rule=rule_id, reason=reason, source=source,
                        changeable_later=setting.changeable_later)
    winner_id, winner_priority, winner = changes[0]
    losers = [Alternative(rule=rid, value=c.value, reason=c.reason)
              for rid, _, c in changes[1:] if c.value != winner.value]
    agreeing = [rid for rid, _, c in changes[1:] if c.value == winner.value]
    resolution = None
    if losers:
        resolution = (f"{winner_id} (priority {winner_priority}) wins over "
                      + ", ".join(f"{a.rule} (wanted {a.value})" for a in losers)
                      + ": one value per setting, the higher priority decides")
    elif agreeing:
        resolution = f"also wanted by {', '.join(agreeing)}"
    ctx.chosen[setting.name] = winner
    rule = book.rules[winner_id].rule
    return Decision(setting=setting.name, value=winner.value, default=default, changed=True,
                    rule=winner_id, reason=winner.reason, source=rule.source,
                    changeable_later=setting.changeable_later, options=list(winner.options),
                    resolution=resolution, alternatives=losers)


def obsolete_in(options: list[str], mount_options: list[str], book: RuleBook) -> list[str]:
    """Ids of obsolete rules matching anything the proposal emits."""
    emitted = set(mount_options)
    for flag, arg in zip(options[::2], options[1::2], strict=False):
        for part in arg.split(","):
            emitted |= {part, f"{flag} {part}"}
    hits = []
    for rule in book.of_kind("obsolete"):
        assert rule.obsolete is not None
        if any(m in emitted for m in rule.obsolete.matches):
            hits.append(rule.id)
    return hits


def propose(device: Device, workload: Workload, *, env: Environment | None = None,
            rules_dir: Path | None = None, check: bool = True,
            rulebook: RuleBook | None = None) -> Proposal:
    """The proposal for a device and a workload, checked with `mkfs.xfs -N` on a stand-in file
    (check=False skips that, for rules of tool versions this host does not have)."""
    started = time.perf_counter()
    if env is None:
        from advisor.system.versions import read_environment

        env = read_environment()
    book = rulebook or load_rulebook(rules_dir)
    loaded = time.perf_counter()
    size = device_size(device)
    defaults_check = dry_run(device, [], defaults=True)
    checked_defaults = time.perf_counter()
    ctx = Context(device=device, workload=workload, env=env, defaults=defaults_check.geometry,
                  size=size)
    warnings: list[ProposalWarning] = []
    decisions = [_decide(s, ctx, book, warnings) for s in SETTINGS]
    for rule in book.of_kind("device"):
        loaded_rule = book.rules[rule.id]
        if rule.decide:
            outcome = DECIDERS[rule.decide][0](ctx, loaded_rule.params)
            warnings += [ProposalWarning(rule=rule.id, message=m) for m in outcome.warnings]
    mkfs_decisions = [d for d in decisions if d.changed and d.setting.startswith("-")]
    try:
        options = merge_options(d.options for d in mkfs_decisions)
    except ValueError as err:
        raise ProposalBug(f"bug: the rules produce conflicting mkfs options: {err}") from None
    mount_options = [o for d in decisions if d.changed and d.setting.startswith("mount")
                     for o in d.options]
    hits = obsolete_in(options, mount_options, book)
    if hits:
        raise ProposalBug(f"bug: the proposal contains obsolete advice ({', '.join(hits)})")
    decided = time.perf_counter()
    proposal_check = None
    if check:
        proposal_check = dry_run(device, options)
        warnings += [ProposalWarning(rule="mkfs-check", message=f"mkfs.xfs says: {m}")
                     for m in _joined_warnings(proposal_check.geometry.mkfs_warnings)]
    done = time.perf_counter()
    TIMINGS.update(rules=loaded - started, defaults_check=checked_defaults - loaded,
                   engine=decided - checked_defaults, proposal_check=done - decided)
    argv = mkfs_argv(options, device.path)
    return Proposal(
        mkfs_argv=argv,
        mkfs_options=options,
        mkfs_command=command_line(argv),
        mount_options=mount_options,
        fstab=fstab_line(mount_options, workload.mount_point),
        decisions=decisions,
        warnings=warnings,
        mkfs_defaults=defaults_check.geometry,
        check=proposal_check,
        rules_dirs=book.dirs,
    )


def _joined_warnings(lines: list[str]) -> list[str]:
    """mkfs.xfs wraps one warning over several lines: join them back into sentences."""
    text = " ".join(lines)
    return [text] if text else []
