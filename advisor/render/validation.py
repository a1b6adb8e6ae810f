"""The readable form of a validation report, for `xfs-advisor validate` and the TUI alike: what
ran, a table, a plot of A against B per metric, what the verdict means and what attribution
found, as plain text or Markdown (the plot drawn in plain characters; no Textual here)."""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence

from advisor.models.bench import MetricResult, ValidationReport
from advisor.models.differences import options
from advisor.models.limits import MAX_PAIRS
from advisor.models.units import human_size
from advisor.render.verdict import ci_text


def _num(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def _side(label: str, mkfs: list[str], mount: list[str], source: str) -> str:
    made = " ".join(mkfs) or "(mkfs defaults)"
    mounted = ",".join(mount) or "defaults"
    return f"{label} = mkfs.xfs {made}, mount -o {mounted}  [{source}]"


def _verdict_note(m: MetricResult) -> str:
    first = " (primary)" if m.primary_for else ""
    if m.verdict != "inconclusive":
        when = f" after {m.decided_after} pairs" if m.decided_after else ""
        return f"{m.verdict}{when}{first}"
    more = f"~{m.rounds_to_resolve} pairs" if m.rounds_to_resolve else f">{MAX_PAIRS} pairs"
    return f"inconclusive (noise {m.noise * 100:.0f}%/pair; {more} would resolve){first}"


def load_line(report: ValidationReport) -> str | None:
    """The machine's load during the run, beside the verdict."""
    load = report.environment.load_average
    if len(load) != 3:
        return None
    return (f"Load average (1 min) during the run: {load[0]:.1f} at the start, {load[1]:.1f} at "
            f"most, {load[2]:.1f} at the end, on {report.environment.cpu_count or '?'} CPUs")


def allows(verdicts: Sequence[str]) -> str:
    """The verdicts an interval still allows, in words: "worse or equivalent"."""
    if len(verdicts) > 2:
        return f"{', '.join(verdicts[:-1])} or {verdicts[-1]}"
    return " or ".join(verdicts) or "anything"


def pairs_line(report: ValidationReport) -> str:
    """How many pairs ran and why no more (the adaptive rounds' stopping rule)."""
    t = report.timing
    line = (f"{report.rounds} pairs, order {' '.join(report.order[:8])}"
            f"{' ...' if len(report.order) > 8 else ''}; {t.wall_seconds:.0f} s, "
            f"{t.measuring_share * 100:.0f}% of it measuring")
    if report.stopping is not None:
        line += f"; stopped: {report.stopping.summary}"
    return line


def stopping_lines(report: ValidationReport, saved: str | None = None) -> list[str]:
    """The method and what is still open, for the end of the report. `saved`: where this
    report's JSON was written, for the command that continues it (None: not said, as no file
    the reader has would do)."""
    st = report.stopping
    if st is None:
        return []
    lines = [f"Intervals: {st.method}."]
    if st.open:
        lines.append("Still open:")
        lines += [f"  {line}" for line in st.open]
        if st.reason != "resolved" and saved:
            lines.append(f"  (`xfs-advisor validate --continue {shlex.quote(saved)}` adds pairs "
                         "to this run, keeping the ones measured)")
    return lines


def workload_line(shape: dict[str, object]) -> str:
    """What every round ran (the shape in the report's `workload`), in one line."""
    def n(key: str) -> int:
        value = shape.get(key)
        return value if isinstance(value, int) else 0

    entries, asked = n("directory_entries"), shape.get("directory_entries_asked")
    scaled = f" (answer {asked:,}, scaled to the budget)" if isinstance(asked, int) \
        and asked != entries else ""
    parts = [f"{entries:,} files created in one directory{scaled}",
             f"{n('churn_entries'):,} of them deleted, as many created into the holes and "
             "statted cold"]
    seconds = shape.get("phase_seconds")
    data = [what for key, what in (("fsync_phase", "fsync'd 4 KiB writes"),
                                   ("sequential_phases", "1 MiB direct writes and reads"))
            if shape.get(key)]
    if data:
        parts.append(f"{n('writers')} writer(s), {seconds} s each of {' and '.join(data)}")
    return "; ".join(parts)


def table(report: ValidationReport) -> str:
    """One row per metric. The per-side columns are geometric means, so that B/A is exactly
    their ratio (a median or arithmetic mean per side can contradict the paired ratio)."""
    head = f"{'metric':<42} {'A geo.mean':>11} {'B geo.mean':>11} {'B/A':>6} {'95% CI':>15} " \
           f"{'margin':>7}  verdict"
    lines = [head, "-" * len(head)]
    for m in report.metrics:
        title = f"{m.title} ({m.unit})"
        lines.append(
            f"{title[:42]:<42} {_num(m.geo('A')):>11} "
            f"{_num(m.geo('B')):>11} {m.ratio:>6.3f} "
            f"{ci_text(m.ci):>15} {f'+-{m.margin * 100:.0f}%':>7}  "
            f"{_verdict_note(m)}")
    return "\n".join(lines)


#: A mechanism figure's verdict in words: fewer log writes is less work, not "better" as such.
_WORK = {"better": "less work", "worse": "more work", "equivalent": "the same work",
         "inconclusive": "cannot tell"}


def mechanism_table(report: ValidationReport) -> str:
    """Work per operation from XFS's and the block layer's counters, per side (geometric means),
    B/A with its interval: what the options did, judged on its own."""
    if not report.mechanisms:
        return ""
    head = f"{'work per operation (counters)':<42} {'A':>11} {'B':>11} {'B/A':>6} {'95% CI':>15}" \
           "  B did"
    lines = [head, "-" * len(head)]
    for m in report.mechanisms:
        title = f"{m.title} ({m.unit})"
        first = f" (primary for {', '.join(m.primary_for)})" if m.primary_for else ""
        lines.append(f"{title[:42]:<42} {_num(m.geo('A')):>11} {_num(m.geo('B')):>11} "
                     f"{m.ratio:>6.3f} {ci_text(m.ci):>15}  "
                     f"{_WORK[m.verdict]}{first}")
    return "\n".join(lines)


def plot(report: ValidationReport, width: int = 61) -> str:
    """Per metric, every pair's B/A on a log axis from 1/2 to 2 (A is the `|` at 1.0), the 95%
    interval as `[---]` and the geometric mean as `#`. Plain characters only."""
    span = math.log(2.0)

    def col(ratio: float) -> int:
        x = max(-span, min(span, math.log(max(ratio, 1e-9))))
        return round((x + span) / (2 * span) * (width - 1))

    lines = [f"{'':<20} {'0.5':<{width // 2 - 1}}{'1.0 (A)':<{width // 2 - 3}}{'2.0':>5}"]
    for m in report.metrics:
        row = [" "] * width
        lo, hi = col(m.ci[0]), col(m.ci[1])
        for i in range(lo, hi + 1):
            row[i] = "-"
        row[lo], row[hi] = "[", "]"
        row[col(1.0)] = "|"
        for a, b in zip(m.a, m.b, strict=True):
            row[col(b / a)] = "o"
        row[col(m.ratio)] = "#"
        lines.append(f"{m.name:<20} {''.join(row)}  {m.verdict}")
    lines.append(f"{'':<20} o one pair's B/A   # geometric mean   [--] 95% interval")
    return "\n".join(lines)


def what_ran(report: ValidationReport) -> list[str]:
    """The report's first lines: what was proposed, for which device, what ran as B, and every
    difference between the two (a verdict is about what ran)."""
    lines = []
    p = report.proposed
    if p is not None:
        made = " ".join(p.mkfs_options) or "(no mkfs options)"
        mounted = ",".join(p.mount_options) or "defaults"
        lines.append(f"Proposed for {report.proposed_for or 'the device'}: mkfs.xfs {made}, "
                     f"mount -o {mounted}")
    lines.append(_side("A", report.a.mkfs_options, report.a.mount_options, report.a.source))
    lines.append(_side("B", report.b.mkfs_options, report.b.mount_options, report.b.source)
                 + ("  (as run)" if p is not None else ""))
    size = report.environment.device_size_bytes
    for n in report.not_applied:
        lines.append(f"Not applied on this {human_size(size)} device: {n.option} "
                     f"({n.reason}): the verdict says nothing about it")
    if p is not None and not report.not_applied:
        lines.append("B ran exactly as proposed.")
    return lines


def attribution_lines(report: ValidationReport) -> list[str]:
    """Which option moved which figure (validate --attribute), one line per figure that the
    combined run or some option alone moved; or why attribution did not run."""
    if report.attribution_skipped:
        return [f"Attribution not run: {report.attribution_skipped}"]
    at = report.attribution
    if at is None:
        return []
    lines = [f"Attribution ({at.design}; {at.wall_seconds:.0f} s):"]
    for run in at.runs:
        lines.append(f"  {run.option} alone: {run.verdict}"
                     + "".join(f"; {c.counter}: mechanism {c.seen}"
                               for c in run.mechanism_checks))
    shown = [f for f in at.findings
             if f.moved_by or f.combined_verdict in ("better", "worse")]
    for f in shown:
        said = _WORK.get(f.combined_verdict or "", f.combined_verdict) \
            if f.kind == "counter" else f.combined_verdict
        together = f" (all options: {said})" if f.combined_verdict else ""
        lines.append(f"  {f.title}{together}: {f.summary}")
    quiet = len(at.findings) - len(shown)
    if quiet:
        lines.append(f"  {quiet} other figure(s): moved by no option and not by the "
                     "combined run")
    return lines


def unclaimed(report: ValidationReport) -> list[str]:
    """B's options (those A lacks) that no mechanism check speaks for: the report says so rather
    than leave them out."""
    if report.calibrate:
        return []
    checked = [c.option for c in report.mechanism_checks]
    return [o.label for o in options(report.a, report.b)
            if not any(o.label.startswith(c) or c.startswith(o.label) for c in checked)]


def measured_line(measured: dict[str, str]) -> str:
    """Which answers were measured, by which command: `answers measured by xfs-advisor
    observe: concurrent_writers, fsyncs_per_second`."""
    by: dict[str, list[str]] = {}
    for answer, tool in sorted(measured.items()):
        by.setdefault(tool, []).append(answer)
    return "; ".join(f"answers measured by xfs-advisor {tool}: {', '.join(answers)}"
                     for tool, answers in sorted(by.items()))


def render_text(report: ValidationReport, *, with_plot: bool = True,
                saved: str | None = None) -> str:
    """The report for people; `saved`: where its JSON was written (see stopping_lines)."""
    env = report.environment
    out = [
        "A/A calibration run" if report.calibrate else "A/B validation",
        *["  " + line for line in what_ran(report)],
        f"  {pairs_line(report)}",
        f"  each side: {workload_line(report.workload)}",
        *([f"  {measured_line(report.measured_answers)}"] if report.measured_answers else []),
        f"  device {env.device} ({env.device_size_bytes >> 20} MiB), kernel {env.kernel}, "
        f"xfsprogs {env.xfsprogs}, {env.fio}",
        *([f"  {report.calibration.summary}"] if report.calibration else []),
        "",
        table(report),
        "",
    ]
    if report.mechanisms:
        out += [mechanism_table(report)]
        out += [f"  not shown: {line}" for line in report.mechanisms_not_shown]
        for c in report.mechanism_checks:
            interval = f" (B/A {c.ratio:.3f}, {ci_text(c.ci)})" \
                if c.ratio is not None and c.ci else ""
            out.append(f"  {c.option}: rule {c.rule} says {c.expect} {c.counter}: "
                       f"mechanism {c.seen}{interval}")
        out += [f"  {o}: no rule names a counter that shows its mechanism"
                for o in unclaimed(report)]
        out.append("")
    if with_plot:
        out += [plot(report), ""]
    if report.age:
        free = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in report.age.freesp_summary.items())
        out.append(f"Aged: {report.age.files_written} files written, every other deleted; {free}")
    for m in report.metrics:
        if m.margin_capped and m.calibrated_floor is not None:
            out.append(f"Margin capped: {m.name} at +-{m.margin * 100:.0f}% (its calibrated noise "
                       f"floor is {m.calibrated_floor * 100:.0f}%: calibrate on a quieter machine)")
    for line in report.recovered:
        out.append(f"Recovered: {line}")
    out += stopping_lines(report, saved)
    out.append(f"Verdict: {report.verdict.upper()}: {report.summary}")
    load = load_line(report)
    if load:
        out.append(load)
    if env.isolation:
        out.append(f"Isolation: {env.isolation}")
    attributed = attribution_lines(report)
    if attributed:
        out += ["", *attributed]
    if env.note:
        out.append(f"Note: {env.note}")
    return "\n".join(out)


def render_markdown(report: ValidationReport) -> str:
    """The report as Markdown (the TUI's "save report"): what ran, the margins' origin, one table
    row per metric and per counter, and the verdict, plus the plain-text plot in a code block."""
    env = report.environment
    title = "A/A calibration run" if report.calibrate else "A/B validation"
    out = [f"# xfs-advisor: {title}", ""]
    out += [f"- {line}" for line in what_ran(report)]
    out += [f"- {pairs_line(report)}",
            f"- each side: {workload_line(report.workload)}",
            f"- device {env.device} ({human_size(env.device_size_bytes)}), kernel {env.kernel}, "
            f"xfsprogs {env.xfsprogs}, {env.fio}"]
    if report.calibration:
        out.append(f"- {report.calibration.summary}")
    out += ["", "| metric | A (geo. mean) | B (geo. mean) | B/A | 95% CI | margin | verdict |",
            "|---|---:|---:|---:|---|---:|---|"]
    for m in report.metrics:
        out.append(f"| {m.title} ({m.unit}) | {_num(m.geo('A'))} | {_num(m.geo('B'))} | "
                   f"{m.ratio:.3f} | [{m.ci[0]:.3f}, {m.ci[1]:.3f}] | "
                   f"±{m.margin * 100:.0f}% | {_verdict_note(m)} |")
    if report.mechanisms:
        out += ["", "| work per operation (counters) | A | B | B/A | 95% CI | B did |",
                "|---|---:|---:|---:|---|---|"]
        for m in report.mechanisms:
            out.append(f"| {m.title} ({m.unit}) | {_num(m.geo('A'))} | "
                       f"{_num(m.geo('B'))} | {m.ratio:.3f} | "
                       f"[{m.ci[0]:.3f}, {m.ci[1]:.3f}] | {_WORK[m.verdict]} |")
        out += ["", *[f"- {c.option}: rule {c.rule} says {c.expect} {c.counter}: mechanism "
                      f"{c.seen}" for c in report.mechanism_checks],
                *[f"- {o}: no rule names a counter that shows its mechanism"
                  for o in unclaimed(report)]]
    out += ["", *stopping_lines(report)]
    out += ["", f"**Verdict: {report.verdict}.** {report.summary}"]
    load = load_line(report)
    if load:
        out += ["", load]
    out += ["", "```", plot(report), "```"]
    if report.attribution_skipped:
        out += ["", f"Attribution not run: {report.attribution_skipped}"]
    elif report.attribution is not None:
        at = report.attribution
        out += ["", "## Attribution", "", f"{at.design}; {at.wall_seconds:.0f} s.", "",
                "| figure | all options | " + " | ".join(f"{o} alone" for o in at.options)
                + " | moved by |",
                "|---|---|" + "---|" * len(at.options) + "---|"]
        for f in at.findings:
            cells = [f"{e.ratio:.3f} [{e.ci[0]:.3f}, {e.ci[1]:.3f}] {e.verdict}"
                     if e.ratio is not None and e.ci else "not measured" for e in f.effects]
            moved = ", ".join(f.moved_by) or (
                "cannot tell" if f.combined_verdict in ("better", "worse") else "-")
            out.append(f"| {f.title} | {f.combined_verdict or '-'} | {' | '.join(cells)} | "
                       f"{moved} |")
    if env.note:
        out += ["", f"_{env.note}_"]
    return "\n".join(out) + "\n"
