"""Facts and answers in, one explained draft out: pure (no process, no file, no clock), so every
input is an argument and a test can state all of them.

Settings are decided in a fixed order (advisor.engine.settings); for each, every rule deciding it
runs; when several want a change the highest priority wins and the decision says so; when none
does, the default is kept and the decision says why. advisor.advice turns the draft into a
proposal, gated by a real `mkfs.xfs -N`."""

from __future__ import annotations

from collections.abc import Callable

from advisor.engine.context import Change, Context, check_values
from advisor.engine.registry import DECIDERS
from advisor.engine.rulebook import RuleBook
from advisor.engine.settings import SETTINGS, Setting
from advisor.errors import ProposalBug
from advisor.models.device import Device, device_size
from advisor.models.environment import Environment, FeatureSet
from advisor.models.proposal import (
    Alternative,
    Decision,
    MkfsGeometry,
    ProposalWarning,
    Question,
)
from advisor.models.workload import Workload
from advisor.system.argv import merge_options, pairs_only

POLICY_RULE = "keep-defaults"


class Draft:
    """The engine's answer, before the dry run that gates it. (A plain class, not a dataclass:
    making a frozen dataclass compiles its methods at every start.)"""

    __slots__ = ("decisions", "mkfs_options", "mount_options", "questions", "warnings")

    def __init__(self, decisions: list[Decision], warnings: list[ProposalWarning],
                 mkfs_options: list[str], mount_options: list[str],
                 questions: list[Question]) -> None:
        self.decisions = decisions
        self.warnings = warnings
        self.mkfs_options = mkfs_options
        self.mount_options = mount_options
        self.questions = questions

    def __repr__(self) -> str:
        return (f"Draft(mkfs_options={self.mkfs_options!r}, "
                f"mount_options={self.mount_options!r}, {len(self.decisions)} decisions)")


#: The caller's `mkfs.xfs -N` of a list of options: the geometry mkfs.xfs makes with them.
Measure = Callable[[list[str]], MkfsGeometry]


def _decide(setting: Setting, ctx: Context, book: RuleBook,
            warnings: list[ProposalWarning], questions: list[Question]) -> Decision:
    asked: list[Question] = []
    decision = _decide_asking(setting, ctx, book, warnings, asked)
    if not decision.changed:  # a changed setting was decided by what is known
        questions += asked
    return decision


def _decide_asking(setting: Setting, ctx: Context, book: RuleBook,
                   warnings: list[ProposalWarning], asked: list[Question]) -> Decision:
    changes: list[tuple[str, int, Change]] = []
    keeps: list[tuple[str, str]] = []
    aside: list[tuple[str, str]] = []  # keeps of rules that do not apply here
    holds: list[tuple[str, int, str]] = []  # keeps that outrank lower-priority changes
    source = "guide 1 (defaults suit most workloads)"
    for loaded in book.for_setting(setting.name):
        rule = loaded.rule
        fn = loaded.rule.decide
        assert fn is not None
        outcome = DECIDERS[fn][0](ctx, loaded.params)
        warnings += [ProposalWarning(rule=rule.id, message=m) for m in outcome.warnings]
        asked += [Question(answer=name, setting=setting.name, rule=rule.id, message=text)
                  for name, text in outcome.questions.items()]
        if outcome.change:
            changes.append((rule.id, rule.priority, outcome.change))
        elif outcome.keep_reason:
            (keeps if outcome.applies else aside).append((rule.id, outcome.keep_reason))
            if rule.keep_wins:
                holds.append((rule.id, rule.priority, outcome.keep_reason))
    keeps += aside  # a kept default is labelled with a rule that applies, when one does
    default = setting.default(ctx.geometry, ctx.env)
    if holds and changes and holds[0][1] > changes[0][1]:
        hold_id, hold_priority, why = holds[0]
        overruled = [Alternative(rule=rid, value=c.value, reason=c.reason)
                     for rid, _, c in changes]
        return Decision(
            setting=setting.name, value="default", default=default, changed=False,
            rule=hold_id, reason=why, source=book.rules[hold_id].rule.source,
            changeable_later=setting.changeable_later, alternatives=overruled,
            resolution=(f"{hold_id} (priority {hold_priority}) keeps the default over "
                        + ", ".join(f"{a.rule} (wanted {a.value})" for a in overruled)))
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
    mismatch = check_values(winner)
    if mismatch:
        raise ProposalBug(f"bug: {winner_id}'s typed values disagree with its options: {mismatch}")
    ctx.chosen[setting.name] = winner
    rule = book.rules[winner_id].rule
    return Decision(setting=setting.name, value=winner.value, default=default, changed=True,
                    rule=winner_id, reason=winner.reason, source=rule.source,
                    changeable_later=setting.changeable_later, options=list(winner.options),
                    resolution=resolution, alternatives=losers)


def distribution_kernels(book: RuleBook) -> dict[str, str]:
    """The kernel-compat rule's distributions as their upstream kernel versions (empty when a
    site switched the rule off)."""
    loaded = book.rules.get("kernel-compat")
    table = getattr(loaded.params, "distributions", None) if loaded else None
    return {name: d.kernel for name, d in (table or {}).items()}


def obsolete_in(options: list[str], mount_options: list[str], book: RuleBook) -> list[str]:
    """Ids of obsolete rules matching anything the proposal emits."""
    emitted = set(mount_options)
    pairs = pairs_only(options)
    for flag, arg in zip(pairs[::2], pairs[1::2], strict=True):
        for part in arg.split(","):
            emitted |= {part, f"{flag} {part}"}
    hits = []
    for rule in book.of_kind("obsolete"):
        assert rule.obsolete is not None
        if any(m in emitted for m in rule.obsolete.matches):
            hits.append(rule.id)
    return hits


def draft(device: Device, workload: Workload, *, env: Environment, defaults: MkfsGeometry,
          book: RuleBook, feature_sets: dict[str, FeatureSet] | None = None,
          measure: Measure | None = None) -> Draft:
    """Every setting decided for `device` and `workload`: `env` is the host the filesystem is
    for, `defaults` what its mkfs.xfs makes with no options, `feature_sets` its lts_*.conf files
    (needed only when an older kernel must mount the result). `measure`, when given, is asked
    what mkfs.xfs makes with the options decided so far after each mkfs setting that changes,
    so later rules see the proposal's own geometry (without it they see the defaults)."""
    ctx = Context(device=device, workload=workload, env=env, geometry=defaults,
                  size=device_size(device), feature_sets=dict(feature_sets or {}),
                  distribution_kernels=distribution_kernels(book))
    warnings: list[ProposalWarning] = []
    questions: list[Question] = []
    decisions: list[Decision] = []
    for setting in SETTINGS:
        decision = _decide(setting, ctx, book, warnings, questions)
        decisions.append(decision)
        if measure is not None and decision.changed and setting.kind == "mkfs":
            ctx.geometry = measure(_merged(decisions))
    for rule in book.of_kind("device"):
        loaded_rule = book.rules[rule.id]
        if rule.decide:
            outcome = DECIDERS[rule.decide][0](ctx, loaded_rule.params)
            warnings += [ProposalWarning(rule=rule.id, message=m) for m in outcome.warnings]
    options = _merged(decisions)
    mount_options = [o for d in decisions if d.changed and d.setting.startswith("mount")
                     for o in d.options]
    hits = obsolete_in(options, mount_options, book)
    if hits:
        raise ProposalBug(f"bug: the proposal contains obsolete advice ({', '.join(hits)})")
    return Draft(decisions=decisions, warnings=warnings, mkfs_options=options,
                 mount_options=mount_options, questions=questions)


def _merged(decisions: list[Decision]) -> list[str]:
    """The mkfs options of the changed decisions, merged per flag."""
    try:
        return merge_options(d.options for d in decisions
                             if d.changed and d.setting.startswith("-"))
    except ValueError as err:
        raise ProposalBug(f"bug: the rules produce conflicting mkfs options: {err}") from None
