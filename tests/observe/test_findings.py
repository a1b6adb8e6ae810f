"""Findings from hand-written figures, for the conditions a loop device cannot produce in a
test's seconds: writers sleeping for log space (the log fills only when metadata writeback
lags, and a loop device over a file writes back too fast), a log stripe unit under an
fsync-heavy load (a RAID's geometry), full log buffers. Each is checked to hold on the figure
and not below it."""

from __future__ import annotations

from advisor.models.observe import Evidence, Geometry, ObservedFilesystem, Rate
from advisor.observe.findings import findings_for

GEOMETRY = Geometry(block_size=4096, agcount=4, inode_size=512, directory_block_size=4096,
                    log_bytes=64 << 20, log_stripe_unit_bytes=0)


def figures(geometry: Geometry = GEOMETRY, writers: int | None = None,
            **deltas: int) -> ObservedFilesystem:
    rates = [Rate(name=name, label=name, per_second=delta / 2.0,
                  evidence=Evidence(source="xfs-stats", counter=name, before=0, after=delta,
                                    delta=delta, seconds=2.0))
             for name, delta in deltas.items()]
    fs = ObservedFilesystem(mountpoint="/m", device="loop0", maj_min="7:0", geometry=geometry,
                            seconds=2.0, rates=rates, concurrent_writers=writers)
    fs.findings = findings_for(fs)
    return fs


def test_log_space_waits_name_the_log_size_and_the_writers() -> None:
    fs = figures(writers=48, log_space_waits=2400, log_reservations=90000)
    (finding,) = fs.findings
    assert finding.rule == "log-size"
    assert finding.message.startswith("writers waited for log space 2,400 times (1,200.0/s) "
                                      "(not timed: that takes the tracepoints): the 64 MiB "
                                      "log ran out of room for 48 concurrent metadata writers")
    assert [e.counter for e in finding.evidence] == ["log_space_waits", "log_reservations"]
    assert figures(writers=48, log_space_waits=0, log_reservations=90000).findings == []


def test_log_space_waits_give_the_time_measured() -> None:
    """With each sleep and wake recorded, the finding gives the time the waits took, measured,
    and the threads still asleep when the record ended."""
    from advisor.models.observe import LogSpaceWaits

    fs = figures(writers=16, log_space_waits=2400, log_reservations=90000)
    fs.log_space_waits = LogSpaceWaits(waits=2300, unfinished=3, seconds=4.25, longest=0.0421,
                                       over_seconds=2.0)
    (finding,) = findings_for(fs)
    assert ("writers waited for log space 2,400 times (1,200.0/s); in the first 2 s 2,300 waits "
            "took 4.25 s in all (212.5% of that time: 2.12 threads waiting at any moment on "
            "average), the longest 42.1 ms, 3 still waiting as it ended: the 64 MiB "
            "log ran out of room for 16 concurrent metadata writers") in finding.message
    assert [(e.counter, e.delta) for e in finding.evidence][-1] == (
        "xfs:xfs_log_grant_sleep to xfs:xfs_log_grant_wake", 2300)
    fs.log_space_waits = LogSpaceWaits(waits=0, seconds=0, longest=0, over_seconds=1.0)
    (finding,) = findings_for(fs)
    assert "; none ended in the first 1 s, when waits are timed:" in finding.message


def test_one_short_log_space_wait_makes_no_finding() -> None:
    """The log-size finding rests on the time the waits took, as a share of the timed window:
    a single 5 ms wait in 10 s (0.05%) makes none, waits adding up to 1% of it make one; at
    0.99% none. Untimed (counters only), one wait in 10 s makes none, one a second makes one."""
    from advisor.models.observe import LogSpaceWaits
    from advisor.observe.findings import LOG_WAIT_SHARE, UNTIMED_LOG_WAITS_PER_SECOND

    def timed(count: int, seconds: float) -> list[str]:
        fs = figures(writers=4, log_space_waits=count, log_reservations=90000)
        fs = fs.model_copy(update={"seconds": 10.0, "log_space_waits": LogSpaceWaits(
            waits=count, seconds=seconds, longest=seconds / count, over_seconds=10.0)})
        return [f.rule for f in findings_for(fs)]

    assert timed(1, 0.005) == []
    assert timed(40, LOG_WAIT_SHARE * 10.0 * 0.99) == []
    assert timed(40, LOG_WAIT_SHARE * 10.0) == ["log-size"]
    assert timed(1, 0.5) == ["log-size"]  # one long wait is one that matters

    def untimed(count: int) -> list[str]:
        fs = figures(writers=4, log_space_waits=count, log_reservations=90000)
        return [f.rule for f in findings_for(fs.model_copy(update={"seconds": 10.0}))]

    assert untimed(1) == []
    assert untimed(int(UNTIMED_LOG_WAITS_PER_SECOND * 10) - 1) == []
    assert untimed(int(UNTIMED_LOG_WAITS_PER_SECOND * 10)) == ["log-size"]
    message = findings_for(figures(writers=4, log_space_waits=40, log_reservations=9).model_copy(
        update={"seconds": 10.0, "log_space_waits": LogSpaceWaits(
            waits=40, seconds=0.1, longest=0.01, over_seconds=10.0)}))[0].message
    assert "40 waits took 100.0 ms in all (1.0% of that time: 0.01 threads waiting" in message


def test_waits_paired_by_thread() -> None:
    """perf script's lines: a sleep and the same thread's next wake make one wait; a wake
    with no sleep before it (begun before the record) is not one, a sleep with no wake is
    counted as unfinished; other events are not waits."""
    from advisor.observe.tracepoints import parse_log_space_waits

    text = "\n".join([
        "   101  50.000100: xfs:xfs_log_grant_wake: dev 7:0 tic 0x1 t_ocnt 2",
        "   102  50.001000: xfs:xfs_log_grant_sleep: dev 7:0 tic 0x2 t_ocnt 2",
        "   103  50.002000: xfs:xfs_log_grant_sleep: dev 7:0 tic 0x3 t_ocnt 2",
        "   102  50.011000: xfs:xfs_log_grant_wake: dev 7:0 tic 0x2 t_ocnt 2",
        "   104  50.012000: xfs:xfs_attr_sf_add: dev 7:0 ino 0x83 name x namelen 1 valuelen 2 "
        "hashval 0x0",
        "   102  50.020000: xfs:xfs_log_grant_sleep: dev 7:0 tic 0x2 t_ocnt 2",
        "   102  50.050000: xfs:xfs_log_grant_wake: dev 7:0 tic 0x2 t_ocnt 2",
    ])
    waits, unfinished = parse_log_space_waits(text)
    assert [round(w, 6) for w in waits] == [0.01, 0.03] and unfinished == 1


def test_log_stripe_unit_under_fsyncs() -> None:
    striped = GEOMETRY.model_copy(update={"log_stripe_unit_bytes": 256 << 10})
    (finding,) = figures(striped, fsyncs=400, log_forces=400, log_writes=400).findings
    assert finding.rule == "log-stripe-unit" and "256 KiB stripe unit" in finding.message
    assert figures(striped, fsyncs=10, log_forces=10).findings == []  # 5/s: not fsync-heavy
    assert figures(GEOMETRY, fsyncs=400, log_forces=400).findings == []  # no stripe unit


def test_full_log_buffers_suggest_a_larger_logbsize() -> None:
    full = figures(log_writes=200, log_bytes=200 * 64)
    assert full.findings == []  # 64-byte writes: far from full
    fs = figures(log_writes=200, log_bytes=200 * 32 * 1024)
    (finding,) = fs.findings
    assert finding.rule == "logbsize" and "full 32 KiB log buffers" in finding.message
    bigger = GEOMETRY.model_copy(update={"logbsize": 256 << 10})
    assert figures(bigger, log_writes=200, log_bytes=200 * 256 * 1024).findings == []


def test_no_geometry_no_findings() -> None:
    fs = ObservedFilesystem(mountpoint="/m", device="loop0", maj_min="7:0", seconds=1.0,
                            rates=[])
    assert findings_for(fs) == []


def test_text_from_the_system_is_escaped() -> None:
    """A mount point and a thread name are untrusted: no escape sequence or line break of
    theirs reaches the terminal."""
    from advisor.models.observe import ObservedAnswers, ObserveDocument, Tracing, Writer
    from advisor.observe.report import render_text

    fs = figures(writers=1, creates=10)
    fs.mountpoint = "/mnt/\x1b[2Jx\nfake finding"
    fs.writers = [Writer(command="evil\x1b]0;title\x07\n[log-size] fake", tid=7,
                         transactions=10)]
    doc = ObserveDocument(started="2026-01-01T00:00:00.000Z", seconds=2.0,
                          tracing=Tracing(method="perf-stat"), filesystems=[fs],
                          answers=ObservedAnswers())
    text = render_text(doc)
    assert "\x1b" not in text and "\x07" not in text
    assert "\n[log-size] fake" not in text and "\nfake finding" not in text
    assert "evil\\e]0;title\\x07\\n[log-size] fake[7]" in text  # inert.terminal


def test_spills_over_the_statistics_sets_are_not_printed_as_a_larger_part() -> None:
    """A recording made before the sets were counted by perf stat has only the statistics'
    attr.set, read a few milliseconds apart from the tracepoints' window: 171 spills against
    169 sets is then said as 171 of at least 171, with the counted figure; with the sets
    counted in the same window, the whole is that count."""
    from advisor.models.observe import Forms

    fs = figures(xattr_sets=169)
    fs.forms = Forms(attribute_spills=171)
    (finding,) = findings_for(fs)
    assert finding.message.startswith("171 of 171 setxattr calls (100%) moved"), finding
    assert "; at least that many calls: attr.set counted 169, read a few ms apart" \
        in finding.message, finding
    fs.forms = Forms(attribute_spills=171, attribute_sets=180)
    (finding,) = findings_for(fs)
    assert finding.message.startswith("171 of 180 setxattr calls (95%) moved"), finding
    assert "attr.set" not in finding.message
    assert [(e.counter, e.delta) for e in finding.evidence] == [
        ("xfs:xfs_attr_sf_to_leaf", 171),
        ("xfs:xfs_attr_sf_add + xfs:xfs_attr_leaf_add + xfs:xfs_attr_node_addname", 180)]
    fs.forms = Forms(attribute_spills=171, attribute_sets=170)  # one cut by the window's end
    (finding,) = findings_for(fs)
    assert finding.message.startswith("171 of 171 setxattr calls (100%)"), finding
    assert "; 170 sets counted: 1 spilled as the window closed and set after it" \
        in finding.message


def test_ag_contention_says_what_was_measured_and_what_was_not() -> None:
    """More writers than AGs: the allocations that found an AG busy are given as measured (with
    tracepoints), the time spent waiting for the AGs' locks as not measured."""
    (finding,) = figures(writers=16, creates=4000, ag_busy_skips=3,
                         allocation_retries=1).findings
    assert finding.rule == "ag-concurrency"
    assert finding.message.startswith(
        "16 threads changed metadata in the same second (the median over the seconds) on 4 "
        "allocation groups; measured: extent allocations found an AG busy 3 times and were "
        "retried in another 1 time; not measured: how long creates, removes and attribute "
        "sets waited for the AGs' locks"), finding.message
    (counted,) = figures(writers=16, creates=4000).findings  # no tracepoint counts
    assert "measured: extent" not in counted.message and "; not measured: " in counted.message
    assert figures(writers=4, creates=4000).findings == []  # not more writers than AGs


def test_extents_per_ag_said_to_be_estimated_when_they_are() -> None:
    """Split from the allocations recorded in the writers' slices, the extents per AG are
    said to be estimated, in the finding and in the report, with what they came from; counted
    per AG (older recordings), they are not."""
    from advisor.models.observe import ObservedAnswers, ObserveDocument, Tracing
    from advisor.observe.report import render_text

    fs = figures(writers=16, creates=4000, ag_busy_skips=3, allocation_retries=1)
    estimated = fs.model_copy(update={"allocations_per_ag": [600, 200, 100, 100],
                                      "allocations_recorded": 97, "writer_seconds": 10.0,
                                      "writer_slice_ms": 100})
    (finding,) = findings_for(estimated)
    assert ", extents per AG (estimated) 600, 200, 100, 100; not measured" in finding.message
    doc = ObserveDocument(started="2026-01-01T00:00:00+00:00", seconds=2.0,
                          tracing=Tracing(method="perf-stat"), filesystems=[estimated],
                          answers=ObservedAnswers())
    assert ("extents allocated per AG (estimated: the exact total split as the 97 recorded in "
            "the first 100 ms of each second of the first 10 s were): AG 0 600, AG 1 200, "
            "AG 2 100, AG 3 100") in render_text(doc)
    counted = estimated.model_copy(update={"allocations_recorded": None})
    (finding,) = findings_for(counted)
    assert ", extents per AG 600, 200, 100, 100; not measured" in finding.message
    assert "extents allocated per AG: AG 0 600" in render_text(
        doc.model_copy(update={"filesystems": [counted]}))


def test_many_ags_list_the_busiest_and_the_range_of_the_others() -> None:
    """A filesystem of 40 AGs: the report and the finding name the 8 busiest AGs and give the
    others' range, not 40 figures on one line."""
    from advisor.models.observe import ObservedAnswers, ObserveDocument, Tracing
    from advisor.observe.report import render_text

    counts = [10 + i % 3 for i in range(40)]
    counts[7], counts[31] = 900, 700
    fs = figures(writers=16, creates=4000, ag_busy_skips=3, allocation_retries=1)
    many = fs.model_copy(update={"allocations_per_ag": counts, "allocations_recorded": None})
    busiest = "AG 7 900, AG 31 700, AG 2 12, AG 5 12, AG 8 12, AG 11 12, AG 14 12, AG 17 12"
    (finding,) = findings_for(many)
    assert f", extents per AG {busiest} and 32 other AGs (10 to 12 each); " in finding.message
    doc = ObserveDocument(started="2026-01-01T00:00:00+00:00", seconds=2.0,
                          tracing=Tracing(method="perf-stat"), filesystems=[many],
                          answers=ObservedAnswers())
    (line,) = [x for x in render_text(doc).splitlines() if "extents allocated per AG" in x]
    assert line == f"  extents allocated per AG: {busiest} and 32 other AGs (10 to 12 each)"
