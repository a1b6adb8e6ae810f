"""Judging a run: the verdicts from its samples (each option's primary metric at ALPHA on its
own, the other timing metrics and the other counters as two Bonferroni families), the stopping
rule looked at after each ABBA block, the margins and calibration fixed before the first pair,
and the record of why the run stopped."""

from __future__ import annotations

import math
import os
from collections.abc import Callable

from advisor.bench import counters, jobs, stats
from advisor.bench.calibration import CalibrationStore
from advisor.bench.plan import TEARDOWN_SECONDS, Plan, Primary, abba_order, primaries
from advisor.models.bench import (
    METRICS,
    AgeReport,
    BenchEnvironment,
    CalibrationUse,
    MetricResult,
    Stopping,
    StopReason,
    Timing,
    ValidationReport,
    geometric_mean,
)
from advisor.models.limits import MAX_PAIRS
from advisor.models.units import human_size
from advisor.render.validation import allows
from advisor.render.verdict import ci_text, headline_verdict, pairs_time, verdict_line

#: Error of the verdicts: each primary metric at ALPHA on its own; the secondary metrics at
#: ALPHA / (their number) each, the timing metrics and the counters as two families.
ALPHA = 0.05
METHOD = ("anytime-valid confidence sequences on the mean log-ratio B/A (Lai 1976; the "
          "sequential t-test of Perez-Ortiz et al. 2024), kept as their running intersection: "
          "each option's pre-declared primary metric at alpha 0.05, the secondary metrics at "
          "0.05 split evenly over them (Bonferroni); direction tested against B/A = 1, the "
          "margin used for 'equivalent' only; valid at every look, whenever the run stops")


def reason_to_stop(plan: Plan, done: int, first: int, looks: list[int],
                   samples: dict[str, dict[str, list[float]]],
                   mechanisms: dict[str, dict[str, list[float]]], primary: list[Primary],
                   elapsed: float, slowest_block: float,
                   stop: Callable[[], bool] | None) -> StopReason | None:
    """The stopping rule, after each ABBA block: None to run another block. From the minimum
    pairs on (fewer decide nothing) it stops when every primary metric is decided, at the most
    pairs, or at the pairs the budget was sized for (Plan.run_limit, so the progress total never
    changes); before and after the minimum, when another block as slow as the slowest so far
    would overrun the budget (counted from the start, set-up and clean-up included): the budget
    is a cap, the minimum pairs included (the phases are sized so that they fit). Every look is
    on confidence sequences or on the rank test of advisor.bench.counters, valid however often
    they are looked at and whenever the run stops."""
    if done >= plan.pairs:
        looks.append(done)
        if not plan.fixed and not _open(samples, mechanisms, primary):
            return "resolved"
        if done >= plan.run_limit:
            return "max rounds" if done >= plan.most_pairs else "budget"
    if elapsed + slowest_block + TEARDOWN_SECONDS > plan.budget_seconds:
        return "budget"
    if done < plan.pairs:
        return None
    if stop is not None and stop():
        return "cancelled"
    return None


def _open(samples: dict[str, dict[str, list[float]]],
          mechanisms: dict[str, dict[str, list[float]]], primary: list[Primary]) -> list[str]:
    """The primary metrics not decided yet (neither a direction nor equivalence shown)."""
    names = {p.name for p in primary}
    judged = {m.name: m for m in _judge_mechanisms(mechanisms, {n: [] for n in names})}
    still = []
    for name in sorted(names):
        if name in judged:
            if judged[name].verdict == "inconclusive":
                still.append(name)
        elif name in samples and len(samples[name]["A"]) >= 2:
            metric = next(m for m in METRICS if m.name == name)
            v = stats.judge_one(samples[name]["A"], samples[name]["B"], metric.higher_is_better,
                                stats.DEFAULT_MARGIN, alpha=ALPHA, g=stats.PRIMARY_PRIOR)
            if v.verdict == "inconclusive":
                still.append(name)
        else:
            still.append(name)  # no figure yet (a counter zero in some round): not decided
    return still


def calibration_for(plan: Plan, env: BenchEnvironment,
                    store: CalibrationStore | None) -> tuple[dict[str, float], CalibrationUse]:
    """The noise floors this run's margins rest on, and where they came from."""
    if plan.prior is not None and plan.prior.calibration is not None:
        return {}, plan.prior.calibration
    key = device_key(env)
    versions: dict[str, str | None] = {"kernel": env.kernel, "xfsprogs": env.xfsprogs,
                                       "fio": env.fio}
    if plan.calibrate:
        return {}, CalibrationUse(
            source="this run", device_key=key, file=str(store.path) if store else None,
            summary=f"an A/A run: it measures the noise floors of {key}"
                    + (f" and stores them in {store.path}" if store else ""))
    if store is not None:
        return store.use(key, versions)
    return {}, CalibrationUse(source="default", device_key=key,
                              summary=f"margins: the default {stats.DEFAULT_MARGIN:.0%} "
                                      "(no calibration store)")


def margins_for(plan: Plan, shape: jobs.Shape, floors: dict[str, float]) -> dict[str, float]:
    """Each metric's margin (a fraction: what `equivalent` allows), fixed before the first pair
    (a continued run keeps the earlier run's). Not the calibrated noise floor: noise already
    widens the intervals, and a floor measured under load (74-525% once) would call a large
    slowdown equivalent; the floors are shown beside the metrics instead."""
    del floors
    if plan.prior is not None:
        return {m.name: plan.prior.margins.get(m.name, stats.DEFAULT_MARGIN)
                for m in shape.metrics}
    return {m.name: stats.DEFAULT_MARGIN for m in shape.metrics}


def judge(plan: Plan, samples: dict[str, dict[str, list[float]]], *, infos: dict[str, str],
          env: BenchEnvironment, shape: jobs.Shape, age: AgeReport | None, timing: Timing,
          recovered: list[str], store: CalibrationStore | None,
          mechanisms: dict[str, dict[str, list[float]]] | None = None,
          calibrated: tuple[dict[str, float], CalibrationUse] | None = None,
          margins: dict[str, float] | None = None,
          stopping: tuple[StopReason, list[int], int] | None = None,
          seconds_per_pair: float | None = None) -> ValidationReport:
    """Verdicts from the samples (pure apart from reading/writing the calibration store).
    `mechanisms`: work-per-operation samples (advisor.bench.counters). Each option's primary
    metric (primaries(plan)) is judged at the full ALPHA on its own; the other timing metrics
    and the other counters as two families at ALPHA each (Bonferroni within).
    `calibrated`, `margins`: as execute decided them before the first pair (default: read
    now); `stopping`: (why the run stopped, the pair counts it looked at, pairs it continued);
    `seconds_per_pair`: what a pair cost here, for what the open figures would take."""
    floors, calibration = calibrated or calibration_for(plan, env, store)
    margins = margins or margins_for(plan, shape, floors)
    primary = [] if plan.calibrate else primaries(plan)
    firsts = {p.name for p in primary}
    rows = [(samples[m.name]["A"], samples[m.name]["B"], m.higher_is_better, margins[m.name])
            for m in shape.metrics]
    second = [r for m, r in zip(shape.metrics, rows, strict=True) if m.name not in firsts]
    secondary = iter(stats.judge(second, alpha=ALPHA))
    metrics = []
    for m, (a_samples, b_samples, hib, margin) in zip(shape.metrics, rows, strict=True):
        if m.name in firsts:
            v = stats.judge_one(a_samples, b_samples, hib, margin, alpha=ALPHA,
                                g=stats.PRIMARY_PRIOR)
        else:
            v = next(secondary)
        metrics.append(_result(
            m.name, m.title, m.unit, m.higher_is_better, a_samples, b_samples, v,
            calibrated_floor=floors.get(m.name),
            primary_for=[p.option for p in primary if p.name == m.name]))
    calibration_file = None
    if store is not None:
        calibration_file = str(store.path)
        if plan.calibrate:
            versions: dict[str, str | None] = {"kernel": env.kernel, "xfsprogs": env.xfsprogs,
                                               "fio": env.fio}
            store.save(device_key(env), {m.name: (samples[m.name]["A"], samples[m.name]["B"])
                                         for m in shape.metrics}, versions)
    judged = _judge_mechanisms(mechanisms or {}, {
        n: [p.option for p in primary if p.name == n] for n in firsts})
    checks = counters.check_claims(plan.claims, plan.a, plan.b, judged)
    verdict = (stats.overall([m.verdict for m in metrics]) if plan.calibrate
               else headline_verdict(metrics, judged, checks))
    a = plan.a.model_copy(update={"xfs_info": infos.get("A")})
    b = plan.b.model_copy(update={"xfs_info": infos.get("B")})
    pairs = min((len(s["A"]) for s in samples.values()), default=0)
    reason, looks, first = stopping or ("max rounds", [pairs], 0)
    claimed = {c.counter for c in checks}
    return ValidationReport(
        a=a, b=b, proposed=plan.proposed, proposed_for=plan.proposed_for,
        not_applied=plan.not_applied, calibrate=plan.calibrate, rounds=pairs,
        order=abba_order(pairs), workload=shape.as_dict(), metrics=metrics, verdict=verdict,
        summary=verdict_line(verdict, plan.calibrate, metrics, judged, checks, seconds_per_pair),
        age=age, timing=timing,
        environment=env, recovered=recovered, calibration_file=calibration_file,
        calibration=calibration, mechanisms=judged, mechanism_checks=checks,
        stopping=_stopping(plan, reason, looks, first, pairs, metrics,
                           [m for m in judged if m.name in claimed or m.primary_for],
                           seconds_per_pair),
        mechanisms_not_shown=[f"{m.title}: zero in some round (the device or the filesystem "
                              "did none of it), so no ratio" for m in counters.MECHANISMS
                              if m.name in (mechanisms or {})
                              and m.name not in {j.name for j in judged}])


_REASONS: dict[str, str] = {
    "resolved": "every option's primary metric decided",
    "budget": "the budget ran out",
    "max rounds": "the most pairs allowed ran",
    "cancelled": "stopped by request",
}


def _stopping(plan: Plan, reason: StopReason, looks: list[int], first: int, pairs: int,
              metrics: list[MetricResult], counted: list[MetricResult],
              seconds_per_pair: float | None = None) -> Stopping:
    """How many pairs ran, why it stopped, and what is still open (with what it would take)."""
    open_ = []
    for m in [*metrics, *counted]:
        if m.verdict != "inconclusive":
            continue
        could = allows(list(m.still_possible))
        more = (f"; {pairs_time(m.rounds_to_resolve - pairs, seconds_per_pair)} would likely "
                "resolve it" if m.rounds_to_resolve
                else f"; more than {MAX_PAIRS} pairs in all would be needed")
        open_.append(f"{m.name}: could still be {could} (B/A {ci_text(m.ci)} against "
                     f"+-{m.margin * 100:.0f}%){more}")
    if plan.fixed and reason == "max rounds":
        why = (f"{pairs} pairs, fixed in advance"
               + (" (an A/A calibration is a fixed design)" if plan.calibrate else ""))
    else:
        why = f"{_REASONS[reason]} after {pairs} pairs"
        if reason == "budget" and pairs >= plan.run_limit:
            why += (f" (the {plan.run_limit} pairs the {plan.budget_seconds:.0f} s budget was "
                    "sized for)")
        elif reason == "budget":
            why += f" (budget {plan.budget_seconds:.0f} s)"
        elif reason == "max rounds":
            why += f" (--max-rounds {plan.most_pairs})"
    if first:
        why += f"; continued from {first} pairs"
    return Stopping(reason=reason, summary=why, min_rounds=plan.pairs,
                    max_rounds=plan.run_limit, budget_seconds=plan.budget_seconds,
                    looks=looks, continued_from=first or None, open=open_,
                    alpha=ALPHA, method=METHOD,
                    seconds_per_pair=round(seconds_per_pair, 1) if seconds_per_pair else None)


def _judge_mechanisms(samples: dict[str, dict[str, list[float]]],
                      primary: dict[str, list[str]] | None = None) -> list[MetricResult]:
    """The counters' figures as metrics (lower is less work), with the performance metrics'
    statistics and default margin: a primary one (`primary`: name -> the options it decides)
    at the full ALPHA on its own, the others in a Bonferroni family of their own. A figure that
    was zero in some round (no log write at all) has no ratio and is left out."""
    primary = primary or {}
    rows, kept = [], []
    for m in counters.MECHANISMS:
        side = samples.get(m.name)
        if not side or len(side["A"]) != len(side["B"]) or len(side["A"]) < 2:
            continue
        if min(side["A"] + side["B"]) <= 0:
            continue
        kept.append(m)
        rows.append((side["A"], side["B"], False, stats.DEFAULT_MARGIN))
    second = iter(stats.judge([r for m, r in zip(kept, rows, strict=True)
                               if m.name not in primary], alpha=ALPHA))
    results = []
    for m, (a, b, _, margin) in zip(kept, rows, strict=True):
        v = (stats.judge_one(a, b, False, margin, alpha=ALPHA, g=stats.PRIMARY_PRIOR)
             if m.name in primary else next(second))
        results.append(_result(m.name, m.title, m.unit, False, a, b, v,
                               primary_for=primary.get(m.name, [])))
    return results + counters.judge_none_on_b(samples, {m.name for m in kept}, primary)


def _result(name: str, title: str, unit: str, higher_is_better: bool, a: list[float],
            b: list[float], v: stats.MetricVerdict, *, calibrated_floor: float | None = None,
            primary_for: list[str] | None = None) -> MetricResult:
    """One judged figure as the report keeps it (rounded; noise 0 when a single pair)."""
    return MetricResult(
        name=name, title=title, unit=unit, higher_is_better=higher_is_better,
        a=[round(x, 3) for x in a], b=[round(x, 3) for x in b],
        ratio=round(v.summary.ratio, 4), geo_mean_a=round(geometric_mean(a), 3),
        geo_mean_b=round(geometric_mean(b), 3),
        ci=[round(v.ci_ratio[0], 4), round(v.ci_ratio[1], 4)],
        margin=round(math.expm1(v.margin), 4),
        noise=round(v.summary.sd, 4) if math.isfinite(v.summary.sd) else 0.0,
        verdict=v.verdict, rounds_to_resolve=v.rounds_needed,
        still_possible=list(v.still_possible),
        calibrated_floor=calibrated_floor, primary_for=list(primary_for or []),
        decided_after=v.decided_after)


def device_key(env: BenchEnvironment) -> str:
    """What a calibration is valid for: the same kind of device of the same size."""
    if env.loop_backing_file:
        return f"loop:{os.path.dirname(os.path.dirname(env.loop_backing_file))}:" \
               f"{human_size(env.device_size_bytes)}"
    return f"{env.device}:{human_size(env.device_size_bytes)}"
