"""The plan of an A/B validation run, fixed before anything is measured: the two sides, the
workload's shape, the pairs (a minimum, then ABBA blocks up to a most), the wall-time budget the
phases are sized to (before the run's pilot from this machine's defaults, after it from what the
pilot measured), each changed option's primary metric, and every command a side runs. Also the
plan that continues an earlier run's report, once the report's numbers are held to the flags'
bounds."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from advisor.bench import counters, jobs
from advisor.errors import BadInput
from advisor.models.bench import (
    CalibrationUse,
    NotApplied,
    SideConfig,
    ValidationReport,
)
from advisor.models.limits import (
    DEFAULT_BUDGET,
    DEFAULT_LOOP_SIZE,
    DEFAULT_PAIRS,
    MAX_PAIRS,
    MIN_PAIRS,
)
from advisor.models.rule import MechanismClaim
from advisor.models.units import human_size
from advisor.models.workload import Workload
from advisor.system import argv

#: Longest wall-time budget, seconds (a day): the workload is scaled to it.
MAX_BUDGET = 86400.0
MIN_DEVICE_BYTES = 1 << 30
#: Seconds kept back at the end of the budget for the last umount, the loop device's detach and
#: the judging.
TEARDOWN_SECONDS = 3.0
#: Seconds a side costs besides fio's measured time: mkfs, mount, two syncs, the unmount and
#: mount for cold caches, umount, two fio start-ups and fio's ~0.3 s per phase (measured on the
#: loop default at load 10: 4 to 5 s).
SIDE_OVERHEAD = 4.0
METADATA_OVERHEAD = 0.3
#: A side repeats the pilot's steps besides its creates (mkfs, mount, sync, a fio start,
#: umount) about twice over: two fio runs, two syncs, the umount and mount for cold caches.
PILOT_STEPS = 2.0
#: fio's cost per phase beyond its operations (its main loop polls in 100 ms steps).
FIO_PHASE_SECONDS = 0.3
#: Share of the budget left after the pilot that the minimum pairs are sized to when twice as
#: many do not fit: at load 11-15 a block ran over the pilot's estimate often enough that sizing
#: them to all of it stopped the run at 2 pairs, where nothing can be decided.
MIN_PAIRS_SHARE = 0.75
#: The least fio time per side a run is sized for: below it the phases are too short to time.
MIN_MEASURE_SECONDS = 1.0
#: What a run does to the machine outside its own device and folder, said in the plan and kept
#: in the report.
HOST_EFFECTS = ("the host: no system setting is changed and no cache outside the test "
                "filesystem is dropped (cold reads come from unmounting and mounting the test "
                "filesystem); fio uses CPU and the storage under the loop file or the scratch "
                "device while it runs")


def abba_order(pairs: int) -> list[str]:
    """A B B A A B B A ...: each pair's first side alternates, so drift hits both sides alike."""
    order: list[str] = []
    for i in range(pairs):
        order += ["A", "B"] if i % 2 == 0 else ["B", "A"]
    return order


@dataclass(frozen=True)
class Pilot:
    """What the run measured of this machine before its first pair, to size its phases (none
    of it is a sample: the verdicts never see it)."""

    ops_rate: float
    """Creates per second fio reached in the pilot's directory (jobs.PILOT_ENTRIES files)."""
    side_overhead: float
    """Seconds a side is expected to cost besides fio's measured time: PILOT_STEPS times the
    pilot's own time besides its creates, plus FIO_PHASE_SECONDS per phase."""
    spent: float
    """Seconds from the run's start to the pilot's end (set-up and pilot), out of the budget."""


def sized_for(budget: float, pilot: Pilot, planned_pairs: int,
              min_pairs: int) -> tuple[float, int]:
    """fio seconds per side, and the pairs they are sized for, so that the run fits what the
    budget leaves after the pilot and the clean-up: the planned pairs (twice the minimum, so an
    adaptive run has room to go on) if each side then still gets MIN_MEASURE_SECONDS, else the
    minimum pairs in MIN_PAIRS_SHARE of it (a block slower than the pilot foretold must not
    end the run before its first look), else the smallest phases (the budget's cap then ends
    the run early and says so)."""
    left = budget - pilot.spent - TEARDOWN_SECONDS
    shares = {planned_pairs: 1.0}
    shares.setdefault(min_pairs, MIN_PAIRS_SHARE)
    for pairs, share in shares.items():
        per_side = share * left / (2 * pairs)
        measure = (per_side - pilot.side_overhead) / (1 + METADATA_OVERHEAD)
        if measure >= MIN_MEASURE_SECONDS:
            return measure, pairs
    return MIN_MEASURE_SECONDS, min_pairs


@dataclass
class Prior:
    """What an earlier run measured, for a run that continues it."""

    shape: jobs.Shape
    samples: dict[str, dict[str, list[float]]]
    mechanisms: dict[str, dict[str, list[float]]]
    margins: dict[str, float]
    """The margins the earlier run judged with (fractions), kept so the sequence is the same."""
    calibration: CalibrationUse | None
    infos: dict[str, str]
    wall_seconds: float
    measuring_seconds: float
    looks: list[int]

    @property
    def pairs(self) -> int:
        return min((len(v["A"]) for v in self.samples.values()), default=0)


@dataclass
class Plan:
    """Everything decided before the first measurement."""

    a: SideConfig
    b: SideConfig
    workload: Workload
    pairs: int = DEFAULT_PAIRS
    device: str | None = None
    """The scratch device (already through the guard), or None for a loop device."""
    device_bytes: int = DEFAULT_LOOP_SIZE
    loop_dir: str = field(default_factory=lambda: os.environ.get("TMPDIR") or "/var/tmp")
    direct_io: bool = True
    proposed: SideConfig | None = None
    """The proposal as it was shown, when B comes from one (B may leave out `not_applied`)."""
    proposed_for: str | None = None
    """The device that proposal was made for."""
    not_applied: list[NotApplied] = field(default_factory=list)
    """Options of the proposal the scratch device cannot take, and why (advisor.bench.fit)."""
    claims: list[tuple[str, MechanismClaim]] = field(default_factory=list)
    """(rule id, claim): what rules say their options do to the counters, checked after."""
    age: bool = False
    calibrate: bool = False
    destroy_unrecognized: bool = False
    """validate --destroy-unrecognized-data: the scratch device may hold data no signature
    names (advisor.system.blank), and the user said it may be destroyed."""
    budget_seconds: float = DEFAULT_BUDGET
    max_pairs: int | None = None
    """Most pairs the run may add (None: MAX_PAIRS; `pairs`: a fixed design). An A/A calibration
    is always a fixed design of `pairs`: its noise floors are fixed-n figures."""
    prior: Prior | None = None
    """An earlier run's pairs this one continues (Session.more_rounds): same sides, same shape,
    same margins; its samples are kept and the confidence sequence simply goes on."""
    pilot: Pilot | None = None
    """This machine's rate and a side's cost, measured by the run before its first pair: the
    phases are sized from it (before it, from jobs.PLAN_RATE and SIDE_OVERHEAD)."""

    def __post_init__(self) -> None:
        if not MIN_PAIRS <= self.pairs <= MAX_PAIRS:
            raise ValueError(f"{MIN_PAIRS} to {MAX_PAIRS} pairs")
        if not 0 < self.budget_seconds <= MAX_BUDGET:
            raise ValueError(f"a budget of 0 to {MAX_BUDGET:.0f} seconds")
        self.pairs += self.pairs % 2  # whole ABBA blocks
        if self.max_pairs is None:
            self.max_pairs = MAX_PAIRS
        self.max_pairs = min(MAX_PAIRS, self.max_pairs + self.max_pairs % 2)
        if self.calibrate or self.max_pairs < self.pairs:
            self.max_pairs = self.pairs
        # Once, here: every path made under it is then canonical, as mountinfo shows it.
        self.loop_dir = os.path.realpath(self.loop_dir)

    @property
    def most_pairs(self) -> int:
        return self.max_pairs or MAX_PAIRS

    @property
    def fixed(self) -> bool:
        """True when the number of pairs is fixed in advance (no look before the last pair)."""
        return self.most_pairs <= self.pairs

    @property
    def planned_pairs(self) -> int:
        """Pairs the workload is scaled for within the budget: the minimum in half of it (so
        about as many again fit for the adaptive part), or all of it for a fixed design."""
        return self.pairs if self.fixed else min(self.most_pairs, 2 * self.pairs)

    @property
    def run_limit(self) -> int:
        """The most pairs this run has, known before the first: --max-rounds, and for a new
        adaptive run also the pairs its budget was sized for (measure_seconds_per_side), so that
        the progress counts towards a total that never changes."""
        return self.most_pairs if self.prior is not None else min(self.most_pairs,
                                                                   self.planned_pairs)

    @property
    def order(self) -> list[str]:
        return abba_order(self.pairs)

    @property
    def shape(self) -> jobs.Shape:
        if self.prior is not None:
            return self.prior.shape
        return jobs.shape_for(self.workload, measure_seconds=self.measure_seconds_per_side,
                              fs_bytes=self.device_bytes,
                              ops_rate=self.pilot.ops_rate if self.pilot else jobs.PLAN_RATE,
                              floor_yields=self.pilot is not None)

    @property
    def measure_seconds_per_side(self) -> float:
        """fio time per side so that the whole run fits the budget: each side also pays about
        SIDE_OVERHEAD seconds (mkfs, mount, sync, the remount that makes the stat phase
        cold, umount, fio's start-up and its
        ~0.3 s per phase) and fio's per-file set-up of the directory phases (about
        METADATA_OVERHEAD of the measured time). Measured on this machine's loop default;
        once the run's pilot has measured this machine, from that (sized_for)."""
        if self.pilot is not None:
            return sized_for(self.budget_seconds, self.pilot, self.planned_pairs, self.pairs)[0]
        per_side = self.budget_seconds / (2 * self.planned_pairs)
        return max(1.0, (per_side - SIDE_OVERHEAD) / (1 + METADATA_OVERHEAD))

    def commands(self, device: str = "DEV", mountpoint: str = "MNT") -> list[str]:
        """Every command a round runs, as shell lines (printed before anything happens)."""
        lines = []
        if self.device is None:
            lines.append(f"fallocate -l {self.device_bytes} "
                         f"{self.loop_dir}/xfs-advisor-*/scratch.img")
            lines.append(argv.shell_line(argv.losetup_attach("scratch.img",
                                                             direct_io=self.direct_io)))
        if self.prior is None:
            lines.append(f"# pilot, before the first pair: side A's mkfs and mount, "
                         f"{jobs.PILOT_ENTRIES:,} creates by fio, umount: this machine's rate "
                         "and a side's cost size the phases to the budget (no sample kept)")
        for side in (self.a, self.b):
            lines.append(f"# side {side.label} ({side.source})")
            if side is self.b:
                lines += [f"#   not applied: {n.option}: {n.reason}" for n in self.not_applied]
            lines.append(argv.shell_line(argv.mkfs_xfs(device, side.mkfs_options, force=True,
                                                       no_discard=True)))
            mount = argv.shell_line(argv.mount(device, mountpoint, side.mount_options))
            lines.append(mount)
            lines.append(argv.shell_line(argv.sync()))
            lines.append(argv.shell_line(argv.fio("changes.fio")) + "   # directory changes")
            lines.append(argv.shell_line(argv.sync()) + "; "
                         + argv.shell_line(argv.umount(mountpoint)) + "; " + mount
                         + "   # cold caches for the test filesystem only")
            lines.append(argv.shell_line(argv.fio("rest.fio"))
                         + "   # cold stats, then the data phases")
            lines.append(argv.shell_line(argv.xfs_info(mountpoint)))
            lines.append(argv.shell_line(argv.umount(mountpoint)))
        if self.fixed:
            lines.append(f"# {self.pairs} pairs in the order {' '.join(self.order)}")
        else:
            lines.append(f"# at least {self.pairs} pairs in the order {' '.join(self.order)}, "
                         f"then ABBA blocks until every option's primary metric is decided "
                         f"(at most {self.most_pairs} pairs or {self.budget_seconds:.0f} s in "
                         "all)")
        lines.append("# fio runs in a cgroup of its own where the host allows it (a systemd "
                     "scope, or a folder under a cgroup v2 hierarchy that delegates cpu and io), "
                     "with CPU and IO weight 1000; the report says which")
        lines.append(f"# {HOST_EFFECTS}")
        return lines


def loop_room(folder: str, wanted: int) -> int:
    """The largest loop device (whole GiB, at most `wanted` bytes) whose backing file fits in
    `folder`'s filesystem with its headroom to spare (advisor.commands.validate's check)."""
    try:
        free, headroom = free_bytes(existing_folder(folder))
    except OSError:
        return 0
    return max(0, min(wanted, free - headroom)) >> 30 << 30


@dataclass(frozen=True)
class Primary:
    """An option of B and the figure pre-declared to decide it (its mechanism)."""

    option: str
    """B's option (`logbsize=256k`, `-d agcount=8`), or `B = A` for a run without any."""
    name: str
    """A counter (advisor.bench.counters) or a timing metric (advisor.bench.jobs)."""
    rule: str | None = None
    """The rule whose claim names the counter (None: the fallback, CPU time per operation)."""


#: The primary metric of an option no rule names a counter for: directory changes per
#: CPU-second of fio's threads (CPU time per directory operation), which other processes' load
#: moves far less than wall-clock rates (creates per CPU-second: 1.001, CV 2.4%, with two busy
#: loops on one side only, where the wall-clock fsync rate fell to 0.215).
FALLBACK_PRIMARY = "dirops_per_cpu_s"


def primaries(plan: Plan) -> list[Primary]:
    """Per option of B that A lacks (su and sw as one): the counter its rule's claim names,
    else FALLBACK_PRIMARY; one `B = A` entry when nothing differs. Decided before any pair, from
    the plan alone."""
    from advisor.models.differences import options

    found = []
    for o in options(plan.a, plan.b):
        claims = counters.closest_claims(plan.claims, o.label)
        if claims:
            found += [Primary(o.label, c.counter, rule) for rule, c in claims[:1]]
        else:
            found.append(Primary(o.label, FALLBACK_PRIMARY))
    return found or [Primary("B = A", FALLBACK_PRIMARY)]


def suggested_more(report: ValidationReport) -> int:
    """Pairs to add to a finished run: what the report says would likely resolve its open
    metrics (the most of them), else as many again as ran; whole ABBA blocks, within
    MAX_PAIRS."""
    wanted = [m.rounds_to_resolve - report.rounds
              for m in [*report.metrics, *report.mechanisms]
              if m.verdict == "inconclusive" and m.rounds_to_resolve]
    more = max(wanted, default=report.rounds)
    more = max(2, more + more % 2)
    return min(more, MAX_PAIRS - report.rounds)


def existing_folder(folder: str) -> str:
    """`folder`, or its nearest ancestor that exists (what a missing folder will be made in)."""
    path = os.path.abspath(folder)
    while not os.path.lexists(path) and path != os.path.dirname(path):
        path = os.path.dirname(path)
    return path


def folder_problem(folder: str) -> tuple[str, str | None]:
    """The directory `folder` is, or would be made in (existing_folder), and why nothing can be
    written there ("is not a directory", "is not writable"; None: it can)."""
    existing = existing_folder(folder)
    if not os.path.isdir(existing):
        return existing, "is not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):  # also false on a read-only filesystem
        return existing, "is not writable"
    return existing, None


def writable_folder(what: str, folder: str) -> str:
    """The run makes its work folder (and `folder` itself, when missing) there: it must be, or
    be made in, a writable directory. Returns the directory that exists."""
    existing, problem = folder_problem(folder)
    if problem is not None:
        raise BadInput(f"{what} {folder}: {existing} {problem}")
    return existing


def free_bytes(folder: str) -> tuple[int, int]:
    """Free bytes for us in `folder`'s filesystem, and what must stay free besides the backing
    file: 1GiB or 5% of the filesystem (other programs and the run's own files share it)."""
    st = os.statvfs(folder)
    return st.f_bavail * st.f_frsize, max(1 << 30, st.f_blocks * st.f_frsize // 20)


def check_report(source: str, report: ValidationReport, loop_dir: str) -> None:
    """A report to continue is input like a flag (a file from anywhere: `--continue FILE`, or
    the TUI's last run): every number the run would act on is held to the bounds the flags have
    (the loop size to the loop folder's free space, the writers to MAX_WRITERS, the budget to
    MAX_BUDGET...), before anything is made. BadInput names `source` and the field."""
    def bad(field: str, why: str) -> BadInput:
        return BadInput(f"{source}: {field} {why}: not a report `validate --json` writes (run "
                        "validate again)")

    size = report.environment.device_size_bytes
    if not MIN_DEVICE_BYTES <= size <= 1 << 60:
        raise bad("environment.device_size_bytes", f"{size} is not a loop size --loop-size takes")
    existing = writable_folder("--loop-dir (or TMPDIR)", loop_dir)
    free, headroom = free_bytes(existing)
    if free < size + headroom:
        raise BadInput(f"{loop_dir} has {human_size(free)} free: the report's "
                       f"{human_size(size)} backing file needs that much plus "
                       f"{human_size(headroom)} to spare (use another --loop-dir)")
    stopping = report.stopping
    if stopping is not None and not 0 < stopping.budget_seconds <= MAX_BUDGET:
        raise bad("stopping.budget_seconds", f"must be more than 0 and at most "
                  f"{MAX_BUDGET:.0f}")
    _check_shape(report.workload, size, bad)


def _check_shape(shape: dict[str, object], size: int, bad: Callable[[str, str], BadInput]) -> None:
    """check_report's part for the workload's shape: each field a bound of its own, the sizes
    within the `size` bytes device."""
    whole = _shape_kinds(shape, bad)
    entries = whole["directory_entries"]
    # The most entries a run could be sized for: the whole largest budget spent on the directory.
    most = int(MAX_BUDGET * jobs.PILOT_RATES[1] / jobs.OPS_PER_ENTRY)
    if not jobs.MIN_DIRECTORY_ENTRIES <= entries <= most or entries % 10:
        raise bad("workload.directory_entries", f"must be a multiple of 10 from "
                  f"{jobs.MIN_DIRECTORY_ENTRIES} to {most}")
    if whole["churn_entries"] != entries // 10:
        raise bad("workload.churn_entries", "must be a tenth of directory_entries")
    if whole["writers"] > jobs.MAX_WRITERS:
        raise bad("workload.writers", f"must be 1 to {jobs.MAX_WRITERS}")
    for key in ("write_file_bytes", "read_file_bytes"):
        if whole[key] > size:
            raise bad(f"workload.{key}", f"must fit the {human_size(size)} device")


def _shape_kinds(shape: dict[str, object], bad: Callable[[str, str], BadInput]) -> dict[str, int]:
    """The shape's fields of the kind this version writes; its whole-number fields."""
    ints = ("directory_entries", "churn_entries", "writers", "write_file_bytes",
            "read_file_bytes")
    whole: dict[str, int] = {}
    for key in ints:
        value = shape.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise bad(f"workload.{key}", "must be a whole number of at least 1")
        whole[key] = value
    for key in ("fsync_phase", "sequential_phases"):
        if type(shape.get(key)) is not bool:
            raise bad(f"workload.{key}", "must be true or false")
    asked = shape.get("directory_entries_asked")
    if asked is not None and (type(asked) is not int or not 0 <= asked <= 10**12):
        raise bad("workload.directory_entries_asked", "must be null or 0 to 10^12")
    phase = shape.get("phase_seconds")
    if type(phase) not in (int, float) or not isinstance(phase, int | float) \
            or not 0.5 <= float(phase) <= MAX_BUDGET:  # nan too
        raise bad("workload.phase_seconds", f"must be 0.5 to {MAX_BUDGET:.0f}")
    return whole


def continuation(report: ValidationReport, pairs: int | None = None, *,
                 budget_seconds: float | None = None, loop_dir: str | None = None,
                 source: str = "the report") -> Plan:
    """The plan that continues `report` (a finished loop-device run) with up to `pairs` more
    pairs (default suggested_more) in whole ABBA blocks: same sides, shape, margins and
    calibration; the earlier samples kept. BadInput for a run that cannot be continued, or for
    a report whose numbers the flags would not allow (check_report; `source` names it)."""
    if report.calibrate:
        raise BadInput("an A/A calibration is a fixed design: run `validate --calibrate` again "
                       "rather than continuing it")
    if report.environment.loop_backing_file is None:
        raise BadInput("more rounds continue a run on the loop device; on a scratch device, run "
                       "validate again with a larger --rounds or --max-rounds")
    done = report.rounds
    if done % 2 or done < 2 or any(len(m.a) != done or len(m.b) != done
                                           for m in report.metrics):
        raise BadInput(f"the report's {done} pairs are not whole ABBA blocks with a sample per "
                       "pair and side: it cannot be continued")
    if done >= MAX_PAIRS:
        raise BadInput(f"the run already has {MAX_PAIRS} pairs, the most a run may have")
    if pairs is not None and pairs < 1:
        raise BadInput("more rounds: at least 1 pair (rounded up to an ABBA block of 2)")
    try:
        shape = jobs.Shape(**report.workload)  # type: ignore[arg-type]
    except TypeError:
        raise BadInput("the report's workload shape is not this version's: run validate "
                       "again") from None
    check_report(source, report, loop_dir or os.environ.get("TMPDIR") or "/var/tmp")
    more = suggested_more(report) if pairs is None else pairs + pairs % 2
    prior = Prior(
        shape=shape,
        samples={m.name: {"A": list(m.a), "B": list(m.b)} for m in report.metrics},
        mechanisms={m.name: {"A": list(m.a), "B": list(m.b)} for m in report.mechanisms},
        margins={m.name: m.margin for m in report.metrics},
        calibration=report.calibration,
        infos={k: v for k, v in (("A", report.a.xfs_info), ("B", report.b.xfs_info)) if v},
        wall_seconds=report.timing.wall_seconds,
        measuring_seconds=report.timing.measuring_seconds,
        looks=list(report.stopping.looks) if report.stopping else [done])
    stopping = report.stopping
    budget = budget_seconds or (stopping.budget_seconds if stopping else DEFAULT_BUDGET)
    plan = Plan(a=report.a.model_copy(update={"xfs_info": None}),
                b=report.b.model_copy(update={"xfs_info": None}), workload=Workload(),
                pairs=max(done, MIN_PAIRS), max_pairs=min(MAX_PAIRS, done + more),
                device_bytes=report.environment.device_size_bytes,
                direct_io=report.environment.direct_io is not False,
                proposed=report.proposed, proposed_for=report.proposed_for,
                not_applied=list(report.not_applied), age=report.age is not None,
                budget_seconds=budget, prior=prior)
    if loop_dir:
        plan.loop_dir = os.path.realpath(loop_dir)
    return plan
