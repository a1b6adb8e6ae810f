"""The report's words and its one-word verdict: each changed option's primary metric first (what
it did per operation), then throughput as its consequence, then the costs the counters found."""

from __future__ import annotations

import math

from advisor.models.bench import MechanismCheck, MetricResult, Verdict
from advisor.models.limits import MAX_PAIRS


def ci_text(ci: list[float]) -> str:
    """`[0.103, 0.171]`; an end the interval does not have yet as `inf`."""
    hi = "inf" if ci[1] > 1e6 else f"{ci[1]:.3f}"
    return f"[{ci[0]:.3f}, {hi}]"


def pairs_time(pairs: int, seconds_per_pair: float | None) -> str:
    """`~12 more pairs (~90 s here)`."""
    took = f" (~{pairs * seconds_per_pair:.0f} s here)" if seconds_per_pair else ""
    return f"~{pairs} more pairs{took}"


def _primary_phrase(m: MetricResult, checks: list[MechanismCheck],
                    seconds_per_pair: float | None = None) -> str:
    """One option's primary metric in words, led by what it did per operation:
    `logbsize=256k: 7.1x fewer log writes per 1k directory ops (mechanism seen, decided after 4
    pairs)`."""
    who = ", ".join(m.primary_for)
    seen = next((c.seen for c in checks if c.counter == m.name), None)
    lo, hi = m.ci
    if m.verdict == "inconclusive":
        more = (f" ({pairs_time(m.rounds_to_resolve - len(m.a), seconds_per_pair)} would "
                "likely decide it)" if m.rounds_to_resolve else "")
        return (f"{who}: {m.title} B/A {m.ratio:.3f} {ci_text(m.ci)}, not decided after "
                f"{len(m.a)} pairs{more}")
    when = f"decided after {m.decided_after} pairs" if m.decided_after else "decided"
    how = f"mechanism {seen}, {when}" if seen else f"{m.verdict}, {when}"
    if m.higher_is_better:
        return f"{who}: {m.title} B/A {m.ratio:.3f} [{lo:.3f}, {hi:.3f}] ({how})"
    if m.ratio == 0.0:
        return f"{who}: no {m.title} at all (A: {_geo_text(m.geo_mean_a)}) ({how})"
    if m.verdict == "equivalent":
        return f"{who}: the same {m.title} within {m.margin * 100:.0f}% ({how})"
    size = f"{1 / m.ratio:.1f}x fewer" if m.ratio < 1 else f"{m.ratio:.2f}x more"
    return f"{who}: {size} {m.title} [B/A {lo:.3f}, {hi:.3f}] ({how})"


def _geo_text(x: float | None) -> str:
    return "?" if x is None else f"{x:.3g}"


#: The largest slowdown bound said as "no slowdown beyond X% shown": beyond it, inconclusive.
SLOWDOWN_BOUND_SAID = 0.25


def _primaries_of(metrics: list[MetricResult],
                  mechanisms: list[MetricResult]) -> list[MetricResult]:
    return [m for m in [*mechanisms, *metrics] if m.primary_for]


def _primary_shown(m: MetricResult, checks: list[MechanismCheck]) -> bool:
    """A primary figure decided the way its option is meant to move it: the rule's claim seen,
    or for a figure no claim names (CPU time per operation) any decided verdict but worse."""
    seen = next((c.seen for c in checks if c.counter == m.name), None)
    if seen is not None:
        return seen == "seen"
    return m.verdict in ("better", "equivalent")


def headline_verdict(metrics: list[MetricResult], mechanisms: list[MetricResult],
                     checks: list[MechanismCheck]) -> Verdict:
    """The run's one word (and so its exit code), the primary metrics leading: `worse` when a
    timing figure (primary or not) is shown slower, or a primary counter moved against its
    rule's claim; `better` when every changed option's primary metric is decided the way the
    option is meant to move it (throughput then either decided or said as bounds in the
    summary); `equivalent` when every figure is; `inconclusive` otherwise."""
    primary = _primaries_of(metrics, mechanisms)
    opposite = any(c.seen == "opposite" for c in checks
                   if any(m.name == c.counter for m in primary))
    if opposite or any(m.verdict == "worse" for m in metrics):
        return "worse"
    words = [m.verdict for m in [*primary, *metrics]]
    if words and all(w == "equivalent" for w in words):
        return "equivalent"
    if primary and all(_primary_shown(m, checks) for m in primary) \
            and not all(m.verdict == "equivalent" for m in primary):
        return "better"
    return "inconclusive"


def _throughput_phrase(metrics: list[MetricResult]) -> str:
    """Throughput in a few words: the slowdowns shown, else the largest slowdown every interval
    still excludes, else inconclusive."""
    timing = [m for m in metrics if not m.primary_for] or metrics
    if not timing:
        return "not measured"
    worse = [m for m in timing if m.verdict == "worse"]
    if worse:
        return "slower on " + ", ".join(f"{m.name} ({m.ratio:.2f}x)" for m in worse)
    # A slowdown bound per figure: how much lower than A the interval still lets B be.
    bounds = [1.0 - (m.ci[0] if m.higher_is_better else 1.0 / m.ci[1] if m.ci[1] > 0 else 0.0)
              for m in timing]
    worst = max(bounds)
    faster = [m.name for m in timing if m.verdict == "better"]
    said = f"faster on {', '.join(faster)}; " if faster else ""
    if worst <= 0.0:
        return said + "no slowdown shown anywhere"
    if worst <= SLOWDOWN_BOUND_SAID:
        return said + f"no slowdown beyond {math.ceil(round(worst * 100, 6)):.0f}% shown"
    return said + "inconclusive"


def headline(metrics: list[MetricResult], mechanisms: list[MetricResult],
             checks: list[MechanismCheck]) -> str:
    """The first clause of the verdict line: the changed options' mechanisms, then throughput:
    `mechanism shown for every changed option; throughput: no slowdown beyond 8% shown`."""
    primary = _primaries_of(metrics, mechanisms)
    shown = [m for m in primary if _primary_shown(m, checks)]
    against = [m for m in primary if m.verdict != "inconclusive" and m not in shown]
    if not primary:
        lead = "no primary metric measured"
    elif len(shown) == len(primary):
        lead = ("mechanism shown for every changed option" if len(primary) > 1
                else "mechanism shown for the changed option")
    elif len(primary) == 1:
        lead = "mechanism not decided for the changed option" if not against \
            else "mechanism not shown for the changed option"
    else:
        lead = f"mechanism shown for {len(shown)} of {len(primary)} changed options"
        if against:
            lead += " (against its claim: " + ", ".join(
                ", ".join(m.primary_for) for m in against) + ")"
    return f"{lead}; throughput: {_throughput_phrase(metrics)}"


def verdict_line(verdict: str, calibrate: bool, metrics: list[MetricResult],
                 mechanisms: list[MetricResult] | None = None,
                 checks: list[MechanismCheck] | None = None,
                 seconds_per_pair: float | None = None) -> str:
    """The verdict line: each changed option's primary metric first (what it did per
    operation), then the timing metrics as its consequence (decided, no slowdown beyond the
    margin, or undecided with the pairs and time that would settle it), then the costs the
    counters found."""
    if calibrate:
        bad = [m.name for m in metrics if m.verdict in ("better", "worse")]
        if bad:
            return f"A/A run reported a difference on {', '.join(bad)}: the set-up is too noisy"
        return "A/A run: no false difference; noise floors stored for later runs"
    mechanisms, checks = mechanisms or [], checks or []
    lead = [_primary_phrase(m, checks, seconds_per_pair) for m in [*mechanisms, *metrics]
            if m.primary_for]
    lead += [f"{c.option}: {c.counter} not measured (zero in some round on both sides or "
             "missing)" for c in checks if c.seen == "not measured"]
    rest = [m for m in metrics if not m.primary_for]
    named = {v: [m for m in rest if m.verdict == v]
             for v in ("better", "worse", "equivalent", "inconclusive")}
    said = []
    for v in ("worse", "better"):
        if named[v]:
            said.append(f"{v} on " + ", ".join(f"{m.name} ({m.ratio:.2f}x)" for m in named[v]))
    if named["equivalent"]:
        said.append("no difference beyond +-5% shown on "
                    + ", ".join(m.name for m in named["equivalent"]))
    if named["inconclusive"]:
        needs = [m.rounds_to_resolve - len(m.a) for m in named["inconclusive"]
                 if m.rounds_to_resolve]
        more = (pairs_time(max(needs), seconds_per_pair) + " would likely settle "
                + ("them" if len(needs) > 1 else "it")) if needs \
            else f"more than {MAX_PAIRS} pairs would be needed"
        said.append(f"undecided on {', '.join(m.name for m in named['inconclusive'])} ({more})")
    if named["worse"] and named["better"]:
        said.append("a trade: weigh which the workload does more of")
    costs = [f"{m.title} up {m.ratio:.2f}x [{m.ci[0]:.2f}, {m.ci[1]:.2f}]" for m in mechanisms
             if not m.primary_for and m.verdict == "worse"]
    text = headline(metrics, mechanisms, checks) + ". " + "; ".join(lead)
    text += (". " if lead else "") + "Throughput: " + ("; ".join(said) or "nothing else measured")
    if costs:
        text += ". Costs the counters found: " + "; ".join(costs)
    return text
