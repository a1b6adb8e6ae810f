"""The A/B validation run: its two configurations, per-metric samples and verdicts, where it ran,
and the calibration (noise floor) that later runs' margins rest on.

`ValidationReport` is the `validate --json` contract (schema_version 2)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from advisor.models.base import Model
from advisor.models.limits import MAX_PAIRS

Verdict = Literal["better", "worse", "equivalent", "inconclusive"]

#: Largest noise floor a calibration file may hold (1000%): an A/A run that cannot tell a tenfold
#: difference from nothing measured nothing; a bigger number is a corrupt or hand-made file.
MAX_STORED_FLOOR = 10.0
#: Largest standard deviation of a pair's log-ratio a calibration file may hold (e^10 per pair).
MAX_STORED_SD = 10.0
#: Most pairs a calibration can have been measured with (validate runs at most MAX_PAIRS).
MAX_STORED_ROUNDS = 10_000


@dataclass(frozen=True)
class Metric:
    """One figure the benchmark measures on each side of each pair."""

    name: str
    title: str
    unit: str
    higher_is_better: bool
    job: str
    """fio job name prefix whose jobs this metric sums."""
    kind: str
    """`iops`, `iops_per_cpu` (iops over the job's CPU share), `dirops_per_cpu` (the operations
    of the directory phases over their CPU seconds) or `bw`."""


#: The benchmark's metrics: what each is called, its title and unit for people, and which fio
#: jobs it sums (advisor.bench.jobs reads them from fio's output; the TUI's live plots name them
#: before the report).
METRICS: tuple[Metric, ...] = (
    Metric("creates_per_s", "creates into a growing directory", "files/s", True,
           "create", "iops"),
    # The same creates per second of CPU the creating thread used: a create-heavy phase is
    # CPU-bound, and this stays meaningful when other processes compete for the CPU.
    Metric("creates_per_cpu_s", "file creates per CPU-second", "files/cpu-s", True, "create",
           "iops_per_cpu"),
    # Every directory change (creates, deletes, creates into the holes) per CPU-second of fio's
    # threads: the CPU cost per modification the guide weighs against larger directory blocks,
    # over all three phases (64 KiB blocks: refill creates cost about twice the CPU).
    Metric("dirops_per_cpu_s", "dir changes per CPU-second", "ops/cpu-s", True,
           "create", "dirops_per_cpu"),
    Metric("deletes_per_s", "deletes, every tenth file", "files/s", True, "delete", "iops"),
    # The steady state of a spool or cache: new files fill the holes deletes left.
    Metric("refill_creates_per_s", "creates into the holes left", "files/s", True, "refill",
           "iops"),
    Metric("stats_per_s", "cold stats of those new files", "files/s", True, "stat", "iops"),
    Metric("fsync_writes_per_s", "4 KiB writes, fsync after each", "writes/s", True,
           "syncwrite", "iops"),
    Metric("seq_write_mib_s", "sequential 1 MiB direct writes", "MiB/s", True, "seqwrite", "bw"),
    Metric("seq_read_mib_s", "sequential 1 MiB direct reads", "MiB/s", True, "seqread", "bw"),
)


def geometric_mean(values: Sequence[float]) -> float:
    """The per-side figure that agrees with the paired ratio: geo(B) / geo(A) is the geometric
    mean of the pairs' B/A (an arithmetic mean or median per side can disagree with it); NaN
    without samples or with one that is not positive."""
    if not values or any(v <= 0 for v in values):
        return math.nan
    return math.exp(sum(math.log(v) for v in values) / len(values))


class SideConfig(Model):
    """One side of the comparison: how the filesystem is made and mounted."""

    label: Literal["A", "B"]
    """A is mkfs.xfs and mount defaults; B is the proposal (or the options given)."""
    mkfs_options: list[str] = Field(default_factory=list)
    """mkfs.xfs options, without -f -K and the device."""
    mount_options: list[str] = Field(default_factory=list)
    """Mount options (empty: defaults)."""
    source: str = "defaults"
    """Where the options come from: `defaults`, `proposal`, `--mkfs-options`, or
    `calibration (B = A)`."""
    xfs_info: str | None = None
    """xfs_info of the first filesystem made for this side: proof that the options took effect."""


class NotApplied(Model):
    """An option of the proposal that could not run on the scratch device, and why."""

    option: str
    """As proposed, e.g. `-d agsize=80g`."""
    reason: str
    """What mkfs.xfs said when it was tried on a stand-in of the scratch device's size."""


class MechanismCheck(Model):
    """A rule's claim about what its option does, against the counters of this run."""

    option: str
    """B's option the claim is about (as B ran it)."""
    rule: str
    """The rule that makes the claim."""
    counter: str
    """The work-per-operation figure (a name in `mechanisms`)."""
    expect: Literal["less", "more"]
    seen: Literal["seen", "not seen", "opposite", "not measured"]
    """`seen`: the interval of B/A lies wholly on the claimed side of 1; `opposite`: wholly on
    the other; `not seen`: it straddles 1; `not measured`: the counter has no figure here."""
    ratio: float | None = None
    ci: list[float] | None = None


class CalibrationUse(Model):
    """Where this run's margins came from: shown with the result, since a stored calibration
    (shared by every later run on the machine) decides them."""

    source: Literal["measured", "default", "ignored", "this run"]
    """`measured`: an A/A run's noise floors were used; `default`: none stored for this kind of
    device; `ignored`: one is stored but was not used (`why`); `this run`: an A/A run, which
    measures them."""
    device_key: str
    """The kind of device the floors are for."""
    file: str | None = None
    """The calibration file read."""
    measured_at: str | None = None
    """When the floors used (or ignored) were measured (UTC, ISO 8601)."""
    age_days: float | None = None
    """How old they were at this run."""
    pairs: int | None = None
    """Pairs the A/A run had (the fewest over its metrics)."""
    measured_with: dict[str, str | None] = Field(default_factory=dict)
    """Kernel, xfsprogs and fio of the A/A run (empty for files written before this was kept)."""
    why: str | None = None
    """For `ignored`: why (another kernel or tool version, or older than the limit)."""
    summary: str
    """One line for people."""


class MetricResult(Model):
    """One measured quantity, its samples per side (one per round) and the verdict on B/A."""

    name: str
    """Stable identifier, e.g. `creates_per_s`."""
    title: str
    """What was measured, for people."""
    unit: str
    """Unit of the samples, e.g. `ops/s`, `MiB/s`."""
    higher_is_better: bool
    """True for rates and throughput, false for latencies."""
    a: list[float]
    """Samples of side A, in round order."""
    b: list[float]
    """Samples of side B, in round order (paired with `a`)."""
    ratio: float
    """Geometric mean of B/A over the pairs (= geo_mean_b / geo_mean_a)."""
    geo_mean_a: float | None = None
    """Geometric mean of A's samples: the per-side figure that agrees with `ratio`."""
    geo_mean_b: float | None = None
    """Geometric mean of B's samples."""
    ci: list[float]
    """Confidence interval of the ratio B/A, [low, high]: the running intersection of the
    anytime-valid confidence sequence over the pairs that ran, valid however the run decided when
    to stop; at 95% for a primary metric, and for the secondary metrics of its kind together
    (alpha split evenly over them)."""
    margin: float
    """Practical margin as a fraction (0.05 = 5%): never below the calibrated noise floor."""
    noise: float
    """Standard deviation of one pair's log-ratio (about the relative noise of one round)."""
    verdict: Verdict
    """better / worse (the interval excludes B/A = 1), equivalent (wholly inside +-margin) or
    inconclusive."""
    # A description built rather than a docstring: it gives MAX_PAIRS' value, written once.
    rounds_to_resolve: int | None = Field(None, description=(
        "For an inconclusive metric: pairs in all that would likely resolve it, from the spread\n"
        "the interval itself uses (never less than the median absolute deviation's) and an "
        "effect\ntaken pessimistically from the mean and the median (null: more than "
        f"{MAX_PAIRS})."))
    primary_for: list[str] = Field(default_factory=list)
    """The options of B this figure is the pre-declared primary metric of (their mechanism, from
    the rule; CPU time per directory operation for an option no rule claims a counter for),
    tested at the full 95% on its own; empty for a secondary figure."""
    decided_after: int | None = None
    """The fewest pairs after which the running interval gave the verdict (null: inconclusive)."""
    still_possible: list[Verdict] = Field(default_factory=list)
    """For an inconclusive metric: the verdicts its interval still allows (e.g. worse or
    equivalent)."""
    calibrated_floor: float | None = None
    """The noise floor the calibration file holds for this metric, as a fraction (null: none
    stored, or an A/A run, which measures it)."""
    margin_capped: bool = False
    """True when `calibrated_floor` was above the largest margin (50%) and `margin` was capped
    there: the set-up was too noisy to trust its floor; calibrate again on a quieter machine."""

    def geo(self, side: Literal["A", "B"]) -> float:
        """The side's geometric mean: the report's, or computed from the samples (an older
        report lacks it; NaN without samples)."""
        value = self.geo_mean_a if side == "A" else self.geo_mean_b
        return value if value is not None else geometric_mean(self.a if side == "A" else self.b)


StopReason = Literal["resolved", "budget", "max rounds", "cancelled"]


class Stopping(Model):
    """How many pairs ran and why no more: the adaptive rounds' record."""

    method: str
    """The sequential method the verdicts rest on."""
    alpha: float
    """Family-wise error of the verdicts, at every look together."""
    min_rounds: int
    """Pairs before the first look (--rounds, rounded up to whole ABBA blocks)."""
    max_rounds: int
    """Most pairs the run could have (--max-rounds, or fewer: the pairs the budget was sized
    for; equal to min_rounds: a fixed design)."""
    budget_seconds: float
    """Wall-time budget: no ABBA block was started that would likely overrun it."""
    looks: list[int] = Field(default_factory=list)
    """The pair counts at which the verdicts were looked at (after each ABBA block)."""
    reason: StopReason
    """`resolved`: every primary metric decided; `budget`; `max rounds` (also a fixed design's
    end); `cancelled`: stopped by request."""
    seconds_per_pair: float | None = None
    """Wall time one pair took in this run (the slowest ABBA block's, halved): what the pairs
    still open would cost here."""
    summary: str
    """One line for people."""
    open: list[str] = Field(default_factory=list)
    """What is still unresolved: the verdicts each open figure still allows, and the pairs that
    would likely settle it."""
    continued_from: int | None = None
    """Pairs of an earlier run this one continued (`more rounds`), kept in the samples."""


class AgeReport(Model):
    """Free-space fragmentation reached by --age (identical recipe for both sides)."""

    seed: int
    """Seed of the fragmentation recipe."""
    files_written: int
    """Files written before every other one was deleted."""
    freesp_summary: dict[str, str] = Field(default_factory=dict)
    """`xfs_spaceman -c 'freesp -s'` summary of the first A filesystem aged (extents, blocks,
    average free extent)."""


class Timing(Model):
    """Where the wall time went."""

    wall_seconds: float
    """From the first mkfs to the last umount."""
    measuring_seconds: float
    """Time fio spent in the measured phases."""
    measuring_share: float
    """measuring_seconds / wall_seconds."""
    pilot_creates_per_s: float | None = None
    """Creates per second of the pilot run before the first pair, which sized the directory
    phases (null: a continued run, sized by the run it continues)."""
    pilot_side_overhead: float | None = None
    """Seconds a side was expected to cost besides fio's measured time, from the pilot."""


class BenchEnvironment(Model):
    """Where the run happened: results are only as meaningful as this."""

    kernel: str | None = None
    """Kernel release."""
    xfsprogs: str | None = None
    """mkfs.xfs version."""
    fio: str | None = None
    """fio version."""
    device: str
    """The device formatted for every round (a loop device in the embedded default)."""
    device_size_bytes: int
    """Its size."""
    loop_backing_file: str | None = None
    """For the embedded default: the preallocated file behind the loop device."""
    direct_io: bool | None = None
    """Loop device in direct-I/O mode (bypasses the page cache of the backing file)."""
    cpu_count: int | None = None
    """Online CPUs."""
    load_average: list[float] = Field(default_factory=list)
    """The machine's 1-minute load average at the start of the run, the highest seen after an
    ABBA block, and at the end (other work makes noise; the verdicts hold anyway)."""
    host_effects: str | None = None
    """What the run did to the host outside its own device (said in the plan too)."""
    isolation: str | None = None
    """Where fio ran: a systemd scope or a cgroup v2 folder of its own with CPU and IO weight
    1000, or without one and why (null: a report from before this was kept)."""
    note: str | None = None
    """What the numbers mean (e.g. that a loop device measures its backing storage)."""


class OptionEffect(Model):
    """What one option alone (on top of A) did to one figure."""

    option: str
    """The option, as B had it (`-d agcount=8`, `noatime`)."""
    ratio: float | None = None
    """B/A of the run with only this option on B (null: the figure was not measured there)."""
    ci: list[float] | None = None
    """Its 95% interval."""
    verdict: Verdict | None = None
    """That run's verdict on the figure (null: not measured)."""


class AttributionFinding(Model):
    """One figure (a timing metric or a counter) and which option moved it."""

    name: str
    """The metric's or counter's name (as in `metrics` or `mechanisms`)."""
    title: str
    """What it measures, for people."""
    kind: Literal["timing", "counter"]
    """`timing`: a performance metric; `counter`: work per operation."""
    combined_verdict: Verdict | None = None
    """The verdict of the run with all of B's options (null: attribution ran on its own)."""
    effects: list[OptionEffect] = Field(default_factory=list)
    """One per option, in B's order."""
    moved_by: list[str] = Field(default_factory=list)
    """Options whose run alone found the figure better or worse (beyond the margin)."""
    summary: str
    """One line: which option moved it, or that the runs cannot tell."""


class OptionRun(Model):
    """The A/B run of one option alone on top of A."""

    option: str
    """The option."""
    b: SideConfig
    """Side B of that run: A plus the option."""
    verdict: Verdict
    """That run's overall verdict."""
    metrics: list[MetricResult] = Field(default_factory=list)
    """Its timing metrics."""
    mechanisms: list[MetricResult] = Field(default_factory=list)
    """Its counters."""
    mechanism_checks: list[MechanismCheck] = Field(default_factory=list)
    """The option's rule claims, checked in that run."""
    wall_seconds: float
    """Its wall time."""


class Attribution(Model):
    """`validate --attribute`: which of B's options moved which figure."""

    design: str
    """How the option runs were laid out, for people."""
    options: list[str]
    """B's options that differ from A (su and sw count as one)."""
    runs: list[OptionRun] = Field(default_factory=list)
    """One A/B run per option (A against A plus that option), each with the run's pairs."""
    findings: list[AttributionFinding] = Field(default_factory=list)
    """Per timing metric and counter: what each option alone did to it."""
    wall_seconds: float
    """The option runs' wall time together."""


class ValidationReport(Model):
    """The result of `xfs-advisor validate`."""

    schema_version: int = 2
    """Version of this document's shape."""
    a: SideConfig
    """Side A (defaults)."""
    b: SideConfig
    """Side B as it ran (proposal, given options, or A again under --calibrate)."""
    proposed: SideConfig | None = None
    """The proposal as it was shown (null when B was given as options or is A again); `b`
    differs from it only by `not_applied`."""
    proposed_for: str | None = None
    """The device the proposal was made for (the scratch device itself, or `--for DEV`)."""
    not_applied: list[NotApplied] = Field(default_factory=list)
    """Options of the proposal that could not run on the scratch device, and why."""
    calibration: CalibrationUse | None = None
    """Where the margins came from (null only in reports of older versions)."""
    calibrate: bool = False
    """True for an A/A run that measures the noise floor."""
    rounds: int
    """Pairs of rounds (ABBA order) that ran: at least --rounds, then whole ABBA blocks until
    the stopping rule ended the run (`stopping`)."""
    stopping: Stopping | None = None
    """Why the run stopped where it did, and what is still open (null in reports of schema 1)."""
    order: list[str]
    """The order sides ran in, e.g. A B B A A B..."""
    workload: dict[str, object] = Field(default_factory=dict)
    """The fio workload shape derived from the answers (file counts, writers, sizes, seconds)."""
    measured_answers: dict[str, str] = Field(default_factory=dict)
    """Answers of the workload file that a command measured rather than a person gave: answer
    -> `observe` or `profile` (from the file's `# measured by xfs-advisor ...` marks)."""
    metrics: list[MetricResult]
    """One entry per metric."""
    mechanism_checks: list[MechanismCheck] = Field(default_factory=list)
    """For each option of B a rule says something measurable about: seen or not."""
    mechanisms_not_shown: list[str] = Field(default_factory=list)
    """Counter figures that could not be judged, and why (e.g. a device that reports no cache
    flushes: zero in some round)."""
    mechanisms: list[MetricResult] = Field(default_factory=list)
    """Work per operation, from XFS's per-mount and the block layer's counters (log writes and
    KiB per 1,000 creates; log writes, device writes and cache flushes per fsync): lower is less
    work. Judged on their own, with the same statistics; they show whether an option did what
    its rule says (e.g. logbsize=256k: fewer log writes), and a changed option's primary one
    leads the verdict."""
    verdict: Verdict
    """The run's one word, the changed options' primary metrics leading: worse if a timing
    metric is shown worse or a primary counter moved against its rule's claim (exit code 5);
    better if every changed option's primary metric is decided the way the option is meant to
    move it and nothing is shown worse; equivalent if every figure is; inconclusive otherwise.
    An A/A calibration: worse/better if any metric is, as a false difference."""
    summary: str
    """The verdict line: first `mechanism shown for every changed option; throughput: ...`
    (slower on ..., no slowdown beyond X% shown, or inconclusive), then each option's primary
    metric, the throughput figures and the costs the counters found."""
    age: AgeReport | None = None
    """Fragmentation reached by --age."""
    timing: Timing
    """Wall time and the share spent measuring."""
    environment: BenchEnvironment
    """Kernel, tool versions, device."""
    recovered: list[str] = Field(default_factory=list)
    """Leftovers of an earlier run that died, found and removed before this one."""
    calibration_file: str | None = None
    """Where the noise floor was read from (or written to, under --calibrate)."""
    attribution: Attribution | None = None
    """`--attribute`: which of B's options moved which metric and counter (null: not asked, or
    nothing to attribute)."""
    attribution_skipped: str | None = None
    """`--attribute` asked but not run: why (one option only, nothing differed, ...)."""
    device_left: str | None = None
    """After a run on a scratch device given with --device: that it now holds the last round's
    test filesystem, and how to wipe it (null for the loop default, which leaves nothing)."""


class MetricNoise(Model):
    """The noise floor of one metric, measured by an A/A run."""

    floor: float = Field(ge=0, le=MAX_STORED_FLOOR, allow_inf_nan=False)
    """Largest relative difference the A/A run could not tell from nothing (|mean| + half the 95%
    interval), as a fraction (at most 10)."""
    sd: float = Field(ge=0, le=MAX_STORED_SD, allow_inf_nan=False)
    """Standard deviation of one pair's log-ratio."""
    rounds: int = Field(ge=2, le=MAX_STORED_ROUNDS, strict=True)
    """Pairs the A/A run had."""


class Calibration(Model):
    """Stored result of `validate --calibrate`, read by later runs on the same kind of device."""

    schema_version: int = 1
    """Version of this document's shape."""
    device_key: str
    """What was calibrated: `loop:<backing filesystem>` or the device's model and size."""
    measured_at: str
    """UTC timestamp (ISO 8601)."""
    kernel: str | None = None
    """Kernel release of the A/A run (null in files written before it was kept)."""
    xfsprogs: str | None = None
    """mkfs.xfs version of the A/A run."""
    fio: str | None = None
    """fio version of the A/A run."""
    metrics: dict[str, MetricNoise]
    """Noise per metric name."""
