"""The report of a run on the validate step: the verdict, a row per metric with its interval and
margin, what would settle an inconclusive metric, a plot of A and B per round; ctrl+s saves it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from rich.text import Text
from textual.containers import Grid
from textual.widgets import DataTable, Static

from advisor.models.bench import METRICS
from advisor.models.limits import MAX_PAIRS
from advisor.models.units import human_size
from advisor.render.validation import attribution_lines, render_markdown, what_ran
from advisor.tui.step import StepScreen
from advisor.tui.validate.plot import MetricPlot

if TYPE_CHECKING:
    from advisor.bench.plan import Plan
    from advisor.models.bench import MetricResult, ValidationReport


class ReportView(StepScreen):
    """The validate screen's report: the last run's, or none while a run goes (its live plots
    then)."""

    def __init__(self) -> None:
        super().__init__()
        self.report: ValidationReport | None = None
        self._ran: Plan | None = None
        """The plan the report's run ran (what attribution runs again, option by option)."""
        self._plots: dict[str, MetricPlot] = {}

    def _prepare_report(self) -> None:
        """The metrics table's columns; the table and the next steps hidden until a report."""
        table = self.query_one("#metrics", DataTable)
        # Widths that fit 80 columns (the sides line says what A and B are); a long metric
        # title or margin wraps within its row instead of pushing the table off the screen.
        for label, width in METRIC_COLUMNS:
            table.add_column(label, width=width)
        self.query_one("#metrics").display = False
        self.query_one("#next").display = False

    def _clear_report(self, plan: Plan) -> None:
        """No report while `plan` runs: the table, the next steps, the plots and the verdict
        cleared."""
        self.report = None
        self._ran = plan
        self.query_one("#metrics").display = False
        self.query_one("#next").display = False
        self.query_one("#plots", Grid).remove_children()
        self._plots = {}
        self.query_one("#verdict", Static).update("")

    def _plot_sample(self, side: str, values: dict[str, float]) -> None:
        """Live plots: one per metric, made when its first value arrives, one point per side and
        round. The report replaces them with its own once the run is judged."""
        known = {m.name: (m.title, m.unit) for m in METRICS}
        for name, value in values.items():
            plot = self._plots.get(name)
            if plot is None:
                title, unit = known.get(name, (name, ""))
                plot = MetricPlot(name, title, unit, plain=self.advisor.plain_glyphs)
                self._plots[name] = plot
                self.query_one("#plots", Grid).mount(plot)
            plot.add(side, value)

    def _attribution_offer(self) -> str:
        """What ctrl+b would do after this verdict, or why it would not ("" before a verdict)."""
        if self.report is None or self._ran is None:
            return ""
        return self.advisor.state.session.attribution_offer(self._ran, self.report)

    def action_save_report(self) -> None:
        """The last report as Markdown (or the --json document, for a name ending in .json);
        an existing file only after asking."""
        if self.report is None:
            self.notify("no report yet: a run's report can be saved once it is judged",
                        severity="warning")
            return
        from advisor.tui.dialogs import save_file

        report = self.report

        def text(target: Path) -> str:
            if target.suffix == ".json":
                return report.model_dump_json(indent=2) + "\n"
            return render_markdown(report)

        save_file(self.app, "Save the report to (.md, or .json for the --json document):",
                  "validation-report.md", "validation report", text, by_name=True)

    def show_report(self, report: ValidationReport) -> None:
        """The verdict, one row per metric with its interval, and a plot of A and B per round."""
        self.report = report
        # As `xfs-advisor validate` says it: what was proposed, what ran, every difference, and
        # where the margins came from (a stored calibration decides them).
        lines = what_ran(report)
        if report.calibration is not None:
            lines.append(report.calibration.summary)
        self.query_one("#sides", Static).update(Text("\n".join(lines)))
        env = report.environment
        where = f"Ran on {env.device} ({human_size(env.device_size_bytes)}" + (
            f", a loop device over {env.loop_backing_file})" if env.loop_backing_file else ")")
        after = [self._attribution_offer(), *attribution_lines(report)]
        self.query_one("#verdict", Static).update(Text("\n".join(
            [f"Verdict: {report.verdict}. {report.summary}", where, *[a for a in after if a]])))
        table = self.query_one("#metrics", DataTable)
        table.clear()
        for m in report.metrics:
            table.add_row(
                m.title, _mean(m, "A"), _mean(m, "B"), f"{m.ratio:.3f}",
                interval_text(m.ci[0], m.ci[1]),
                Text(m.verdict, style=_VERDICT_STYLE.get(m.verdict, "")), margin_text(m),
                height=None)
        table.display = True
        self.query_one("#next", Static).update(Text("\n".join(next_steps(report))))
        self.query_one("#next").display = True
        plots = self.query_one("#plots", Grid)
        plots.remove_children()
        self._plots = {}
        for m in report.metrics:
            plot = MetricPlot(m.name, m.title, m.unit, plain=self.advisor.plain_glyphs)
            plot.values = {"A": list(m.a), "B": list(m.b)}
            self._plots[m.name] = plot
            plots.mount(plot)
            plot.redraw()


#: The metrics table's columns and widths: 61 cells of content and 14 of padding fit the 76 an
#: 80-column screen leaves inside the scrolled body.
METRIC_COLUMNS = (("metric", 11), ("A", 7), ("B", 7), ("B/A", 5), ("95% CI", 9),
                  ("verdict", 12), ("margin", 11))


def _short(x: float) -> str:
    """A bound of an interval in at most 4 characters (0.67, 12.3, 123, inf)."""
    if math.isinf(x):
        return "inf"
    if x < 10:
        return f"{x:.2f}"
    if x < 100:
        return f"{x:.1f}"
    return f"{x:.0f}"


def interval_text(lo: float, hi: float) -> str:
    """A ratio's interval, compact: `0.67-0.91`."""
    return f"{_short(lo)}-{_short(hi)}"


def margin_text(m: MetricResult) -> str:
    """A metric's margin and where it came from: the default, the calibrated noise floor, or
    that floor capped (the run's calibration line says which calibration)."""
    shown = f"±{m.margin * 100:.0f}%"
    floor = m.calibrated_floor
    if floor is None:
        return f"{shown} default"
    if m.margin_capped:
        return f"{shown} capped (floor {floor * 100:.0f}%)"
    if floor * 100 < round(m.margin * 100):
        return f"{shown} default (floor {floor * 100:.0f}%)"
    return f"{shown} calibrated"


def next_steps(report: ValidationReport) -> list[str]:
    """What would settle each inconclusive metric (pairs in all, with the noise seen) and what
    can be done with the report."""
    lines = []
    for m in report.metrics:
        if m.verdict != "inconclusive":
            continue
        if m.rounds_to_resolve:
            need = f"~{m.rounds_to_resolve} pairs would likely resolve it"
        else:
            need = f"more than {MAX_PAIRS} pairs, or the difference sits on the margin"
        lines.append(f"{m.title}: inconclusive after {report.rounds} pairs (noise "
                     f"{m.noise * 100:.0f}% per pair); {need}.")
    # ctrl+b is offered under the verdict (it may not apply); ctrl+e is in the help and the
    # palette.
    lines.append("ctrl+s saves this report (Markdown, or JSON for a .json name).")
    return lines


_VERDICT_STYLE = {"better": "bold green", "worse": "bold red", "equivalent": "cyan",
                  "inconclusive": "yellow"}


def _mean(m: MetricResult, side: Literal["A", "B"]) -> str:
    """A side's geometric mean (so that B/A is their ratio), from the report or the samples."""
    if not (m.a if side == "A" else m.b):
        return "-"
    g = m.geo(side)
    return f"{g:,.0f}" if g >= 100 else f"{g:.3g}"
