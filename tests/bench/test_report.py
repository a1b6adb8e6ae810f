"""The readable report: it says what each side ran, what was measured, and the verdict; the table
keeps every metric's title whole at 80 columns' worth of title."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from advisor.bench.plan import Plan
from advisor.bench.verdicts import judge
from advisor.commands.schema import schema_text
from advisor.models.bench import BenchEnvironment, SideConfig, Timing, ValidationReport
from advisor.models.workload import Workload
from advisor.render.validation import render_text, table, workload_line


def _report(workload: Workload, slower: float, faster_stats: float = 1.0) -> ValidationReport:
    plan = Plan(a=SideConfig(label="A"), b=SideConfig(label="B", mkfs_options=["-n", "size=64k"]),
                workload=workload)
    shape = plan.shape
    wobble = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0]
    factor = {"refill": slower, "stat": faster_stats}
    samples = {m.name: {"A": [1000.0 * w for w in wobble],
                        "B": [1000.0 * w * factor.get(m.job, 1.0) for w in reversed(wobble)]}
               for m in shape.metrics}
    env = BenchEnvironment(device="/dev/loop7", device_size_bytes=4 << 30,
                           loop_backing_file="/var/tmp/xfs-advisor-x/scratch.img",
                           note="a loop device over ...: not a real device")
    return judge(plan, samples, infos={}, env=env, shape=shape, age=None,
                 timing=Timing(wall_seconds=100.0, measuring_seconds=63.0, measuring_share=0.63),
                 recovered=[], store=None)


def test_report_says_what_ran_and_what_was_found() -> None:
    example = Workload(largest_directory_entries=200_000, fsyncs_per_second=50,
                       concurrent_writers=8, median_file_size=65536)
    report = _report(example, slower=0.7)
    text = render_text(report, with_plot=False)
    entries = report.workload["directory_entries"]
    assert isinstance(entries, int) and entries < 200_000
    assert (f"each side: {entries:,} files created in one directory (answer 200,000, scaled to "
            "the budget)") in text
    assert f"{entries // 10:,} of them deleted" in text
    assert "8 writer(s)" in text and "fsync'd 4 KiB writes" in text
    assert "1 MiB direct" not in text  # median file 64 KiB: no sequential phases
    assert "B = mkfs.xfs -n size=64k" in text
    # The line leads with the option's primary metric (no rule claims a counter for -n size=:
    # CPU time per create), then throughput as its consequence.
    assert ("Verdict: WORSE: mechanism not decided for the changed option; throughput: slower on "
            "refill_creates_per_s (0.70x). -n size=64k: dir changes per CPU-second B/A") in text
    assert "Throughput: worse on refill_creates_per_s (0.70x)" in text


def test_a_trade_is_said_in_the_verdict_line() -> None:
    """64 KiB directory blocks measured here: creates into holes ~0.5x, cold stats ~1.3x. The
    run's one word stays "worse" (exit 5), and its line names what got better too."""
    report = _report(Workload(), slower=0.5, faster_stats=1.3)
    assert report.verdict == "worse"
    assert "Throughput: worse on refill_creates_per_s (0.50x); better on stats_per_s (1.30x)" \
        in report.summary
    assert report.summary.endswith("a trade: weigh which the workload does more of")
    assert "Verdict: WORSE: " + report.summary in render_text(report, with_plot=False)


def test_table_keeps_titles_whole() -> None:
    report = _report(Workload(), slower=1.0)
    rows = table(report).splitlines()[2:]
    assert len(rows) == len(report.metrics) == 9
    for m, row in zip(report.metrics, rows, strict=True):
        assert row.startswith(f"{m.title} ({m.unit})"), row


def test_workload_line_without_data_phases_or_answer() -> None:
    line = workload_line({"directory_entries": 20_000, "directory_entries_asked": None,
                          "churn_entries": 2_000, "writers": 1, "phase_seconds": 0.5,
                          "fsync_phase": False, "sequential_phases": False})
    assert line == ("20,000 files created in one directory; 2,000 of them deleted, as many "
                    "created into the holes and statted cold")


def test_the_report_is_valid_under_its_published_schema() -> None:
    report = _report(Workload(), slower=0.5, faster_stats=1.3)
    doc = json.loads(report.model_dump_json())
    jsonschema.validate(doc, json.loads(schema_text("validate")))
    assert doc["metrics"][2]["primary_for"] == ["-n size=64k"]


def _open_report() -> ValidationReport:
    """A report whose run stopped on its budget with a metric still open."""
    from advisor.models.bench import Stopping

    report = _report(Workload(largest_directory_entries=5000), 1.0)
    return report.model_copy(update={"stopping": Stopping(
        method="confidence sequences", alpha=0.05, min_rounds=4, max_rounds=8,
        budget_seconds=80, reason="budget", summary="budget after 8 pairs",
        open=["creates_per_s: could still be better or worse"])})


def test_the_continue_command_names_only_a_report_that_was_saved() -> None:
    """`validate --continue` needs the JSON report: the text names the file written, and with
    none (the TUI's Markdown, a report that could not be saved) the line is left out rather
    than point at a REPORT.json nobody has."""
    from advisor.render.validation import render_markdown

    report = _open_report()
    saved = render_text(report, with_plot=False, saved="/var/lib/xfs advisor/run.json")
    assert "`xfs-advisor validate --continue '/var/lib/xfs advisor/run.json'` adds pairs" \
        in saved
    for text in (render_text(report, with_plot=False), render_markdown(report)):
        assert "Still open:" in text  # the open metric is said all the same
        assert "--continue" not in text and "REPORT.json" not in text


def test_a_report_without_geometric_means_shows_the_ones_its_samples_give() -> None:
    """Older reports lack geo_mean_a/b: the text and the Markdown compute them from the samples,
    to what the run itself would have stored (rounded to 3 places)."""
    from advisor.render.validation import render_markdown

    report = _report(Workload(), slower=0.7)
    older = report.model_copy(deep=True)
    for m in older.metrics:
        m.geo_mean_a = m.geo_mean_b = None
    assert table(older) == table(report)
    assert render_markdown(older) == render_markdown(report)
    m = older.metrics[0]
    assert round(m.geo("A"), 3) == report.metrics[0].geo_mean_a
    assert m.geo("B") != m.geo("A")


def test_a_report_folder_that_cannot_be_made_is_said_in_one_plain_line(tmp_path: Path) -> None:
    """A state folder on a read-only filesystem, or a file where the folder should be: one line
    naming the folder and why, as for a report file that cannot be written (no errno tuple)."""
    from advisor.commands.validate import _save

    (tmp_path / "state").write_text("a file, not a folder\n")
    said: list[str] = []
    assert _save(_open_report(), tmp_path / "state" / "reports" / "r.json", said.append) is None
    assert said == [f"the report was not saved: cannot make folder {tmp_path}/state/reports: "
                    "Not a directory"]
