"""`validate --attribute`: which of B's options moved which metric and counter.

Design: one option at a time on top of A. For each option B has and A lacks (every mkfs.xfs
sub-option and every mount option on its own; `su`/`sw` together, as mkfs.xfs takes them), one
more A/B run: A against A plus that option alone, with the combined run's pairs and budget, through
the same `execute()` (so the same guard, hold and re-check before every mkfs). k options cost k
runs.

Why this and not leave-one-out or a fractional factorial: the rules claim what an option does
against the defaults ("logbsize=256k: fewer log writes than the default"), which is exactly what
an option-alone run measures, and its B/A reads as that option's effect. Leave-one-out measures
each option against the rest, which is only the same when options do not interact, and gives no
clean answer for two options. A two-level fractional factorial needs a power of two runs of
sides (>= k + 1) and spreads each effect over every run, worth it from about 5 options on; the
advisor's proposals change 1 to 4 options. What this design cannot see: interactions. When the
combined run moved a figure and no option alone does, the report says so ("cannot tell").
"""

from __future__ import annotations

from collections.abc import Callable

from advisor.bench.plan import Plan
from advisor.models.bench import (
    Attribution,
    AttributionFinding,
    MetricResult,
    OptionEffect,
    OptionRun,
    ValidationReport,
)
from advisor.models.differences import Option, options, side_for

DESIGN = ("one option at a time: A against A plus that option alone, one A/B run per option, "
          "each with the combined run's pairs and budget")
#: A figure's verdict in the words of its kind: a counter is work, not better or worse as such.
_MOVED = {"timing": {"better": "better", "worse": "worse"},
          "counter": {"better": "less work", "worse": "more work"}}


def plans(main: Plan, chosen: list[Option]) -> list[Plan]:
    """One plan per option: the combined plan's workload, pairs, budget, device and claims."""
    return [Plan(a=main.a, b=side_for(main.a, o), workload=main.workload, pairs=main.pairs,
                 device=main.device, device_bytes=main.device_bytes, loop_dir=main.loop_dir,
                 direct_io=main.direct_io, claims=list(main.claims), age=main.age,
                 budget_seconds=main.budget_seconds) for o in chosen]


def estimate_seconds(main: Plan, count: int, measured: float | None = None) -> float:
    """Wall time of `count` option runs: each as long as the combined run took (`measured`), or
    its budget when it has not run."""
    return count * (measured if measured else main.budget_seconds)


def skip_reason(report: ValidationReport, chosen: list[Option]) -> str | None:
    """Why attribution has nothing to do after `report` (None: it has)."""
    if report.calibrate:
        return "an A/A run has no options to attribute"
    if len(chosen) < 2:
        return (f"B differs from A in {len(chosen)} option"
                f"{'' if len(chosen) == 1 else 's'}: the A/B run already is the attribution")
    moved = [m for m in [*report.metrics, *report.mechanisms]
             if m.verdict in ("better", "worse")]
    if not moved:
        return "no metric or counter differed between A and B: nothing to attribute"
    return None


def _effect(option: str, m: MetricResult | None) -> OptionEffect:
    if m is None:
        return OptionEffect(option=option)
    return OptionEffect(option=option, ratio=m.ratio, ci=list(m.ci), verdict=m.verdict)


def _words(kind: str, e: OptionEffect) -> str:
    assert e.verdict is not None and e.ratio is not None and e.ci is not None
    said = _MOVED[kind].get(e.verdict, e.verdict)
    return f"{e.option}: {said} (B/A {e.ratio:.3f}, [{e.ci[0]:.3f}, {e.ci[1]:.3f}])"


def _finding(name: str, title: str, kind: str, combined: MetricResult | None,
             effects: list[OptionEffect]) -> AttributionFinding:
    moved = [e for e in effects if e.verdict in ("better", "worse")]
    unclear = [e.option for e in effects if e.verdict in (None, "inconclusive")]
    none_of = [e.option for e in effects if e.verdict == "equivalent"]
    parts = []
    if moved:
        parts.append("moved by " + "; ".join(_words(kind, e) for e in moved))
    if none_of:
        parts.append(f"not by {', '.join(none_of)} (inside the margin)")
    if unclear:
        parts.append(f"cannot tell for {', '.join(unclear)}")
    if not moved and combined is not None and combined.verdict in ("better", "worse"):
        parts.insert(0, "all options together moved it, no option alone did: cannot tell which "
                        "(an interaction, or too few pairs)")
    return AttributionFinding(
        name=name, title=title, kind="timing" if kind == "timing" else "counter",
        combined_verdict=combined.verdict if combined else None, effects=effects,
        moved_by=[e.option for e in moved], summary="; ".join(parts))


def combine(chosen: list[Option], reports: list[ValidationReport],
            combined: ValidationReport | None = None) -> Attribution:
    """The option runs' reports (in `chosen`'s order) as one attribution: per timing metric and
    counter, what each option alone did. `combined`: the run with all of B's options."""
    runs = [OptionRun(option=o.label, b=r.b, verdict=r.verdict, metrics=r.metrics,
                      mechanisms=r.mechanisms, mechanism_checks=r.mechanism_checks,
                      wall_seconds=r.timing.wall_seconds)
            for o, r in zip(chosen, reports, strict=True)]
    findings = []
    for kind in ("timing", "counter"):
        def figures(r: ValidationReport, kind: str = kind) -> list[MetricResult]:
            return r.metrics if kind == "timing" else r.mechanisms

        names: dict[str, str] = {}
        for r in [*([combined] if combined else []), *reports]:
            for m in figures(r):
                names.setdefault(m.name, m.title)
        for name, title in names.items():
            effects = [_effect(o.label, next((m for m in figures(r) if m.name == name), None))
                       for o, r in zip(chosen, reports, strict=True)]
            main = next((m for m in figures(combined) if m.name == name), None) \
                if combined else None
            findings.append(_finding(name, title, kind, main, effects))
    return Attribution(design=DESIGN, options=[o.label for o in chosen], runs=runs,
                       findings=findings,
                       wall_seconds=round(sum(r.wall_seconds for r in runs), 2))


RunOne = Callable[[Plan, int], ValidationReport]


def attribute(main: Plan, run_one: RunOne, combined: ValidationReport | None = None
              ) -> Attribution:
    """Run one plan per option of B (`run_one(plan, index)` runs it: Session.run_validation)
    and combine them."""
    chosen = options(main.a, main.b)
    reports = [run_one(p, i) for i, p in enumerate(plans(main, chosen))]
    return combine(chosen, reports, combined)
