"""The counter and perf parsers on captured text: field names from fs/xfs/xfs_stats.h, counts
from perf's CSV, thread names that hold spaces and dashes, and bad text refused in one line."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from advisor.commands.observe import duration
from advisor.errors import BadInput
from advisor.models.workload import Workload
from advisor.observe.counters import deltas, parse_block_stat, parse_xfs_stats
from advisor.observe.tracepoints import (
    WRITER_SLICE_MS,
    Sample,
    active_per_second,
    device_filter,
    parse_samples,
    parse_totals,
    per_thread,
    writer_period,
    writer_slices,
)
from advisor.profile.workload_file import measured_in
from advisor.render.validation import measured_line

#: /sys/fs/xfs/loop0/stats/stats of a kernel 6.18 filesystem, trimmed.
STATS = """extent_alloc 10 20 3 4
dir 1505 2000 12 7
trans 0 1505 3
log 1505 3010 0 1507 1508
push_ail 1505 42 0 0 0 0 0 0 0 0
attr 9 50 0 1
xpc 0 150500 4096
vnodes 12 0 0 0 0 0 0 0
future_line 7 8
"""


def test_xfs_stats_fields_by_name() -> None:
    values = parse_xfs_stats(STATS)
    assert values["log.force"] == 1507 and values["log.force_sleep"] == 1508
    assert values["push_ail.sleep_logspace"] == 42
    assert values["dir.create"] == 2000 and values["attr.set"] == 50
    assert values["xpc.write_bytes"] == 150500
    assert values["future_line.1"] == 8  # an unknown line is kept, by position


def test_deltas_skip_levels_and_survive_a_cleared_counter() -> None:
    before = parse_xfs_stats(STATS)
    after = dict(before, **{"log.force": 1600, "dir.create": 5, "vnodes.active": 99})
    moved = deltas(before, after)
    assert moved["log.force"] == 93
    assert moved["dir.create"] == 5  # cleared through stats_clear, then 5 more
    assert "vnodes.active" not in moved


@pytest.mark.parametrize("text", ["", "log 1 2 x", "hello world"])
def test_not_a_stats_file(text: str) -> None:
    with pytest.raises(BadInput, match="not an XFS statistics file"):
        parse_xfs_stats(text)


def test_block_stat() -> None:
    stat = parse_block_stat("  1574 0 3148 10 3011 0 15052 200 0 400 210 0 0 0 0 3012 5")
    assert stat["write_ios"] == 3011 and stat["write_sectors"] == 15052
    assert stat["flush_ios"] == 3012
    with pytest.raises(BadInput):
        parse_block_stat("1 2 3")


def test_perf_totals_and_samples() -> None:
    totals = parse_totals("500,,xfs:xfs_file_fsync,1586615159,100.00,,\n"
                          "<not counted>,,xfs:xfs_log_force,0,0.00,,\n"
                          "3,,cycles,1,100.00,,\n")
    assert totals == {"xfs:xfs_file_fsync": 500}
    samples = parse_samples(" kworker/0:1-eve  6815  3060.562788: \n"
                            "         python3 19729  3060.567913: \n"
                            "  my tool-v2 12  3061.2: \n  my tool-v2 12  3062.9: \n"
                            "python3 19730  3062.95: \ngarbage\n")
    assert per_thread(samples) == {("kworker/0:1-eve", 6815): 1, ("python3", 19729): 1,
                                   ("my tool-v2", 12): 2, ("python3", 19730): 1}
    assert active_per_second(samples, {6815}) == [1, 1, 2]  # seconds from 3060.56
    # Sampled throughout (a perf that cannot slice): the whole seconds from the first sample.
    assert active_per_second(samples, {6815}, sliced=False) == [2, 0, 2]


def test_a_slice_is_one_second_wherever_the_first_sample_fell_in_it() -> None:
    """The writers' record is enabled over the first 100 ms of each second: the first sample
    late in its slice, the next slice's earliest ones come less than a whole second after it,
    and still count in the next second, not in the first."""
    samples = [Sample("a", 1, 10.09), Sample("b", 2, 10.095),  # late in slice 0
               Sample("a", 1, 11.0), Sample("b", 2, 11.01), Sample("c", 3, 11.09),  # slice 1
               Sample("c", 3, 13.05)]  # slice 3 (slice 2 had none)
    assert active_per_second(samples, set()) == [2, 3, 0, 1]


def test_the_writers_record_is_enabled_over_slices() -> None:
    """The first WRITER_SLICE_MS of each second, the last cut by the end; a thread's
    transactions are its samples times the seconds over those recorded."""
    assert WRITER_SLICE_MS == 100
    assert writer_slices(3) == [(0, 100), (1000, 1100), (2000, 2100)]
    assert writer_slices(1.05) == [(0, 100), (1000, 1050)]
    assert writer_slices(0.05) == [(0, 50)]
    assert writer_period(10) == 10 and writer_period(0.05) == 1 and writer_period(1.05) == 7
    from advisor.system import argv

    cmd = argv.perf_record("xfs:xfs_trans_alloc", "dev == 0x700000", "w.data", 3,
                           enabled=writer_slices(3))
    # perf ends its workload once the last range is over: one never reached has it end with
    # its sleep.
    assert cmd[cmd.index("--delay") + 1] == "0-100,1000-1100,2000-2100,63000-63001"
    assert "--count" not in cmd and "--no-period" not in cmd


def test_device_filter_is_the_kernels_dev_t() -> None:
    assert device_filter("7:0") == "dev == 0x700000"
    assert device_filter("259:3") == "dev == 0x10300003"


@pytest.mark.parametrize(("text", "seconds"), [("10", 10.0), ("500ms", 0.5), ("2m", 120.0),
                                               ("1h", 3600.0)])
def test_durations(text: str, seconds: float) -> None:
    assert duration(text) == seconds


@pytest.mark.parametrize("text", ["0", "-1s", "1d", "25h", "soon"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        duration(text)


def test_measured_marks_and_the_report_line() -> None:
    text = ('# mine\nlargest_directory_entries = 5000\n'
            'concurrent_writers = 2  # measured by xfs-advisor observe\n'
            'median_file_size = "4KiB"  # measured by xfs-advisor profile\n'
            'fsyncs_per_second = 40.0  # measured by xfs-advisor observe\n'
            '[storage]\nkind = "ssd"  # measured by xfs-advisor observe\n')
    measured = measured_in(text)
    assert measured == {"concurrent_writers": "observe", "median_file_size": "profile",
                        "fsyncs_per_second": "observe"}
    assert measured_line(measured) == (
        "answers measured by xfs-advisor observe: concurrent_writers, fsyncs_per_second; "
        "answers measured by xfs-advisor profile: median_file_size")


def test_perf_record_samples_one_hit_in_the_period_only_without_the_period_field() -> None:
    """perf asks for each sample's period by default, and the kernel then records every hit of
    a tracepoint: a period is only honoured with --no-period."""
    from advisor.system import argv

    every = argv.perf_record("xfs:xfs_trans_alloc", "dev == 0x700000", "w.data", 10)
    assert "--count" not in every and "--no-period" not in every
    sampled = argv.perf_record("xfs:xfs_trans_alloc", "dev == 0x700000", "w.data", 10, 10)
    assert sampled[sampled.index("--no-period") + 1:][:2] == ["--count", "10"]


def test_observe_hides_the_sysroot_it_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    from advisor.cli import main
    from advisor.commands.parser import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert "--sysroot" not in sub.choices["observe"].format_help()
    assert "--sysroot" in sub.choices["propose"].format_help()
    assert main(["observe", "--sysroot", "/tmp", "/tmp"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not read --sysroot" in err


def test_a_lower_bound_is_written_as_such_and_still_read_as_measured(tmp_path: Path) -> None:
    from advisor.models.observe import ObservedAnswers
    from advisor.observe.observation import ANSWER_NOTES
    from advisor.profile.workload_file import write_measured_answers

    path = tmp_path / "answers.toml"
    answers = ObservedAnswers(largest_directory_entries=493, xattr_bytes_per_file=23,
                              largest_xattr_value=300)
    workload, _ = write_measured_answers(path, answers, tool="observe", notes=ANSWER_NOTES)
    text = path.read_text()
    assert ("largest_directory_entries = 493  # at least: a lower bound from the form the "
            "largest directory reached; # measured by xfs-advisor observe") in text
    assert "xattr_bytes_per_file = 23  # median over the files that got attributes;" in text
    assert measured_in(text) == {"largest_directory_entries": "observe",
                                 "xattr_bytes_per_file": "observe",
                                 "largest_xattr_value": "observe"}
    assert workload.largest_directory_entries == 493 and workload.largest_xattr_value == 300


def test_attribute_adds_by_file_whatever_the_names() -> None:
    """The name is the file owner's text: one that imitates the fields does not move them."""
    from advisor.observe.tracepoints import parse_attribute_adds

    text = ("dev 7:0 ino 0x83 name tag namelen 3 valuelen 20 hashval 0x1a2b filter 0x0 "
            "op_flags ADDNAME\n"
            "dev 7:0 ino 0x83 name b namelen 1 valuelen 10 hashval 0x1 filter 0x0 op_flags \n"
            "dev 7:0 ino 0x84 name x namelen 9 valuelen 9999 hashval 0x1 ino 0x99 name y "
            "namelen 45 valuelen 300 hashval 0x2 filter 0x0 op_flags ADDNAME\n"
            "CPU 0/0: broken line\n")
    assert parse_attribute_adds(text) == {0x83: (34, 20), 0x84: (345, 300)}


def test_counts_per_filter_in_the_order_asked() -> None:
    from advisor.observe.tracepoints import LOCK_EVENT, parse_per_ag
    from advisor.system import argv

    command = argv.perf_stat(["xfs:xfs_file_fsync"], "dev == 0x700000", 5,
                             [(LOCK_EVENT, "dev == 0x700000 && bno == 8"),
                              (LOCK_EVENT, "dev == 0x700000 && lockval == 0 && bno == 8")])
    assert command[command.index(LOCK_EVENT) + 2] == "dev == 0x700000 && bno == 8"
    text = (f"7,,xfs:xfs_file_fsync,1,100.00,,\n2450,,{LOCK_EVENT},1,100.00,,\n"
            f"2496,,{LOCK_EVENT},1,100.00,,\n")
    assert parse_per_ag(text) == [2450, 2496]
    assert parse_per_ag(text.replace("2496", "<not counted>")) == []


def test_allocations_recorded_with_the_writers() -> None:
    """The writers' record holds the extent allocations too: perf's text (where perf runs no
    Python) and the JSON records give each AG's, and the writers' samples leave them out."""
    from advisor.observe.tracepoints import (
        AG_EVENT,
        WRITER_EVENT,
        allocations_per_ag,
        parse_allocations,
        parse_records,
    )

    text = ("  python3 19729  3060.567913: xfs:xfs_trans_alloc: dev 7:0 trans 0x1 caller "
            "xfs_create+0x1 tp_flags 0x4\n"
            "  python3 19729  3060.567920: xfs:xfs_alloc_vextent_finish: dev 7:0 agno 0x2 "
            "agbno 0x10 minlen 1 maxlen 1 len 1\n"
            "  a 1 2.3: xfs:xfs_alloc_vextent_finish: x 19730  3060.6: xfs:xfs_trans_alloc: "
            "dev 7:0 trans 0x2\n"
            "  kworker/1:0 55  3060.7: xfs:xfs_alloc_vextent_finish: dev 7:0 agno 0x0 "
            "agbno 0x1 len 1\n"
            "  python3 19729  3060.8: xfs:xfs_alloc_vextent_finish: dev 7:0 agno 0x2 len 1\n")
    samples = parse_samples(text)
    assert [(s.command, s.tid) for s in samples] == [
        ("python3", 19729), ("a 1 2.3: xfs:xfs_alloc_vextent_finish: x", 19730)]
    assert parse_allocations(text) == {2: 2, 0: 1}
    records = parse_records(
        '{"event": "xfs__xfs_alloc_vextent_finish", "tid": 7, "time": 1, "comm": "a", '
        '"agno": 3}\n'
        '{"event": "xfs__xfs_trans_alloc", "tid": 7, "time": 2, "comm": "a"}\n'
        '{"event": "xfs__xfs_alloc_vextent_finish", "tid": 8, "time": 3, "comm": "b", '
        '"agno": 3}\n')
    assert [r.event for r in records] == [AG_EVENT, WRITER_EVENT, AG_EVENT]
    assert allocations_per_ag(records) == {3: 2}


def test_the_split_adds_up_to_the_exact_count() -> None:
    """Each AG's share of the statistics' count, as the allocations recorded split, in whole
    extents that add up to it exactly."""
    from advisor.observe.tracepoints import estimated_split

    assert estimated_split([10, 30, 0, 60], 1000) == [100, 300, 0, 600]
    assert estimated_split([1, 1, 1], 100) == [34, 33, 33]
    assert sum(estimated_split([7, 3, 5, 11], 12_345)) == 12_345
    assert estimated_split([0, 0], 50) == [] and estimated_split([], 50) == []
    assert estimated_split([2, 2], 0) == [0, 0]


def test_a_lower_bound_never_lowers_the_answer_a_file_gives(tmp_path: Path) -> None:
    """observe saw a directory reach leaf form (at least 493 entries): a file that plans for
    5,000 keeps 5,000 (and its own comment); one that plans for 100 is raised to 493."""
    from advisor.models.observe import ObservedAnswers
    from advisor.observe.observation import ANSWER_NOTES
    from advisor.profile.workload_file import write_measured_answers

    answers = ObservedAnswers(largest_directory_entries=493, fsyncs_per_second=40.0)
    for planned, expected in ((5000, 5000), (100, 493)):
        path = tmp_path / f"planned-{planned}.toml"
        path.write_text(f"largest_directory_entries = {planned}  # the spool, planned\n")
        workload, kept = write_measured_answers(path, answers, tool="observe",
                                                notes=ANSWER_NOTES)
        assert kept and workload.largest_directory_entries == expected
        assert workload.fsyncs_per_second == 40.0
        assert answers.merged_into(Workload(largest_directory_entries=planned)) == workload
        assert (f"largest_directory_entries = {expected}  # the spool, planned\n"
                in path.read_text())
