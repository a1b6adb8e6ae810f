"""xfs tracepoints counted in the kernel by `perf stat`, never streamed.

Why perf stat: each tracepoint is a counter the kernel increments in place (no event record is
written, copied or read), `--filter 'dev == N'` keeps one filesystem's events, and the counters
belong to the perf process: they close when it exits, whatever ends it. perf runs `sleep SECONDS`
as its workload, so it ends on its own even if the advisor is killed with SIGKILL; nothing is
left enabled in tracefs (tracefs triggers or BPF programs would outlive a killed advisor).

Three perf processes run: `perf stat` counts every event on all CPUs (the totals), a `perf
record` records xfs_trans_alloc (thread id and name) over the first WRITER_SLICE of each second
of the first WRITER_SECONDS to tell who changed metadata, and with it the extent allocations
(each one's AG: how the statistics' exact count splits over the AGs), and another the
attribute sets then (inode, name and value lengths: each set is one record, every one kept,
for exact bytes per file) and the waits for log space (each sleep and wake, with its thread
and time). The
writers' record is sliced, not sampled: perf enables the event only over those slices
(`--delay 0-100,1000-1100,...`) and records every hit in them. A disabled event costs a hit
next to nothing, an enabled one about 195 ns whether the hit is kept or not, so that a tenth
of the time recorded in full costs a transaction about a third of what one hit in ten on each
CPU all the time did, for the same threads seen (scripts/bench_writers_record.py measures
both). (`perf stat --all-cpus --per-thread` would count per thread, but it enumerates /proc's
threads at start and fails outright on a busy host when one exits meanwhile.)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from advisor.errors import ToolProblem
from advisor.models.proposal import MkfsGeometry
from advisor.system import argv
from advisor.system.runner import Background, Result, run, which

#: Tracepoint -> what one count means. All have a `dev` field to filter on. Only what a rate,
#: a finding or the report uses is counted: each counted event costs the writer a little on
#: every hit. Transactions and waits for log space are not among them: the statistics count
#: them (trans, push_ail.sleep_logspace).
EVENTS: dict[str, str] = {
    "xfs:xfs_file_fsync": "fsync/fdatasync calls on files",
    "xfs:xfs_dir_fsync": "fsync calls on directories",
    "xfs:xfs_attr_sf_add": "attributes added inline (in the inode)",
    "xfs:xfs_attr_sf_to_leaf": "attribute forks moved out of the inode",
    "xfs:xfs_attr_leaf_add": "attributes added to a leaf block",
    "xfs:xfs_attr_node_addname": "attributes added to a node tree",
    "xfs:xfs_attr_leaf_to_node": "attribute forks grown past one leaf block",
    "xfs:xfs_dir2_sf_addname": "entries added to shortform directories",
    "xfs:xfs_dir2_block_addname": "entries added to block directories",
    "xfs:xfs_dir2_leaf_addname": "entries added to leaf directories",
    "xfs:xfs_dir2_node_addname": "entries added to node directories",
    "xfs:xfs_dir2_sf_to_block": "directories converted shortform -> block",
    "xfs:xfs_dir2_block_to_leaf": "directories converted block -> leaf",
    "xfs:xfs_dir2_leaf_to_node": "directories converted leaf -> node",
    "xfs:xfs_alloc_vextent_noagbp": "allocations that found an AG's free space locked (busy) "
                                    "and went on to another",
    "xfs:xfs_alloc_vextent_loopfailed": "allocations that failed in one AG and were retried in "
                                        "another",
}
#: Every extent allocation ends here, with the AG it came from (`agno`): recorded with the
#: writers, over the same slices, for each AG's share of the extents the statistics count
#: (extent_alloc), exactly, over the whole interval: the split is estimated, the total is not.
#: Counted once per AG instead (the event again under each `agno == N`), each copy is a
#: filter the kernel runs on every allocation, about 30 ns: 32 copies cost an allocation
#: 1,157 ns, 4 copies 276 ns, the slices 136-149 ns whatever the AGs
#: (scripts/bench_writers_record.py --allocations 4 --allocations 32).
AG_EVENT = "xfs:xfs_alloc_vextent_finish"
#: Past this many AGs, the AG headers' locks are not counted (--ag-locks: each header's
#: address is a comparison the kernel makes on every buffer lock).
MAX_AGS_COUNTED = 32
#: A thread about to take a buffer's lock, whether it waits or not (xfs_buf_lock: the lock's
#: semaphore count, 1 free, 0 held, is its `lockval`). Counted twice over the AGs' headers
#: (the AGF, free space, and the AGI, inodes: the locks creates, removes and extent
#: allocations take in each AG), up to MAX_AGS_COUNTED AGs: every lock, and those that found
#: the header held by another and so waited for it. Only when asked (`--ag-locks`): the
#: tracepoint fires on every buffer lock (about 20 per file created and removed), filtered
#: in the kernel, and counting it cost a metadata-heavy job 4.7% more CPU per file (95%
#: interval 1.1% to 8.3%, scripts/bench_observe.py --modes stat-ag-locks). How long each
#: waited is not timed: xfs_buf_lock_done fires alike after a wait and without one, so
#: timing the waits takes a record of every AG header lock (about one for every two
#: transactions), the cost that made the transaction record sliced.
LOCK_EVENT = "xfs:xfs_buf_lock"
WRITER_EVENT = "xfs:xfs_trans_alloc"
#: Each attribute set fires exactly one of these (inline, into a leaf block, into a node
#: tree), with the inode, the name's and the value's length: recorded, every hit, over the
#: first WRITER_SECONDS, for the bytes each file's attributes take; counted by perf stat too,
#: for the setxattr calls in the very window the spills (xfs_attr_sf_to_leaf) are counted in
#: (a set that spills fires xfs_attr_sf_to_leaf, then xfs_attr_leaf_add).
ATTRIBUTE_EVENTS = ("xfs:xfs_attr_sf_add", "xfs:xfs_attr_leaf_add", "xfs:xfs_attr_node_addname")
#: A thread that finds the log without room for its reservation fires the first, sleeps, and
#: fires the second in the same thread once woken (xlog_grant_head_wait, once per sleep, as
#: the statistics' push_ail.sleep_logspace counts them): recorded with the attribute sets,
#: every hit, for the time each wait took. Neither fires while the log has room.
WAIT_EVENTS = ("xfs:xfs_log_grant_sleep", "xfs:xfs_log_grant_wake")
#: Seconds, from the start, over which transactions are recorded per thread (the record file
#: grows with every transaction recorded: about 50 bytes each).
WRITER_SECONDS = 10.0
#: Milliseconds at the start of each second over which every transaction is recorded (the
#: event is disabled the rest of the second): a thread that allocates at least one transaction
#: in WRITER_SLICE_MS, 10 a second when they are even, is seen in that second, as one that
#: allocated 10 in a second was under the one-in-10 sample this replaced. Measured per
#: transaction (scripts/bench_writers_record.py): every hit recorded 1,043 ns of the writer's
#: CPU, one in 10 on each CPU 311 ns, counted only 195 ns: most of a sample's cost is paid on
#: each hit of the enabled tracepoint, whatever is kept, and only the time it is enabled
#: lowers that; a tenth of the time, every hit, about a tenth of 1,043 ns.
WRITER_SLICE_MS = 100
#: The transactions of a thread are its samples times this (1000 / WRITER_SLICE_MS: the
#: record saw a tenth of each second).
WRITER_PERIOD = 1000 // WRITER_SLICE_MS
#: Where perf cannot enable an event over ranges of time (`--delay` takes one number only
#: before perf 6.2's ranges), the record runs throughout and keeps one transaction in this
#: many on each CPU (311 ns per transaction instead of 124).
SAMPLE_PERIOD = 10

#: What watching costs, measured with scripts/bench_observe.py (docs/observe.md gives the
#: figures of each run): said by every report, so that nobody takes it for free.
COST_TRACEPOINTS = (
    "measured on a 2-core host with other work at low priority (scripts/bench_observe.py: fio "
    "jobs creating, fsyncing and deleting files in memory, bound by CPU, observed and "
    "unobserved in the same blocks): the watched jobs' throughput fell 1.0% (95% interval 0.2% "
    "to 1.7%, 120 blocks at load 0.3-3.3: the goal of under 2% is shown there, by a bound that "
    "allows for 10 looks: 1.98%) and 1.5% in a second run (0.5% to 2.4%, 300 blocks at load "
    "1.2-3.9: not shown); their CPU per file rose 1.5-1.8%; the record of who writes costs a "
    "transaction about 0.12 us; observe itself uses about 2 ms of CPU a second while it "
    "watches, and about 0.9 s per observation (perf's and Python's start), before and after "
    "the window")
COST_COUNTERS = (
    "measured on a shared 2-core host at load 10 (scripts/bench_observe.py, 20 blocks): the "
    "watched fio jobs paid +0.9% CPU per file (95% interval -2.5% to +4.3%): nothing to "
    "measure but two file reads; observe itself uses about 0.3 s of CPU per observation "
    "(Python's start, xfs_info)")

#: What the findings lose without tracepoints.
NEEDS_TRACEPOINTS = (
    "fsyncs per second (the counters only give log forces, which fsync shares with others)",
    "how many processes changed metadata at once (ag-concurrency)",
    "how many setxattr calls pushed attributes out of the inode (inode-size)",
    "the form the largest directories reached (dir-block-size)",
)

_PF_KTHREAD = 0x00200000


def device_filter(maj_min: str) -> str:
    """The tracepoint filter for one device: the kernel's dev_t is MAJOR << 20 | MINOR."""
    major, minor = (int(x) for x in maj_min.split(":"))
    return f"dev == {hex(major << 20 | minor)}"


def unavailable_reason() -> str | None:
    """Why tracepoints cannot be counted here (None: they can): a second-long probe of perf on
    one event with nothing to count."""
    if which("perf") is None:
        return "perf is not installed (Debian: apt install linux-perf)"
    result = run(argv.perf_stat(["xfs:xfs_log_force"], "dev == 0", 0), check=False, timeout=30)
    if not result.ok:
        return (f"perf cannot count xfs tracepoints: {result.first_error_line()}"
                f"{environment_hint()}")
    return None


def parse_totals(text: str) -> dict[str, int]:
    """event -> count from `perf stat -x,` output (counts that perf could not take are left out)."""
    counts: dict[str, int] = {}
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) >= 3 and fields[2] in EVENTS and fields[0].isdigit():
            counts[fields[2]] = counts.get(fields[2], 0) + int(fields[0])
    return counts


#: An xfs_attr_class event as perf script prints it: `dev 7:0 ino 0x83 name tag namelen 3
#: valuelen 20 hashval 0x... filter ...`. The name is the file owner's text and may hold
#: anything: the inode is the first `ino`, the lengths the last `namelen ... valuelen`.
_ATTRIBUTE = re.compile(r"\bino 0x([0-9a-f]+) name .* namelen (\d+) valuelen (\d+) hashval ")


def parse_attribute_adds(text: str) -> dict[int, tuple[int, int]]:
    """inode -> (name and value bytes added, largest value) from `perf script --fields trace`
    of ATTRIBUTE_EVENTS."""
    files: dict[int, tuple[int, int]] = {}
    for line in text.splitlines():
        m = _ATTRIBUTE.search(line)
        if m is None:
            continue
        ino, name, value = int(m.group(1), 16), int(m.group(2)), int(m.group(3))
        total, largest = files.get(ino, (0, 0))
        files[ino] = (total + name + value, max(largest, value))
    return files


_EVENT_LINE = re.compile(r"^\s*(\d+)\s+(\d+\.\d+):\s+(xfs:\w+):")


def parse_log_space_waits(text: str) -> tuple[list[float], int]:
    """(the seconds each wait for log space took, the waits still asleep when the record
    ended) from `perf script --fields tid,time,event,trace` of WAIT_EVENTS: each sleep paired
    with its thread's next wake (a wake with no sleep before it began before the record)."""
    matched = (_EVENT_LINE.match(line) for line in text.splitlines())
    return _paired_waits((m.group(3), int(m.group(1)), float(m.group(2)))
                         for m in matched if m is not None)


def ag_header_daddrs(g: MkfsGeometry) -> list[int]:
    """The disk addresses (512-byte units) of each AG's AGF and AGI: the AG's first block, then
    its second and third sectors (XFS_AGF_DADDR, XFS_AGI_DADDR)."""
    sector = g.sector_size // 512
    per_ag = g.agsize_blocks * (g.block_size // 512)
    return [n * per_ag + k * sector for n in range(g.agcount) for k in (1, 2)]


def ag_header_filters(device: str, g: MkfsGeometry | None) -> list[tuple[str, str]]:
    """LOCK_EVENT twice, on the AG headers' addresses: every lock, and those that found the
    header held (none past MAX_AGS_COUNTED AGs: each address is a comparison the kernel makes
    on every buffer lock)."""
    if g is None or g.agcount > MAX_AGS_COUNTED:
        return []
    headers = " || ".join(f"bno == {daddr}" for daddr in ag_header_daddrs(g))
    return [(LOCK_EVENT, f"{device} && ({headers})"),
            (LOCK_EVENT, f"{device} && lockval == 0 && ({headers})")]


#: perf's Python hook (`perf script --script FILE`): each record as one JSON line, its numbers
#: and its command name JSON-escaped. perf script's text prints an attribute's name and a
#: command name as they are: one holding a line break would start a line of its own that
#: passes for a record (a log space wait, an attribute set, a writer). These lines cannot.
RECORDS_SCRIPT = """\
import json


def trace_unhandled(event_name, context, event_fields_dict, perf_sample_dict):
    sample = perf_sample_dict["sample"]
    comm = perf_sample_dict.get("comm", "")
    if isinstance(comm, bytes):
        comm = comm.decode("utf-8", "replace")
    record = {"event": event_name, "tid": sample["tid"], "time": sample["time"],
              "comm": str(comm)}
    for key in ("ino", "namelen", "valuelen", "agno"):
        if key in event_fields_dict:
            record[key] = event_fields_dict[key]
    print(json.dumps(record))
"""


@dataclass(frozen=True)
class Record:
    """One recorded tracepoint hit, as RECORDS_SCRIPT prints it."""

    event: str
    tid: int
    time: float
    command: str
    fields: dict[str, int]


def parse_records(text: str) -> list[Record]:
    """The records of RECORDS_SCRIPT's output (perf names events `xfs__xfs_x`: read as
    `xfs:xfs_x`); a line that is not one whole record is skipped."""
    found: list[Record] = []
    for line in text.splitlines():
        try:
            raw = json.loads(line)
        except ValueError:
            continue
        if not isinstance(raw, dict):
            continue
        event, tid, at, command = (raw.get(k) for k in ("event", "tid", "time", "comm"))
        if not (isinstance(event, str) and isinstance(tid, int) and isinstance(at, int)
                and isinstance(command, str)):
            continue
        fields = {k: v for k in ("ino", "namelen", "valuelen", "agno")
                  if isinstance(v := raw.get(k), int)}
        found.append(Record(event.replace("__", ":", 1), tid, at / 1e9, command, fields))
    return found


def attribute_adds(records: list[Record]) -> dict[int, tuple[int, int]]:
    """inode -> (name and value bytes added, largest value), as parse_attribute_adds."""
    files: dict[int, tuple[int, int]] = {}
    for r in records:
        if r.event in ATTRIBUTE_EVENTS and len(r.fields) == 3:
            total, largest = files.get(r.fields["ino"], (0, 0))
            files[r.fields["ino"]] = (total + r.fields["namelen"] + r.fields["valuelen"],
                                      max(largest, r.fields["valuelen"]))
    return files


def log_space_waits(records: list[Record]) -> tuple[list[float], int]:
    """The waits for log space of the records, as parse_log_space_waits."""
    return _paired_waits((r.event, r.tid, r.time) for r in records)


def _paired_waits(events: Iterable[tuple[str, int, float]]) -> tuple[list[float], int]:
    asleep: dict[int, float] = {}
    waits: list[float] = []
    for event, tid, at in events:
        if event == WAIT_EVENTS[0]:
            asleep[tid] = at
        elif event == WAIT_EVENTS[1] and tid in asleep:
            waits.append(max(at - asleep.pop(tid), 0.0))
    return waits, len(asleep)


def parse_per_ag(text: str, event: str = LOCK_EVENT) -> list[int]:
    """The counts of `event` (one per filter it was counted under) in `perf stat -x,` output,
    in the order perf printed them (the order they were asked in); empty when any of them
    could not be counted."""
    counts: list[int] = []
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) >= 3 and fields[2] == event:
            if not fields[0].isdigit():
                return []
            counts.append(int(fields[0]))
    return counts


@dataclass(frozen=True)
class Sample:
    """One recorded transaction: who allocated it, and when (seconds, perf's clock)."""

    command: str
    tid: int
    time: float


#: A line of `perf script --fields comm,tid,time,event,trace`: `  python3 30279  3060.567913:
#: xfs:xfs_trans_alloc: dev 7:0 ...`. A command name may hold spaces: the thread id and the
#: time are the last two words before the event name (matched greedily: the last such words,
#: as no trace holds any).
_WRITER_LINE = re.compile(r"^\s*(.*\S)\s+(\d+)\s+(\d+\.\d+):(?:\s+(xfs:\w+):(.*))?\s*$")
_AGNO = re.compile(r"\bagno 0x([0-9a-f]+) ")


def parse_samples(text: str) -> list[Sample]:
    """The writers' samples (WRITER_EVENT) of `perf script --fields comm,tid,time,event,trace`
    (or of `--fields comm,tid,time`, without events: every line one)."""
    found: list[Sample] = []
    for line in text.splitlines():
        m = _WRITER_LINE.match(line)
        if m is not None and m.group(4) in (None, WRITER_EVENT):
            found.append(Sample(m.group(1), int(m.group(2)), float(m.group(3))))
    return found


def parse_allocations(text: str) -> dict[int, int]:
    """AG -> the extent allocations (AG_EVENT) recorded in the same text as parse_samples."""
    per_ag: dict[int, int] = {}
    for line in text.splitlines():
        m = _WRITER_LINE.match(line)
        if m is not None and m.group(4) == AG_EVENT and (ag := _AGNO.search(m.group(5))):
            agno = int(ag.group(1), 16)
            per_ag[agno] = per_ag.get(agno, 0) + 1
    return per_ag


def allocations_per_ag(records: list[Record]) -> dict[int, int]:
    """AG -> the extent allocations (AG_EVENT) among the records."""
    per_ag: dict[int, int] = {}
    for r in records:
        if r.event == AG_EVENT and "agno" in r.fields:
            per_ag[r.fields["agno"]] = per_ag.get(r.fields["agno"], 0) + 1
    return per_ag


def estimated_split(recorded: list[int], total: int) -> list[int]:
    """Each AG's share of `total` (the statistics' exact count of extents allocated) in the
    proportions of `recorded` (the allocations recorded in each AG), in whole extents adding up
    to `total` (the largest remainders rounded up); empty when nothing was recorded."""
    seen = sum(recorded)
    if not seen or total < 0:
        return []
    exact = [n * total / seen for n in recorded]
    shares = [int(x) for x in exact]
    by_remainder = sorted(range(len(exact)), key=lambda i: shares[i] - exact[i])
    for i in by_remainder[:total - sum(shares)]:
        shares[i] += 1
    return shares


def per_thread(samples: list[Sample]) -> dict[tuple[str, int], int]:
    """(command, thread id) -> transactions."""
    counts: dict[tuple[str, int], int] = {}
    for s in samples:
        counts[(s.command, s.tid)] = counts.get((s.command, s.tid), 0) + 1
    return counts


def active_per_second(samples: list[Sample], excluded: set[int],
                      sliced: bool = True) -> list[int]:
    """For each second from the first sample on, how many distinct threads (not `excluded`:
    kernel threads) allocated a transaction in it. Sliced, the samples come in slices a second
    apart (writer_slices), the first of them somewhere in its slice: each belongs to the
    second nearest to it from the first sample on, so that a slice is never split between
    two."""
    if not samples:
        return []
    start = min(s.time for s in samples)
    shift = 0.5 if sliced else 0.0
    seconds: dict[int, set[int]] = {}
    for s in samples:
        if s.tid not in excluded:
            seconds.setdefault(int(s.time - start + shift), set()).add(s.tid)
    last = max(int(s.time - start + shift) for s in samples)
    return [len(seconds.get(i, ())) for i in range(last + 1)]


def slices_supported() -> bool:
    """perf record can enable its events over ranges of time (`--delay 0-100,1000-1100`): its
    list of options says so."""
    usage = run(argv.perf_record_usage(), check=False, timeout=30)
    return "ranges of time" in usage.stdout + usage.stderr


def writer_slices(seconds: float) -> list[tuple[int, int]]:
    """The milliseconds, from the start, over which the writers' record is enabled: the first
    WRITER_SLICE_MS of each second of `seconds`."""
    whole = max(int(seconds * 1000), 1)
    return [(start, min(start + WRITER_SLICE_MS, whole)) for start in range(0, whole, 1000)]


def writer_period(seconds: float) -> int:
    """What a thread's samples are multiplied by: the seconds recorded over those sliced."""
    recorded = sum(end - start for start, end in writer_slices(seconds))
    return max(round(seconds * 1000 / recorded), 1)


def is_kernel_thread(tid: int, command: str) -> bool:
    """A kernel thread (kworker, xfsaild...): the PF_KTHREAD flag of /proc/TID/stat, or, for
    one gone since, a name only kernel threads carry."""
    try:
        with open(f"/proc/{tid}/stat", encoding="utf-8", errors="replace") as f:
            stat = f.read()
        flags = int(stat.rpartition(")")[2].split()[6])
        return bool(flags & _PF_KTHREAD)
    except (OSError, ValueError, IndexError):
        return command.startswith(("kworker/", "xfsaild/", "xfs-"))


@dataclass
class Counting:
    """The perf processes counting one filesystem's tracepoints for the observation."""

    maj_min: str
    seconds: float
    totals: dict[str, int] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)
    attributes: dict[int, tuple[int, int]] = field(default_factory=dict)
    waits: list[float] = field(default_factory=list)
    waits_unfinished: int = 0
    geometry: MkfsGeometry | None = None
    ag_locks: bool = False
    """Count LOCK_EVENT on the AG headers too (`--ag-locks`: it fires on every buffer lock)."""
    allocations: list[int] = field(default_factory=list)
    """The extent allocations recorded with the writers in each AG, AG 0 first (as many as
    the geometry has AGs, or up to the last AG recorded without one)."""
    ag_header_locks: tuple[int, int] | None = None
    """(AG header locks taken, those that found the header held), when counted."""
    writer_seconds: float = WRITER_SECONDS
    period: int = WRITER_PERIOD
    slice_ms: int | None = WRITER_SLICE_MS
    """The writers were recorded over this much of each second (None: sampled throughout, one
    in `period`, where perf cannot enable its events over ranges of time)."""
    _procs: list[Background] = field(default_factory=list)
    _folder: str | None = None
    _results: list[Result] = field(default_factory=list)

    @property
    def _data(self) -> str:
        assert self._folder is not None
        return os.path.join(self._folder, "writers.data")

    @property
    def _attribute_data(self) -> str:
        assert self._folder is not None
        return os.path.join(self._folder, "attributes.data")

    def start(self) -> None:
        flt = device_filter(self.maj_min)
        self.writer_seconds = min(self.seconds, WRITER_SECONDS)
        remove_stale_folders()
        self._folder = tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-")
        # perf record first, and perf stat once it records: perf stat's window is the one
        # the counters are read around, so it must start last, just before they are read.
        sliced = slices_supported()
        self.slice_ms = WRITER_SLICE_MS if sliced else None
        self.period = writer_period(self.writer_seconds) if sliced else SAMPLE_PERIOD
        self._procs.append(Background(_dies_with_us(self.writers_command())))
        self._procs.append(Background(_dies_with_us(
            argv.perf_record((*ATTRIBUTE_EVENTS, *WAIT_EVENTS), flt, self._attribute_data,
                             self.writer_seconds))))
        self.wait_counting()
        self._procs.insert(0, Background(_dies_with_us(self.stat_command())))

    def writers_command(self) -> list[str]:
        """The `perf record` of the writers and the extent allocations: every transaction and
        allocation in each second's slice (or one in `period` of each on each CPU throughout,
        where perf cannot slice)."""
        flt = device_filter(self.maj_min)
        events = (WRITER_EVENT, AG_EVENT)
        if self.slice_ms is None:
            return argv.perf_record(events, flt, self._data, self.writer_seconds, self.period)
        return argv.perf_record(events, flt, self._data, self.writer_seconds,
                                enabled=writer_slices(self.writer_seconds))

    def stat_command(self) -> list[str]:
        """The `perf stat` this counting runs: EVENTS, LOCK_EVENT on the AG headers when
        asked."""
        flt = device_filter(self.maj_min)
        locks = ag_header_filters(flt, self.geometry) if self.ag_locks else []
        return argv.perf_stat(list(EVENTS), flt, self.seconds, locks)

    def _per_ag(self, found: dict[int, int]) -> list[int]:
        agcount = self.geometry.agcount if self.geometry is not None else max(found, default=-1) + 1
        return [found.get(n, 0) for n in range(agcount)]

    def wait_counting(self, timeout: float = 30.0) -> bool:
        """Return once every perf process counts: perf forks its workload first, opens the
        counters, then lets the child exec `sleep` (the counters are enabled on that exec), so
        a child named sleep means counting has begun. False when that was not seen in time
        (perf failed; finish() says why)."""
        deadline = time.monotonic() + timeout
        pending = [p.pid for p in self._procs]
        while pending and time.monotonic() < deadline:
            pending = [pid for pid in pending if not _child_named(pid, "sleep")
                       and _alive(pid)]
            if pending:
                time.sleep(0.005)
        return not pending

    def wait_done(self) -> None:
        """Wait for all to end (they stop with their sleep)."""
        self._results = [p.wait(self.seconds + 30) for p in self._procs]

    def collect(self) -> None:
        """Read what they counted and sampled; ToolProblem when perf failed."""
        try:
            for result in self._results:
                if not result.ok:
                    raise ToolProblem(f"{' '.join(result.argv[:2])} failed: "
                                      f"{result.first_error_line()}")
            self.totals = parse_totals(self._results[0].stderr)
            locks = parse_per_ag(self._results[0].stderr, LOCK_EVENT)
            self.ag_header_locks = (locks[0], locks[1]) if len(locks) == 2 else None
            hook = os.path.join(self._folder or "", "records.py")
            with open(hook, "w", encoding="utf-8") as f:
                f.write(RECORDS_SCRIPT)
            writers = run(argv.perf_script_with(self._data, hook), check=False,
                          timeout=60 + self.seconds)
            if writers.ok:  # perf runs Python: every record's text comes JSON-escaped
                recorded = parse_records(writers.stdout)
                self.samples = [Sample(r.command, r.tid, r.time)
                                for r in recorded if r.event == WRITER_EVENT]
                self.allocations = self._per_ag(allocations_per_ag(recorded))
                script = run(argv.perf_script_with(self._attribute_data, hook), check=True,
                             timeout=60 + self.seconds)
                records = parse_records(script.stdout)
                self.attributes = attribute_adds(records)
                self.waits, self.waits_unfinished = log_space_waits(records)
                return
            # perf built without Python: its text, where a name could pass for a record
            script = run(argv.perf_script_threads(self._data), check=True,
                         timeout=60 + self.seconds)
            self.samples = parse_samples(script.stdout)
            self.allocations = self._per_ag(parse_allocations(script.stdout))
            script = run(argv.perf_script_trace(self._attribute_data), check=True,
                         timeout=60 + self.seconds)
            self.attributes = parse_attribute_adds(script.stdout)
            self.waits, self.waits_unfinished = parse_log_space_waits(script.stdout)
        finally:
            self._remove_data()

    def stop(self) -> None:
        """End both now (Ctrl-C, an error): nothing stays running, no file stays behind."""
        for proc in self._procs:
            proc.stop()
        self._remove_data()

    def _remove_data(self) -> None:
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._procs]


FOLDER_PREFIX = "xfs-advisor-observe-"


def remove_stale_folders() -> None:
    """Remove the perf record folders of observations killed outright (SIGKILL leaves them):
    each is named after its process, removed once that process is gone."""
    parent = tempfile.gettempdir()
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        pid = name.removeprefix(FOLDER_PREFIX).partition("-")[0]
        if name.startswith(FOLDER_PREFIX) and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)


def _dies_with_us(command: list[str]) -> list[str]:
    """The command under `setpriv --pdeathsig KILL` when setpriv is there: killed outright
    (SIGKILL, the OOM killer), the advisor takes perf with it instead of leaving it counting
    until its sleep ends."""
    return [*argv.setpriv_pdeathsig(), *command] if which("setpriv") else command


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _child_named(pid: int, name: str) -> bool:
    """A child of `pid` runs a program called `name` (/proc/PID/task/PID/children)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
            children = f.read().split()
    except OSError:
        return False
    for child in children:
        try:
            with open(f"/proc/{child}/comm", encoding="utf-8", errors="replace") as f:
                if f.read().strip() == name:
                    return True
        except OSError:
            continue
    return False


def environment_hint() -> str:
    """Why perf may be refused (for the fallback's reason line)."""
    try:
        with open("/proc/sys/kernel/perf_event_paranoid", encoding="ascii") as f:
            level = f.read().strip()
    except OSError:
        return ""
    return "" if os.geteuid() == 0 else f" (not root; kernel.perf_event_paranoid={level})"
