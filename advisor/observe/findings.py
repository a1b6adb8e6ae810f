"""Findings: a figure the observation measured, related to the filesystem's geometry and to the
guide's rule about it. Each carries the counters it rests on. On an idle filesystem none holds:
every finding needs its counter to have moved during the interval.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from advisor.engine.rules.inode_size import InodeParams, inline_capacity
from advisor.models.observe import Evidence, Finding, Geometry, ObservedFilesystem
from advisor.models.units import format_size, human_size
from advisor.observe.report import per_ag as per_ag_text
from advisor.observe.tracepoints import ATTRIBUTE_EVENTS, LOCK_EVENT, WAIT_EVENTS

#: The kernel's log buffer size when the mount sets no logbsize (32 KiB; xfs(5)).
DEFAULT_LOGBSIZE = 32 * 1024
#: Log writes per second below which their size says nothing about the workload.
BUSY_LOG_WRITES = 10.0
#: fsync calls per second from which a workload is bound by log write latency.
FSYNC_HEAVY = 10.0
#: Bytes written through the filesystem below which extents per MiB say nothing.
FRAGMENTATION_MIN_WRITTEN = 4 << 20
#: Extents allocated per MiB written, beyond one per file created, from which files are being
#: fragmented: less than 1 MiB contiguous on average. A file streamed with delayed allocation
#: gets a few large extents (one 8 MiB file, fsync'd once: 2 allocations); four writers
#: appending 4 KiB and fdatasync in turn get 11 per MiB (measured on a loop-device XFS).
FRAGMENTED_EXTENTS_PER_MIB = 1.0
#: The share of the timed window that waits for log space must take, added up over the
#: threads (1%: 0.1 s of waiting in 10 s, a hundredth of a thread waiting at any moment), for
#: the log-size finding: one short wait makes none, writers held up by the log do.
LOG_WAIT_SHARE = 0.01
#: Where the waits were not timed (counters only, or after the timed window), the waits per
#: second from which the log is found short: one wait in a ten-second observation is not.
UNTIMED_LOG_WAITS_PER_SECOND = 1.0


def _ev(fs: ObservedFilesystem, *names: str) -> list[Evidence]:
    return [r.evidence for name in names for r in fs.rates if r.name == name]


def _delta(fs: ObservedFilesystem, name: str) -> int:
    return next((r.evidence.delta for r in fs.rates if r.name == name), 0)


def _per_second(fs: ObservedFilesystem, name: str) -> float:
    return next((r.per_second for r in fs.rates if r.name == name), 0.0)


def _size(n: int) -> str:
    return format_size(n).replace("KiB", " KiB").replace("MiB", " MiB").replace("GiB", " GiB")


def _times(n: int) -> str:
    return f"{n:,} time" if n == 1 else f"{n:,} times"


def _duration(seconds: float) -> str:
    return f"{seconds:,.2f} s" if seconds >= 1 else f"{seconds * 1000:,.1f} ms"


def _waits_timed(fs: ObservedFilesystem) -> str:
    """What the record of each sleep and wake measured of the waits, or why it did not."""
    timed = fs.log_space_waits
    if timed is None:
        return " (not timed: that takes the tracepoints)"
    still = (f", {timed.unfinished:,} still waiting as it ended" if timed.unfinished else "")
    if not timed.waits:
        return f"; none ended in the first {timed.over_seconds:g} s, when waits are timed{still}"
    share = timed.seconds / timed.over_seconds
    return (f"; in the first {timed.over_seconds:g} s {timed.waits:,} waits took "
            f"{_duration(timed.seconds)} in all ({share:.1%} of that time: {share:,.2f} threads "
            f"waiting at any moment on average), the longest {_duration(timed.longest)}{still}")


def log_waits_matter(fs: ObservedFilesystem) -> bool:
    """The waits for log space held writers up: timed, they took at least LOG_WAIT_SHARE of
    the timed window; where they were not timed (no tracepoints, or an observation longer than
    the timed window), there were at least UNTIMED_LOG_WAITS_PER_SECOND over the interval."""
    waits = _delta(fs, "log_space_waits")
    if not waits:
        return False
    timed = fs.log_space_waits
    if timed is not None and timed.seconds >= LOG_WAIT_SHARE * timed.over_seconds:
        return True
    timed_all = timed is not None and timed.over_seconds >= 0.99 * fs.seconds
    return not timed_all and waits / fs.seconds >= UNTIMED_LOG_WAITS_PER_SECOND


def log_space(fs: ObservedFilesystem, g: Geometry) -> Finding | None:
    """Writers slept for log space long enough to matter (log_waits_matter): the log is full
    of changes not yet written back. The count is the statistics' (each sleep), the time the
    record of each sleep and wake."""
    waits = _delta(fs, "log_space_waits")
    if not log_waits_matter(fs):
        return None
    who = (f"{fs.concurrent_writers} concurrent metadata writers" if fs.concurrent_writers
           else "this metadata load")
    evidence = _ev(fs, "log_space_waits", "log_reservations")
    timed = fs.log_space_waits
    if timed is not None:
        evidence.append(Evidence(source="tracepoint", counter=" to ".join(WAIT_EVENTS),
                                 delta=timed.waits, seconds=timed.over_seconds))
    return Finding(rule="log-size", message=(
        f"writers waited for log space {_times(waits)} ({_per_second(fs, 'log_space_waits'):,.1f}"
        f"/s){_waits_timed(fs)}: the {_size(g.log_bytes)} log ran out of room for {who} "
        "(log-size: a larger log needs a new mkfs, or an external log)"),
        evidence=evidence)


@functools.cache
def _inode_params() -> InodeParams:
    """The inode-size rule's own figures (the built-in rule file): the findings compute inline
    room exactly as the rule does."""
    from advisor.engine.rulebook import load_rulebook

    loaded = load_rulebook().rules["inode-size"]
    assert isinstance(loaded.params, InodeParams)
    return loaded.params


def larger_inodes_inline(g: Geometry) -> str:
    """'1024 keeps 792 B inline, 2048 keeps 1816 B': the inline attribute room of each inode
    size the inode-size rule may choose above this filesystem's, up to half a block."""
    params = _inode_params()
    sizes = [s for s in params.inode_sizes if g.inode_size < s <= g.block_size // 2]
    return ", ".join(f"{s} keeps {inline_capacity(s, g.crc, params)} B inline" for s in sizes)


def _attribute_sets(fs: ObservedFilesystem) -> tuple[int, str]:
    """The setxattr calls the spills are a share of, and what to say when that is not a plain
    count. The spills are counted by perf stat: so are the sets, in the same window, when the
    recording has them. A set that spills fires xfs_attr_sf_to_leaf, then xfs_attr_leaf_add: a
    call under way as the window closes has its spill counted and not its set; the statistics'
    attr.set is read a few milliseconds apart from the tracepoints' window, so a busy workload
    moves the two apart by more. Either way the whole is never less than its part."""
    assert fs.forms is not None
    spills = fs.forms.attribute_spills
    if fs.forms.attribute_sets is not None:
        sets = fs.forms.attribute_sets
        if spills <= sets:
            return sets, ""
        return spills, (f"; {sets:,} sets counted: {spills - sets:,} spilled as the window "
                        "closed and set after it")
    counted = _delta(fs, "xattr_sets")
    if spills <= counted:
        return counted, ("; the calls are attr.set, read a few ms apart from the tracepoints' "
                         "window")
    return spills, (f"; at least that many calls: attr.set counted {counted:,}, read a few ms "
                    "apart from the tracepoints' window")


def attribute_spills(fs: ObservedFilesystem, g: Geometry) -> Finding | None:
    """Attribute forks moved out of the inode: every later read of them costs an extra block."""
    if fs.forms is None or not fs.forms.attribute_spills:
        return None
    spills = fs.forms.attribute_spills
    seconds = fs.rates[0].evidence.seconds if fs.rates else fs.seconds
    whole, edge = _attribute_sets(fs)
    share = 100 * spills / whole
    evidence = [Evidence(source="tracepoint", counter="xfs:xfs_attr_sf_to_leaf", delta=spills,
                         seconds=seconds)]
    if fs.forms.attribute_sets is not None:
        evidence.append(Evidence(source="tracepoint", counter=" + ".join(ATTRIBUTE_EVENTS),
                                 delta=fs.forms.attribute_sets, seconds=seconds))
    else:
        evidence += _ev(fs, "xattr_sets")
    params = _inode_params()
    f = fs.forms
    # The sets are recorded by a perf of their own, started before perf stat's window: its
    # files are not a part of the calls counted above.
    measured = (f"; the {f.attribute_files:,} files whose sets were recorded (from just before "
                f"the window, for {fs.writer_seconds or seconds:g} s) got "
                f"{f.attribute_bytes_per_file:,} B of names and values each (median), the "
                f"longest value "
                f"{f.largest_attribute_value or 0:,} B" if f.attribute_bytes_per_file else "")
    here = inline_capacity(g.inode_size, g.crc, params)
    larger = larger_inodes_inline(g)
    return Finding(rule="inode-size", message=(
        f"{spills:,} of {whole:,} setxattr calls ({share:.0f}%) moved the attributes out of the "
        f"{g.inode_size}-byte inode into an attribute block{measured}{edge} (inode-size: "
        f"{g.inode_size} keeps {here} B inline" + (f", {larger}" if larger else "")
        + f"; a value over {params.max_inline_value} B never stays inline)"),
        evidence=evidence)


def directory_form(fs: ObservedFilesystem, g: Geometry) -> Finding | None:
    """A directory reached node form: past what one directory block's leaf can index."""
    if fs.forms is None or fs.forms.largest_directory_form != "node":
        return None
    adds = fs.forms.directory_adds.get("node", 0)
    converted = fs.forms.directory_conversions.get("leaf->node", 0)
    seconds = fs.rates[0].evidence.seconds if fs.rates else fs.seconds
    evidence = [Evidence(source="tracepoint", counter="xfs:xfs_dir2_node_addname", delta=adds,
                         seconds=seconds)]
    if converted:
        evidence.append(Evidence(source="tracepoint", counter="xfs:xfs_dir2_leaf_to_node",
                                 delta=converted, seconds=seconds))
    grew = (f"{converted:,} director{'y' if converted == 1 else 'ies'} grew into node form "
            "and " if converted else "")
    least = fs.forms.largest_directory_entries_at_least
    implied = (f": the largest had at least {least:,} entries, a lower bound from its form"
               if least else "")
    return Finding(rule="dir-block-size", message=(
        f"{grew}{adds:,} entries were added to node-form directories (more entries than one "
        f"{_size(g.directory_block_size)} directory block indexes{implied}): the guide keeps "
        "4 KiB blocks up to 100,000-200,000 entries read-heavy, 1-2 million write-heavy; "
        "measure the largest directory (xfs-advisor profile) before choosing -n size "
        "(dir-block-size)"),
        evidence=evidence)


def ag_contention(fs: ObservedFilesystem, g: Geometry) -> Finding | None:
    """More threads changed metadata than there are allocation groups. What the tracepoints
    measure of their contention is said as measured: the extent allocations that found an AG's
    free space busy or were retried in another, and the locks on the AGs' headers (AGF, AGI)
    that found the header held by another thread. How long those waited is not measured
    (xfs_buf_lock_done fires alike after a wait and without one: timing the waits would take a
    record of every AG header lock, about one for every two transactions), and is said
    not to be."""
    writers = fs.concurrent_writers or 0
    creates = _delta(fs, "creates") + _delta(fs, "removes") + _delta(fs, "xattr_sets")
    if writers <= g.agcount or not creates:
        return None
    busy, retried = _delta(fs, "ag_busy_skips"), _delta(fs, "allocation_retries")
    measured = ""
    evidence = _ev(fs, "transactions", "creates", "removes", "xattr_sets", "ag_busy_skips",
                   "allocation_retries")
    if any(r.name == "ag_busy_skips" for r in fs.rates):
        estimated = "" if fs.allocations_recorded is None else " (estimated)"
        per_ag = ("" if fs.allocations_per_ag is None else f", extents per AG{estimated} "
                  + per_ag_text(fs.allocations_per_ag, labelled=False))
        measured = (f"; measured: extent allocations found an AG busy {_times(busy)} and were "
                    f"retried in another {_times(retried)}{per_ag}")
    locks, waited = fs.ag_header_locks, fs.ag_header_locks_waited
    if locks is not None and waited is not None:
        share = f" ({100 * waited / locks:.1f}%)" if locks else ""
        measured += (f"; {waited:,} of {locks:,} locks on the AG headers (AGF, AGI) found the "
                     f"header held by another thread{share} and waited for it")
        seconds = fs.rates[0].evidence.seconds if fs.rates else fs.seconds
        evidence += [Evidence(source="tracepoint", counter=f"{LOCK_EVENT} on the AG headers",
                              delta=locks, seconds=seconds),
                     Evidence(source="tracepoint", counter=f"{LOCK_EVENT} on the AG headers, "
                              "lockval == 0", delta=waited, seconds=seconds)]
    return Finding(rule="ag-concurrency", message=(
        f"{writers} threads changed metadata in the same second (the median over the seconds) "
        f"on {g.agcount} allocation groups{measured}; not measured: how long creates, removes "
        "and attribute sets waited for the AGs' locks, which more writers than AGs share "
        "(timing each wait would take a record of every AG header lock, about one for every "
        "two transactions, the kind of record observe keeps to a tenth of each second to stay "
        "cheap"
        + ("" if locks is not None else "; --ag-locks counts the locks that found an AG "
           "header held, for about 5% more CPU") +
        ") (ag-concurrency: agcount is set by mkfs)"),
        evidence=evidence)


def log_stripe_padding(fs: ObservedFilesystem, g: Geometry) -> Finding | None:
    """fsync-heavy work on a log with a stripe unit: each forced write is padded to it."""
    fsyncs = _per_second(fs, "fsyncs") or _per_second(fs, "log_forces")
    if g.log_stripe_unit_bytes <= g.block_size or fsyncs < FSYNC_HEAVY:
        return None
    return Finding(rule="log-stripe-unit", message=(
        f"{fsyncs:,.0f} fsyncs or log forces a second on a log with a "
        f"{_size(g.log_stripe_unit_bytes)} stripe unit: each forced log write is padded to it "
        "(log-stripe-unit: for fsync-bound work -l sunit=1b, or su=the block size, writes the "
        "log without padding)"), evidence=_ev(fs, "fsyncs", "log_forces", "log_writes",
                                              "log_bytes"))


def full_log_buffers(fs: ObservedFilesystem, g: Geometry) -> Finding | None:
    """Log buffers written full: larger ones would need fewer log writes."""
    writes, per_second = _delta(fs, "log_writes"), _per_second(fs, "log_writes")
    logbsize = g.logbsize or DEFAULT_LOGBSIZE
    if not writes or per_second < BUSY_LOG_WRITES or logbsize >= 256 * 1024:
        return None
    average = _per_second(fs, "log_bytes") / per_second
    if average < 0.9 * logbsize:
        return None
    return Finding(rule="logbsize", message=(
        f"{per_second:,.0f} log writes a second averaging {human_size(average)}, full "
        f"{_size(logbsize)} log buffers: logbsize=256k writes the same changes in fewer, larger "
        "log writes (logbsize)"), evidence=_ev(fs, "log_writes", "log_bytes"))


def fragmentation(fs: ObservedFilesystem, g: Geometry) -> Finding | None:
    """Data written in small pieces that each got their own extent: more extents allocated per
    MiB written than the files created explain."""
    written = _delta(fs, "written_bytes")
    extents = _delta(fs, "extent_allocations")
    extra = extents - _delta(fs, "creates")
    if written < FRAGMENTATION_MIN_WRITTEN or extra <= 0:
        return None
    per_mib = extra / (written / (1 << 20))
    if per_mib < FRAGMENTED_EXTENTS_PER_MIB:
        return None
    return Finding(rule="allocsize", message=(
        f"{extents:,} extents allocated for {_size(written)} written ({per_mib:,.1f} per MiB "
        f"beyond one per file created, {human_size(written / max(extra, 1))} each on average): "
        "files grown in small pieces, several at once or forced out by fsync, are fragmenting "
        "(allocsize: a fixed end-of-file preallocation for files several writers stream; "
        "extent-size-hint: `xfs_io -c 'extsize 1m' DIR` for files written in place)"),
        evidence=_ev(fs, "extent_allocations", "written_bytes", "creates"))


CHECKS: tuple[Callable[[ObservedFilesystem, Geometry], Finding | None], ...] = (
    log_space, attribute_spills, directory_form, ag_contention, log_stripe_padding,
    full_log_buffers, fragmentation)


def findings_for(fs: ObservedFilesystem) -> list[Finding]:
    """Every finding the figures support (none without the geometry to relate them to)."""
    if fs.geometry is None:
        return []
    return [f for check in CHECKS if (f := check(fs, fs.geometry)) is not None]
