"""One observation: which filesystems, their geometry, the counters read at both ends of the
interval (and the tracepoints counted during it), turned into rates with their evidence.

Read-only: it reads sysfs and /proc, runs xfs_info and (when it can) `perf stat`, and changes no
setting. Whatever ends it (the interval, Ctrl-C, an error), the perf processes are stopped
before it returns.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from advisor.errors import AdvisorError, BadInput, DeviceProblem
from advisor.inspect.parsers import MountEntry, parse_mountinfo
from advisor.models.observe import (
    Evidence,
    Forms,
    Geometry,
    LogSpaceWaits,
    ObservedAnswers,
    ObservedFilesystem,
    ObserveDocument,
    Rate,
    RecordedFilesystem,
    RecordedReading,
    RecordedThread,
    Recording,
    Tracing,
    Writer,
)
from advisor.models.proposal import MkfsGeometry
from advisor.observe import counters as ctr
from advisor.observe import tracepoints as tp
from advisor.observe.findings import findings_for
from advisor.system import argv
from advisor.system.mkfs import parse_mkfs_output
from advisor.system.runner import run
from advisor.system.sysroot import SysRoot

#: Rates shown for every filesystem: name -> (source, counter, label).
RATES: dict[str, tuple[str, str, str]] = {
    "fsyncs": ("tracepoint", "xfs:xfs_file_fsync", "fsync/fdatasync calls"),
    "transactions": ("xfs-stats", "trans.async", "transactions committed"),
    "sync_transactions": ("xfs-stats", "trans.sync", "synchronous transactions"),
    "log_forces": ("xfs-stats", "log.force", "log forces"),
    "log_force_waits": ("xfs-stats", "log.force_sleep", "log forces that waited for the write"),
    "log_writes": ("xfs-stats", "log.writes", "log buffer writes"),
    "log_space_waits": ("xfs-stats", "push_ail.sleep_logspace", "waits for log space"),
    "log_reservations": ("xfs-stats", "push_ail.try_logspace", "log space reservations"),
    "creates": ("xfs-stats", "dir.create", "directory entries created"),
    "removes": ("xfs-stats", "dir.remove", "directory entries removed"),
    "lookups": ("xfs-stats", "dir.lookup", "directory lookups"),
    "xattr_sets": ("xfs-stats", "attr.set", "extended attributes set"),
    "xattr_gets": ("xfs-stats", "attr.get", "extended attributes read"),
    "extent_allocations": ("xfs-stats", "extent_alloc.alloc_extents", "extents allocated"),
    "ag_busy_skips": ("tracepoint", "xfs:xfs_alloc_vextent_noagbp",
                      "allocations that found an AG busy"),
    "allocation_retries": ("tracepoint", "xfs:xfs_alloc_vextent_loopfailed",
                           "allocations retried in another AG"),
    "write_calls": ("xfs-stats", "rw.write_calls", "write calls"),
    "read_calls": ("xfs-stats", "rw.read_calls", "read calls"),
    "device_writes": ("block-stat", "write_ios", "device write requests"),
    "device_reads": ("block-stat", "read_ios", "device read requests"),
    "device_flushes": ("block-stat", "flush_ios", "device cache flushes"),
}
#: Extra figures in bytes per second, from counters in 512-byte units or bytes.
BYTE_RATES: dict[str, tuple[str, str, str, int]] = {
    "log_bytes": ("xfs-stats", "log.blocks", "bytes written to the log", 512),
    "written_bytes": ("xfs-stats", "xpc.write_bytes", "bytes written through the filesystem", 1),
    "device_written_bytes": ("block-stat", "write_sectors", "bytes written to the device", 512),
}


#: Seconds between two checks that the watched filesystems are still mounted.
UNMOUNT_CHECK = 0.5


@dataclass(frozen=True)
class Target:
    """A mounted XFS filesystem to watch."""

    mountpoint: str
    maj_min: str
    name: str
    entry: MountEntry

    @property
    def stats_path(self) -> str:
        return f"sys/fs/xfs/{self.name}/stats/stats"

    @property
    def block_stat_path(self) -> str:
        return f"sys/dev/block/{self.maj_min}/stat"


def _kernel_name(root: SysRoot, maj_min: str) -> str | None:
    try:
        return os.path.basename(os.readlink(root.path(f"sys/dev/block/{maj_min}")))
    except OSError:
        return None


def _target(root: SysRoot, entry: MountEntry, asked: str) -> Target:
    name = _kernel_name(root, entry.maj_min or "")
    if not entry.maj_min or name is None or root.read(f"sys/fs/xfs/{name}/stats/stats") is None:
        raise DeviceProblem(f"{asked}: the kernel shows no XFS statistics for {entry.source} "
                            "(/sys/fs/xfs/DEV/stats/stats)")
    return Target(entry.mountpoint, entry.maj_min, name, entry)


def resolve(paths: list[str], root: SysRoot) -> list[Target]:
    """The XFS filesystems holding `paths` (every mounted XFS when none is given)."""
    entries = parse_mountinfo(root.read("proc/self/mountinfo") or "")
    if not paths:
        seen: dict[str, Target] = {}
        for entry in entries:
            if entry.fstype == "xfs" and entry.maj_min and entry.maj_min not in seen:
                seen[entry.maj_min] = _target(root, entry, entry.mountpoint)
        if not seen:
            raise BadInput("no XFS filesystem is mounted here: name a mount point")
        return list(seen.values())
    targets: list[Target] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError as err:
            raise BadInput(f"{path}: {err.strerror}") from None
        maj_min = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
        real = os.path.realpath(path)
        mine = [e for e in entries if e.maj_min == maj_min
                and (real == e.mountpoint or real.startswith(e.mountpoint.rstrip("/") + "/"))]
        found = max(mine, key=lambda e: len(e.mountpoint), default=None)
        if found is None:
            raise BadInput(f"{path}: no mounted filesystem found for it")
        if found.fstype != "xfs":
            raise BadInput(f"{path} is on a {found.fstype} filesystem, not XFS")
        if all(t.maj_min != maj_min for t in targets):
            targets.append(_target(root, found, path))
    return targets


def xfs_info_text(target: Target) -> str | None:
    """What xfs_info prints for the mounted filesystem (None when it fails)."""
    result = run(argv.xfs_info(target.mountpoint), check=False, timeout=30)
    return result.stdout if result.ok else None


def geometry_from(xfs_info: str | None, mount_options: str) -> Geometry | None:
    """The geometry in xfs_info's text (None when there is none to read)."""
    if not xfs_info:
        return None
    try:
        g = parse_mkfs_output(xfs_info)
    except AdvisorError:  # the findings that need it are skipped, not the run
        return None
    logbsize = re.search(r"(?:^|,)logbsize=(\d+)k(?:,|$)", mount_options)
    return Geometry(
        block_size=g.block_size, agcount=g.agcount, inode_size=g.inode_size,
        directory_block_size=g.naming_block_size, log_bytes=g.log_blocks * g.block_size,
        crc=g.features.get("crc", 1) == 1,
        log_stripe_unit_bytes=g.log_sunit_blocks * g.block_size,
        external_log=re.search(r"^log\s+=internal", xfs_info, re.M) is None,
        logbsize=int(logbsize.group(1)) * 1024 if logbsize else None)


def mkfs_geometry(xfs_info: str | None) -> MkfsGeometry | None:
    """xfs_info's geometry in full (AG size and sector size included), None when unreadable."""
    try:
        return parse_mkfs_output(xfs_info) if xfs_info else None
    except AdvisorError:
        return None


def _super_options(entry: MountEntry) -> str:
    """The filesystem's own options in a mountinfo line (after the source)."""
    fields = entry.raw.split()
    return fields[-1] if fields else ""


def read_counters(root: SysRoot, target: Target) -> RecordedReading | None:
    """Both counter files now; None when the filesystem is no longer there."""
    xfs_text = root.read(target.stats_path)
    block_text = root.read(target.block_stat_path)
    at, wall = time.monotonic(), time.time()
    if xfs_text is None or block_text is None:
        return None
    return RecordedReading(xfs=ctr.parse_xfs_stats(xfs_text),
                           block=ctr.parse_block_stat(block_text), at=at, wall=wall)


def _still_mounted(root: SysRoot, target: Target) -> bool:
    entries = parse_mountinfo(root.read("proc/self/mountinfo") or "")
    return any(e.maj_min == target.maj_min and e.mountpoint == target.mountpoint
               for e in entries)


class Observer:
    """Watches targets for `seconds`, tracepoints included when `tracing` (and perf can), the AG
    header locks too when `ag_locks`."""

    def __init__(self, targets: list[Target], seconds: float, *, tracing: bool,
                 root: SysRoot | None = None,
                 started: Callable[[], None] | None = None, ag_locks: bool = False) -> None:
        self.targets = targets
        self.ag_locks = ag_locks
        self.started = started
        self.seconds = seconds
        self.root = root or SysRoot()
        reason = (tp.unavailable_reason() if tracing
                  else "tracepoints not asked for (--counters-only)")
        self.tracing = Tracing(method="perf-stat" if reason is None else "none", reason=reason,
                               findings_not_made=[] if reason is None
                               else list(tp.NEEDS_TRACEPOINTS))
        self.countings: list[tp.Counting] = []

    def run(self) -> Recording:
        """Watch for the interval and return what was read."""
        infos = {t.maj_min: xfs_info_text(t) for t in self.targets}
        try:
            if self.tracing.method == "perf-stat":
                for target in self.targets:
                    counting = tp.Counting(target.maj_min, self.seconds,
                                           geometry=mkfs_geometry(infos[target.maj_min]),
                                           ag_locks=self.ag_locks)
                    self.countings.append(counting)
                    counting.start()
                for counting in self.countings:  # the counters are read as perf starts
                    counting.wait_counting()
                before = self._read_all()
                self._begun()
                # The counters' window ends with perf's sleep, not with perf's own teardown.
                begun = min(r.at for r in before.values())
                self._wait_until(begun + self.seconds)
                after = {t.maj_min: read_counters(self.root, t) for t in self.targets}
                for counting in self.countings:
                    counting.wait_done()
                for counting in self.countings:
                    counting.collect()
            else:
                before = self._read_all()
                self._begun()
                self._wait_until(min(r.at for r in before.values()) + self.seconds)
                after = {t.maj_min: read_counters(self.root, t) for t in self.targets}
        finally:
            self.stop()
        recorded: list[RecordedFilesystem] = []
        for target in self.targets:
            end = after[target.maj_min]
            if end is None or not _still_mounted(self.root, target):
                raise DeviceProblem(f"{target.mountpoint} was unmounted during the observation")
            mine = next((c for c in self.countings if c.maj_min == target.maj_min), None)
            threads = None if mine is None else [
                RecordedThread(command=command, tid=tid, transactions=n,
                               kernel_thread=tp.is_kernel_thread(tid, command))
                for (command, tid), n in tp.per_thread(mine.samples).items()]
            kernel = {t.tid for t in threads or () if t.kernel_thread}
            active = None if mine is None else tp.active_per_second(
                mine.samples, kernel, sliced=mine.slice_ms is not None)
            recorded.append(RecordedFilesystem(
                mountpoint=target.mountpoint, device=target.name, maj_min=target.maj_min,
                mount_options=_super_options(target.entry), xfs_info=infos[target.maj_min],
                before=before[target.maj_min], after=end,
                tracepoints=None if mine is None else mine.totals, threads=threads,
                writer_seconds=None if mine is None else mine.writer_seconds,
                writer_period=1 if mine is None else mine.period,
                writer_slice_ms=None if mine is None else mine.slice_ms,
                attribute_bytes=None if mine is None else sorted(
                    total for total, _ in mine.attributes.values()),
                allocations_recorded_per_ag=None if mine is None else mine.allocations,
                largest_attribute_value=None if mine is None else max(
                    (largest for _, largest in mine.attributes.values()), default=None),
                log_space_waits=None if mine is None else mine.waits,
                log_space_waits_unfinished=0 if mine is None else mine.waits_unfinished,
                ag_header_locks=None if mine is None or mine.ag_header_locks is None
                else list(mine.ag_header_locks),
                writers_per_second=active))
        return Recording(seconds=self.seconds, tracing=self.tracing, filesystems=recorded)

    def _wait_until(self, deadline: float) -> None:
        """Sleep until `deadline` (monotonic), checking every UNMOUNT_CHECK seconds that each
        filesystem is still there: one unmounted ends the observation at once."""
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, UNMOUNT_CHECK))
            for target in self.targets:
                if self.root.read(target.stats_path) is None:
                    raise DeviceProblem(f"{target.mountpoint} was unmounted during the "
                                        "observation")

    def _begun(self) -> None:
        if self.started is not None:
            self.started()

    def _read_all(self) -> dict[str, RecordedReading]:
        readings: dict[str, RecordedReading] = {}
        for target in self.targets:
            reading = read_counters(self.root, target)
            if reading is None:
                raise DeviceProblem(f"{target.mountpoint} was unmounted before the "
                                    "observation began")
            readings[target.maj_min] = reading
        return readings

    def stop(self) -> None:
        """Stop every perf process this observation started (idempotent)."""
        for counting in self.countings:
            counting.stop()


def recording_text(recording: Recording) -> str:
    """A recording as `observe --record FILE` writes it (JSON), for `--replay FILE`."""
    return json.dumps(recording.model_dump(mode="json"), indent=1) + "\n"


def document_from(recording: Recording) -> ObserveDocument:
    """The report of a recording: rates, writers, forms, findings and answers."""
    observed = [_observed(fs, recording.seconds) for fs in recording.filesystems]
    first = min(fs.before.wall for fs in recording.filesystems)
    started = datetime.datetime.fromtimestamp(first, datetime.UTC)
    return ObserveDocument(started=started.isoformat(timespec="milliseconds")
                           .replace("+00:00", "Z"),
                           seconds=recording.seconds, tracing=recording.tracing,
                           filesystems=observed, answers=_answers(observed),
                           cost=tp.COST_TRACEPOINTS if recording.tracing.method == "perf-stat"
                           else tp.COST_COUNTERS)


def _evidence(source: str, counter: str, start: RecordedReading, end: RecordedReading,
              traced: dict[str, int], seconds: float, interval: float) -> Evidence | None:
    if source == "tracepoint":
        if counter not in traced:
            return None
        return Evidence(source="tracepoint", counter=counter, delta=traced[counter],
                        seconds=seconds)
    table_start = start.xfs if source == "xfs-stats" else start.block
    table_end = end.xfs if source == "xfs-stats" else end.block
    if counter not in table_end:
        return None
    first, last = table_start.get(counter, 0), table_end[counter]
    return Evidence(source="xfs-stats" if source == "xfs-stats" else "block-stat",
                    counter=counter, before=first, after=last,
                    delta=last - first if last >= first else last, seconds=interval)


def _allocations_per_ag(recorded: RecordedFilesystem,
                        moved: dict[str, int]) -> tuple[list[int] | None, int | None]:
    """(extents allocated per AG, the allocations recorded they are estimated from): the
    statistics' exact count of the interval, split as the allocations recorded with the
    writers were; or counted per AG, exactly, in older recordings (None: nothing to split)."""
    if recorded.allocations_per_ag is not None:
        return recorded.allocations_per_ag, None
    sampled = recorded.allocations_recorded_per_ag
    split = tp.estimated_split(sampled or [], moved.get("extent_alloc.alloc_extents", 0))
    return (split, sum(sampled or [])) if split else (None, None)


def _observed(recorded: RecordedFilesystem, seconds: float) -> ObservedFilesystem:
    start, end = recorded.before, recorded.after
    interval = max(end.at - start.at, 1e-6)
    traced = recorded.tracepoints or {}
    rates: list[Rate] = []
    for name, (source, counter, label) in RATES.items():
        ev = _evidence(source, counter, start, end, traced, seconds, interval)
        if ev is not None:
            rates.append(Rate(name=name, label=label, per_second=ev.delta / ev.seconds,
                              evidence=ev))
    if "xfs:xfs_dir_fsync" in traced:
        fsyncs = next((r for r in rates if r.name == "fsyncs"), None)
        if fsyncs is not None:  # files and directories: both are fsync calls
            delta = fsyncs.evidence.delta + traced["xfs:xfs_dir_fsync"]
            fsyncs.evidence = fsyncs.evidence.model_copy(update={"delta": delta,
                                                                  "counter": "xfs:xfs_file_fsync"
                                                                  " + xfs:xfs_dir_fsync"})
            fsyncs.per_second = delta / seconds
    for name, (source, counter, label, unit) in BYTE_RATES.items():
        ev = _evidence(source, counter, start, end, traced, seconds, interval)
        if ev is not None:
            rates.append(Rate(name=name, label=label, per_second=ev.delta * unit / ev.seconds,
                              evidence=ev))
    moved = {k: v for k, v in ctr.deltas(start.xfs, end.xfs).items() if v}
    writers: list[Writer] = []
    forms: Forms | None = None
    concurrent: int | None = None
    if recorded.threads is not None:
        # Samples times the period estimate a thread's transactions (those of a tenth of each
        # second, or one in the period on each CPU in older recordings): never more than the
        # statistics counted in all.
        counted = sum(moved.get(f"trans.{kind}", 0) for kind in ("sync", "async", "empty"))
        writers = sorted((Writer(command=t.command, tid=t.tid,
                                 transactions=min(t.transactions * recorded.writer_period,
                                                  counted),
                                 kernel_thread=t.kernel_thread) for t in recorded.threads),
                         key=lambda w: -w.transactions)
        busy = [n for n in recorded.writers_per_second or () if n]
        concurrent = (int(statistics.median(busy) + 0.5) if busy
                      else sum(1 for w in writers if not w.kernel_thread)
                      if recorded.writers_per_second is None else 0)
    geometry = geometry_from(recorded.xfs_info, recorded.mount_options)
    locks = recorded.ag_header_locks
    per_ag, sampled = _allocations_per_ag(recorded, moved)
    if recorded.tracepoints is not None:
        forms = _forms(traced, recorded, geometry)
    fs = ObservedFilesystem(mountpoint=recorded.mountpoint, device=recorded.device,
                            maj_min=recorded.maj_min,
                            geometry=geometry, seconds=interval, rates=rates,
                            counters=moved, writers=writers,
                            concurrent_writers=concurrent, forms=forms,
                            writer_seconds=recorded.writer_seconds,
                            allocations_per_ag=per_ag, allocations_recorded=sampled,
                            writer_period=recorded.writer_period,
                            writer_slice_ms=recorded.writer_slice_ms,
                            log_space_waits=_log_space_waits(recorded),
                            ag_header_locks=locks[0] if locks else None,
                            ag_header_locks_waited=locks[1] if locks else None)
    fs.findings = findings_for(fs)
    return fs


def _log_space_waits(recorded: RecordedFilesystem) -> LogSpaceWaits | None:
    waits = recorded.log_space_waits
    if waits is None or not recorded.writer_seconds:
        return None
    return LogSpaceWaits(waits=len(waits), unfinished=recorded.log_space_waits_unfinished,
                         seconds=sum(waits), longest=max(waits, default=0.0),
                         over_seconds=recorded.writer_seconds)


_DIR_FORMS = (("shortform", "xfs:xfs_dir2_sf_addname"), ("block", "xfs:xfs_dir2_block_addname"),
              ("leaf", "xfs:xfs_dir2_leaf_addname"), ("node", "xfs:xfs_dir2_node_addname"))
_DIR_CONVERSIONS = (("shortform->block", "xfs:xfs_dir2_sf_to_block"),
                    ("block->leaf", "xfs:xfs_dir2_block_to_leaf"),
                    ("leaf->node", "xfs:xfs_dir2_leaf_to_node"))


#: Bytes of a directory's on-disk structures, V5 (CRC) and V4 (struct xfs_dir3_leaf_hdr
#: and xfs_dir2_leaf_hdr; xfs_dir3_data_hdr and xfs_dir2_data_hdr), and of their tails.
_LEAF_HEADER = {True: 64, False: 16}
_DATA_HEADER = {True: 64, False: 16}
_LEAF_TAIL = 4
_BLOCK_TAIL = 8
#: A leaf entry (hash and address), a best-free slot per data block in the leaf's tail, and the
#: largest data entry (inode number, name length, a 255-byte name, file type, tag; 8-aligned).
_LEAF_ENTRY = 8
_BEST_SLOT = 2
_LARGEST_ENTRY = 272
#: `.` and `..` are entries of block, leaf and node directories, not the user's.
_DOTS = 2


def directory_entries_at_least(form: str | None, block_size: int, crc: bool) -> int | None:
    """The fewest entries (less `.` and `..`) a directory has once it reached `form`, whatever
    its names' lengths: the kernel converts a block directory to leaf form when its entries and
    their leaf entries outgrow one directory block, and a leaf directory to node form when its
    single leaf block cannot index one more entry (stale ones compacted first). Longer names
    mean fewer entries per data block, hence more best-free slots in the leaf's tail, hence a
    smaller leaf: the bound takes the longest names. None for shortform and block."""
    if form == "leaf":
        fit = (block_size - _DATA_HEADER[crc] - _BLOCK_TAIL) // (_LARGEST_ENTRY + _LEAF_ENTRY)
        return fit + 1 - _DOTS
    if form == "node":
        per_block = (block_size - _DATA_HEADER[crc]) // _LARGEST_ENTRY
        room = block_size - _LEAF_HEADER[crc] - _LEAF_TAIL
        # n entries fill the leaf once n * 8 + (n / per_block + 1) * 2 > room.
        n = 0
        while (n + 1) * _LEAF_ENTRY + (-(-(n + 1) // per_block)) * _BEST_SLOT <= room:
            n += 1
        return n + 1 - _DOTS
    return None


def _forms(traced: dict[str, int], recorded: RecordedFilesystem,
           geometry: Geometry | None) -> Forms:
    adds = {form: traced.get(event, 0) for form, event in _DIR_FORMS}
    largest = next((form for form, _ in reversed(_DIR_FORMS) if adds[form]), None)
    sizes = recorded.attribute_bytes or []
    return Forms(
        directory_adds=adds,
        directory_conversions={name: traced.get(event, 0) for name, event in _DIR_CONVERSIONS},
        largest_directory_form=largest,
        attribute_sets_inline=traced.get("xfs:xfs_attr_sf_add", 0),
        attribute_spills=traced.get("xfs:xfs_attr_sf_to_leaf", 0),
        attribute_sets=sum(traced.get(event, 0) for event in tp.ATTRIBUTE_EVENTS)
        if all(event in traced for event in tp.ATTRIBUTE_EVENTS) else None,
        attribute_leaf_to_node=traced.get("xfs:xfs_attr_leaf_to_node", 0),
        attribute_files=len(sizes),
        attribute_bytes_per_file=int(statistics.median_low(sizes)) if sizes else None,
        largest_attribute_value=recorded.largest_attribute_value,
        largest_directory_entries_at_least=None if geometry is None else
        directory_entries_at_least(largest, geometry.directory_block_size, geometry.crc))


#: What a measured answer is, when it is not a plain measurement: said in the workload file.
ANSWER_NOTES = {"largest_directory_entries": "at least: a lower bound from the form the largest "
                "directory reached;",
                "xattr_bytes_per_file": "median over the files that got attributes;"}


def rate_of(fs: ObservedFilesystem, name: str) -> Rate | None:
    return next((r for r in fs.rates if r.name == name), None)


def _answers(observed: list[ObservedFilesystem]) -> ObservedAnswers:
    """What the busiest filesystem (most transactions) says about the workload."""
    def busy(fs: ObservedFilesystem) -> int:
        return fs.counters.get("trans.async", 0) + fs.counters.get("trans.sync", 0)

    fs = max(observed, key=busy, default=None)
    if fs is None or busy(fs) == 0:
        return ObservedAnswers()
    fsyncs = rate_of(fs, "fsyncs")
    metadata = sum(fs.counters.get(k, 0) for k in ("dir.create", "dir.remove", "attr.set",
                                                    "attr.remove"))
    writes = fs.counters.get("rw.write_calls", 0)
    # A metadata workload writes at most about once per file it creates; more writes than
    # that are data going into files.
    data = writes > 2 * metadata
    activity = "both" if metadata and data else "metadata" if metadata else "data" if data \
        else None
    forms = fs.forms
    return ObservedAnswers(
        fsyncs_per_second=round(fsyncs.per_second, 1) if fsyncs else None,
        concurrent_writers=fs.concurrent_writers or None,
        writer_activity=activity,
        xattr_bytes_per_file=forms.attribute_bytes_per_file if forms else None,
        largest_xattr_value=forms.largest_attribute_value if forms else None,
        largest_directory_entries=forms.largest_directory_entries_at_least if forms else None)
