"""What `xfs-advisor observe` measured on live XFS filesystems: counter deltas turned into rates,
each with its evidence (the counter, its two readings, the interval), the metadata writers seen,
the forms directories and attribute forks reached, and findings tying figures to the geometry and
to a rule. A `--json` contract (`xfs-advisor schema observe`)."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from advisor import SCHEMA_VERSION
from advisor.models.base import Model
from advisor.models.workload import WorkloadAnswers, WriterActivity

#: Where a figure comes from: the per-mount XFS statistics, the block device's stat file, or a
#: tracepoint counted in the kernel by `perf stat`.
Source = Literal["xfs-stats", "block-stat", "tracepoint"]


class Evidence(Model):
    """One counter read at the start and at the end of the observation."""

    source: Source
    """xfs-stats (/sys/fs/xfs/DEV/stats/stats), block-stat (/sys/dev/block/MAJ:MIN/stat) or
    tracepoint (an xfs: tracepoint counted by perf stat, filtered on the filesystem's device)."""
    counter: str
    """The counter: `log.force` (line `log`, field `force` of the stats file), `write_ios`,
    or a tracepoint name such as `xfs:xfs_file_fsync`."""
    before: int | None = None
    """Its value at the start (null for a tracepoint: counted from zero)."""
    after: int | None = None
    """Its value at the end (null for a tracepoint)."""
    delta: int = Field(ge=0)
    """How much it moved during the observation."""
    seconds: float = Field(gt=0)
    """The interval the delta covers."""


class Rate(Model):
    """A per-second figure and the counter behind it."""

    name: str
    """Stable key of the figure (`fsyncs`, `log_forces`, `log_space_waits`...)."""
    label: str
    """What it counts, in words."""
    per_second: float = Field(ge=0)
    """delta / seconds."""
    evidence: Evidence
    """The counter and its readings."""


class Writer(Model):
    """A thread that allocated transactions (changed metadata) on the filesystem."""

    command: str
    """Its command name as the kernel knows it (untrusted text)."""
    tid: int = Field(ge=0)
    """Its thread id."""
    transactions: int = Field(ge=0)
    """Transactions it allocated (xfs:xfs_trans_alloc) in the first `writer_seconds`: the
    samples recorded times `writer_period` (an estimate when that is over 1)."""
    kernel_thread: bool = False
    """A kernel worker (xfsaild, kworker...): the filesystem's own work, not a writer."""


class Forms(Model):
    """Forms that directories and attribute forks reached while observed (from tracepoints)."""

    directory_adds: dict[str, int] = Field(default_factory=dict)
    """Entries added per directory form: shortform (in the inode), block, leaf, node."""
    directory_conversions: dict[str, int] = Field(default_factory=dict)
    """Directories converted: shortform->block, block->leaf, leaf->node."""
    largest_directory_form: Literal["shortform", "block", "leaf", "node"] | None = None
    """The largest form an entry was added to (null: no entry added)."""
    attribute_sets_inline: int = Field(default=0, ge=0)
    """Attributes added inline, in the inode's literal area (xfs:xfs_attr_sf_add)."""
    attribute_spills: int = Field(default=0, ge=0)
    """Attribute forks moved out of the inode into an attribute block (xfs:xfs_attr_sf_to_leaf)."""
    attribute_sets: int | None = None
    """Attributes set (xfs:xfs_attr_sf_add + leaf_add + node_addname), counted by the same perf
    stat and in the same window as `attribute_spills`, the whole those are a part of (null: not
    counted, in recordings made before it was; the statistics' attr.set, read a few
    milliseconds apart from the tracepoints, is then the whole)."""
    attribute_leaf_to_node: int = Field(default=0, ge=0)
    """Attribute forks grown past one leaf block (xfs:xfs_attr_leaf_to_node)."""
    attribute_files: int = Field(default=0, ge=0)
    """Files that got attributes in the first `writer_seconds` (recorded attribute sets)."""
    attribute_bytes_per_file: int | None = None
    """Name and value bytes those files got, the median over them (null: none recorded)."""
    largest_attribute_value: int | None = None
    """The longest attribute value set then, in bytes (null: none recorded)."""
    largest_directory_entries_at_least: int | None = None
    """Entries the largest directory seen growing had at least, from the form it reached and
    the directory block size (a lower bound; null: no form that implies one)."""


class LogSpaceWaits(Model):
    """The waits for log space timed over the first `writer_seconds`: each from the thread's
    xfs:xfs_log_grant_sleep to its xfs:xfs_log_grant_wake, every one recorded."""

    waits: int = Field(ge=0)
    """Waits that began and ended then."""
    unfinished: int = Field(default=0, ge=0)
    """Threads still asleep for log space when the record ended (not timed)."""
    seconds: float = Field(ge=0)
    """The time those waits took, added up over the threads (two threads waiting 1 s at once
    count 2 s)."""
    longest: float = Field(ge=0)
    """The longest single wait, in seconds."""
    over_seconds: float = Field(gt=0)
    """The time recorded (the first `writer_seconds` of the observation)."""


class Geometry(Model):
    """The filesystem's layout as xfs_info reports it, for the findings."""

    block_size: int = Field(gt=0)
    """Data block size in bytes."""
    agcount: int = Field(gt=0)
    """Allocation groups."""
    inode_size: int = Field(gt=0)
    """Inode size in bytes."""
    directory_block_size: int = Field(gt=0)
    """Directory block size in bytes (-n size)."""
    log_bytes: int = Field(gt=0)
    """Log size in bytes."""
    crc: bool = True
    """V5 (CRC) metadata: its inode core is 176 bytes, a V4 one 100."""
    log_stripe_unit_bytes: int = Field(ge=0)
    """Log stripe unit in bytes (0: none)."""
    external_log: bool = False
    """The log is on a device of its own."""
    logbsize: int | None = None
    """The logbsize mount option in bytes, when the mount sets one (else the kernel's default)."""


class Finding(Model):
    """A figure related to the geometry and to a rule of the guide."""

    rule: str
    """The rule it concerns (see `xfs-advisor explain RULE`)."""
    message: str
    """What was seen and what the rule says about it."""
    evidence: list[Evidence]
    """The counters behind it."""


class Tracing(Model):
    """Whether the kernel's xfs tracepoints were counted, and what their absence costs."""

    method: Literal["perf-stat", "none"]
    """perf-stat: counted in the kernel by `perf stat -e xfs:...`, nothing streamed; none: the
    counters alone."""
    reason: str | None = None
    """Why tracepoints were not counted (perf missing, no permission...)."""
    findings_not_made: list[str] = Field(default_factory=list)
    """What cannot be told without them."""


class ObservedFilesystem(Model):
    """One XFS filesystem watched for the interval."""

    mountpoint: str
    """Where it is mounted (untrusted text)."""
    device: str
    """Its kernel device name (/sys/fs/xfs/NAME)."""
    maj_min: str
    """Its block device number."""
    geometry: Geometry | None = None
    """The layout (null when xfs_info could not read it)."""
    seconds: float = Field(gt=0)
    """Length of the observation."""
    rates: list[Rate] = Field(default_factory=list)
    """Per-second figures with their evidence."""
    counters: dict[str, int] = Field(default_factory=dict)
    """Every per-mount XFS counter that moved, by `line.field`, with its delta."""
    writers: list[Writer] = Field(default_factory=list)
    """Threads that allocated transactions, most first (tracepoints only)."""
    writer_seconds: float | None = None
    """Seconds, from the start, over which transactions were recorded per thread (at most 10:
    each sample is a record); null without tracepoints."""
    writer_period: int = Field(default=1, ge=1)
    """What a thread's recorded transactions were multiplied by: with `writer_slice_ms`, the
    seconds recorded over those sliced; without, one transaction in this many was recorded, on
    each CPU (1: every one)."""
    writer_slice_ms: int | None = None
    """Every transaction was recorded over the first this many milliseconds of each second
    (null: throughout, sampled one in `writer_period`, as recordings made before slices)."""
    concurrent_writers: int | None = None
    """User threads changing metadata at once: the median, over the seconds of the first
    `writer_seconds` with any transaction, of the threads that allocated one in that second
    (in its first `writer_slice_ms` when sliced; null without tracepoints)."""
    forms: Forms | None = None
    """Directory and attribute forms reached (null without tracepoints)."""
    allocations_per_ag: list[int] | None = None
    """Extents allocated from each AG over the interval, AG 0 first, adding up to the
    statistics' count (extent_alloc): with `allocations_recorded`, estimated, each AG's share
    of the allocations recorded with the writers (xfs:xfs_alloc_vextent_finish, over the same
    slices of the first `writer_seconds`); without, counted exactly per AG (recordings that
    counted the event under each `agno == N`). Null without tracepoints, or when no allocation
    was recorded."""
    allocations_recorded: int | None = None
    """The allocations the split of `allocations_per_ag` was estimated from (null: counted,
    not estimated)."""
    log_space_waits: LogSpaceWaits | None = None
    """The waits for log space timed (null without tracepoints, or in recordings made before
    they were timed)."""
    ag_header_locks: int | None = None
    """Locks taken on the AGs' headers (AGF and AGI buffers: xfs:xfs_buf_lock counted on their
    addresses; null when not counted: over 32 AGs, without tracepoints, older recordings)."""
    ag_header_locks_waited: int | None = None
    """Those of `ag_header_locks` that found the header held by another thread (the buffer's
    lock count 0), so waited for it; how long is not timed."""
    findings: list[Finding] = Field(default_factory=list)
    """What the figures say about the geometry."""


class ObservedAnswers(WorkloadAnswers):
    """The workload answers measured, null when not measured (merged into a workload file by
    --write-workload, marked "measured by xfs-advisor observe")."""

    lower_bounds: ClassVar[frozenset[str]] = frozenset({"largest_directory_entries"})

    fsyncs_per_second: float | None = None
    """fsync and fdatasync calls per second (tracepoints xfs_file_fsync + xfs_dir_fsync)."""
    concurrent_writers: int | None = None
    """User threads changing metadata at once (see the filesystem's `concurrent_writers`)."""
    writer_activity: WriterActivity | None = None
    """metadata (creates, removes, attribute sets), data (writes) or both."""
    xattr_bytes_per_file: int | None = None
    """Attribute name and value bytes per file that got attributes (the median; recorded
    xfs_attr_sf_add / leaf_add / node_addname)."""
    largest_xattr_value: int | None = None
    """The longest attribute value seen set, in bytes."""
    largest_directory_entries: int | None = None
    """A lower bound on the largest directory's entries, from the form it reached (node, leaf)
    and the directory block size: it had at least this many."""


class ObserveDocument(Model):
    """What `xfs-advisor observe --json` prints."""

    schema_version: int = SCHEMA_VERSION
    """Version of this document's shape; bumped only on an incompatible change."""
    started: str
    """UTC start of the observation (ISO 8601)."""
    seconds: float = Field(gt=0)
    """Length of the observation."""
    tracing: Tracing
    """Tracepoint access and its consequences."""
    filesystems: list[ObservedFilesystem]
    """One entry per filesystem watched."""
    answers: ObservedAnswers
    """Workload answers measured (from the busiest filesystem when several were watched)."""
    cost: str = ""
    """What watching this way costs the workload, as measured for this version
    (scripts/bench_observe.py), and whether the goal of under 2% is met."""


class RecordedReading(Model):
    """Both counter files of one filesystem at one moment, parsed."""

    xfs: dict[str, int]
    """The per-mount XFS statistics, by `line.field`."""
    block: dict[str, int]
    """The block device's statistics, by field."""
    at: float
    """Monotonic seconds when read (only differences mean anything)."""
    wall: float
    """UTC seconds since the epoch when read."""


class RecordedThread(Model):
    """A thread recorded allocating transactions."""

    command: str
    """Its command name (untrusted text)."""
    tid: int = Field(ge=0)
    """Its thread id."""
    transactions: int = Field(ge=0)
    """Transactions recorded (in the recording's slices, or one in its `writer_period`)."""
    kernel_thread: bool
    """A kernel thread (PF_KTHREAD), as /proc said at the time."""


class RecordedFilesystem(Model):
    """What was read from one filesystem: every figure of the report is derived from this."""

    mountpoint: str
    """Where it was mounted."""
    device: str
    """Its kernel device name."""
    maj_min: str = Field(pattern=r"^\d+:\d+$")
    """Its block device number."""
    mount_options: str = ""
    """Its filesystem options from mountinfo (logbsize...)."""
    xfs_info: str | None = None
    """What xfs_info printed (null when it failed)."""
    before: RecordedReading
    """The counters at the start."""
    after: RecordedReading
    """The counters at the end."""
    tracepoints: dict[str, int] | None = None
    """Tracepoint counts (null without tracepoints)."""
    threads: list[RecordedThread] | None = None
    """Threads that allocated transactions (null without tracepoints)."""
    writer_seconds: float | None = None
    """Seconds over which threads were recorded."""
    writer_period: int = Field(default=1, ge=1)
    """What a thread's recorded transactions are multiplied by: with `writer_slice_ms`, the
    seconds recorded over those sliced; without, one transaction in this many was recorded, on
    each CPU (1: every one, as recordings made before sampling have it)."""
    writer_slice_ms: int | None = Field(default=None, ge=1)
    """Every transaction was recorded over the first this many milliseconds of each second
    (null: throughout, as recordings made before slices have it)."""
    writers_per_second: list[int] | None = None
    """User threads that allocated a transaction in each second of that recording."""
    allocations_per_ag: list[int] | None = None
    """Extents allocated from each AG over the whole interval, AG 0 first, counted (null: not
    counted, as recordings that record the allocations with the writers have it)."""
    allocations_recorded_per_ag: list[int] | None = None
    """Extent allocations (xfs:xfs_alloc_vextent_finish) recorded with the writers in each AG,
    AG 0 first: over the same slices of `writer_seconds` (or one in `writer_period` on each
    CPU), the split of the statistics' count (null: not recorded)."""
    attribute_bytes: list[int] | None = None
    """Name and value bytes added per file that got attributes over that time, one number a
    file, sorted (null: not recorded)."""
    largest_attribute_value: int | None = None
    """The longest attribute value set over that time (null: none recorded)."""
    log_space_waits: list[float] | None = None
    """The seconds each wait for log space took over that time, one number a wait, in the order
    they ended (null: not recorded)."""
    log_space_waits_unfinished: int = Field(default=0, ge=0)
    """Threads still asleep for log space when that time ended."""
    ag_header_locks: list[int] | None = Field(default=None, min_length=2, max_length=2)
    """[locks taken on the AGs' headers, those that found the header held] over the whole
    interval (null: not counted)."""


class Recording(Model):
    """What `observe --record FILE` saves and `observe --replay FILE` reads: the raw readings,
    so that a replay derives rates and findings anywhere, with the rules of the replaying
    version."""

    format: Literal["xfs-advisor observe recording"] = "xfs-advisor observe recording"
    """Marks the file for what it is."""
    schema_version: int = SCHEMA_VERSION
    """Version of this document's shape."""
    seconds: float = Field(gt=0)
    """Length of the observation asked for."""
    tracing: Tracing
    """Tracepoint access at the time."""
    filesystems: list[RecordedFilesystem] = Field(min_length=1)
    """One entry per filesystem watched."""
