"""One A/B validation run: the plan (fixed before anything is measured), the rounds in ABBA order,
and the report with a verdict per metric.

Each side of each round: `mkfs.xfs -f -K`, mount, (age), sync, fio (the directory changes),
sync, umount and mount again (cold caches for the test filesystem only: nothing of the host's
page cache is dropped and no setting changed), fio (cold stats, data phases), `xfs_info` (first
time per side), umount. Everything created is recorded by advisor.bench.resources and removed on
every path out of here."""

from __future__ import annotations

import contextlib
import math
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from advisor.bench import counters, jobs, stats
from advisor.bench.calibration import CalibrationStore
from advisor.bench.cleanup import Recovery, recover_and_say
from advisor.bench.guard import check_now
from advisor.bench.hold import DeviceHold
from advisor.bench.options import checked_side
from advisor.bench.report import allows
from advisor.bench.resources import Resources, failure
from advisor.errors import BadInput, DeviceProblem, ToolProblem
from advisor.models.bench import (
    MAX_PAIRS,
    AgeReport,
    BenchEnvironment,
    CalibrationUse,
    MechanismCheck,
    MetricResult,
    NotApplied,
    SideConfig,
    Stopping,
    StopReason,
    Timing,
    ValidationReport,
    Verdict,
)
from advisor.models.rule import MechanismClaim
from advisor.models.units import human_size
from advisor.models.workload import Workload
from advisor.signals import terminate_as_interrupt
from advisor.system import argv
from advisor.system.cgroup import Isolation, open_isolation
from advisor.system.loopdev import dev_name
from advisor.system.runner import run, which
from advisor.system.superblock import read_xfs_uuid

#: Fewest pairs before the first look (two ABBA blocks): the confidence sequences are valid at
#: any number of pairs; a primary count with 1-3% noise and a several-fold change is decided at
#: 3 or 4 pairs (a figure B does none of, by an exact rank test, at 4).
MIN_PAIRS = 4
#: Longest wall-time budget, seconds (a day): the workload is scaled to it.
MAX_BUDGET = 86400.0
DEFAULT_PAIRS = 4
DEFAULT_LOOP_SIZE = 4 << 30
MIN_DEVICE_BYTES = 1 << 30
#: Default wall-time budget of a run, seconds, set-up and clean-up included: a cap (no ABBA block
#: is started that would likely overrun it), not the run's length: the adaptive rounds stop as
#: soon as every primary metric (each changed option's mechanism) is decided. The workload is
#: scaled so that the minimum pairs take about half of it.
DEFAULT_BUDGET = 80.0
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
AGE_SEED = 20140501
AGE_FILL = 0.10
REQUIRED_TOOLS = ("mkfs.xfs", "mount", "umount", "losetup", "fio", "xfs_info")

#: Error of the verdicts: each primary metric at ALPHA on its own; the secondary metrics at
#: ALPHA / (their number) each, the timing metrics and the counters as two families.
ALPHA = 0.05
METHOD = ("anytime-valid confidence sequences on the mean log-ratio B/A (Lai 1976; the "
          "sequential t-test of Perez-Ortiz et al. 2024), kept as their running intersection: "
          "each option's pre-declared primary metric at alpha 0.05, the secondary metrics at "
          "0.05 split evenly over them (Bonferroni); direction tested against B/A = 1, the "
          "margin used for 'equivalent' only; valid at every look, whenever the run stops")
#: What a run does to the machine outside its own device and folder, said in the plan and kept
#: in the report.
HOST_EFFECTS = ("the host: no system setting is changed and no cache outside the test "
                "filesystem is dropped (cold reads come from unmounting and mounting the test "
                "filesystem); fio uses CPU and the storage under the loop file or the scratch "
                "device while it runs")

Progress = Callable[[int, int, str], None]
#: `on_sample(side, round_index, values)`: one side's metric values of one round (round_index
#: counts pairs from 0), called as soon as that side's fio output has been read.
Sample = Callable[[str, int, dict[str, float]], None]


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
    path = os.path.abspath(folder)
    while not os.path.lexists(path) and path != os.path.dirname(path):
        path = os.path.dirname(path)
    try:
        st = os.statvfs(path)
    except OSError:
        return 0
    free = st.f_bavail * st.f_frsize
    headroom = max(1 << 30, st.f_blocks * st.f_frsize // 20)
    return max(0, min(wanted, free - headroom)) >> 30 << 30


def check_host(*, need_loop: bool) -> None:
    """One clear error before anything is made: tools present, root."""
    for tool in REQUIRED_TOOLS:
        if tool == "losetup" and not need_loop:
            continue
        if which(tool) is None:
            raise ToolProblem(f"{tool} not found: install it (Debian: apt-get install "
                              f"{'fio' if tool == 'fio' else 'xfsprogs util-linux procps'})")
    if os.geteuid() != 0:
        raise DeviceProblem(
            "validate needs root: it makes filesystems and mounts them")


def _parse_freesp(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        line = line.strip()
        for key in ("total free extents", "total free blocks", "average free extent size"):
            if line.startswith(key):
                out[key.replace(" ", "_")] = line.removeprefix(key).strip()
    return out


def _age(mountpoint: str, fs_bytes: int) -> int:
    """Fragment free space the same way every time: fill AGE_FILL of the filesystem with files of
    seeded random sizes, then delete every other one."""
    rng = random.Random(AGE_SEED)
    folder = Path(mountpoint, "age")
    folder.mkdir()
    target, written, count = int(fs_bytes * AGE_FILL), 0, 0
    chunk = b"\0" * (256 << 10)
    while written < target:
        size = rng.choice((4, 8, 12, 16, 32, 64, 128, 256)) << 10
        with open(folder / f"a{count}", "wb") as f:
            f.write(chunk[:size])
        written += size
        count += 1
    run(argv.sync(), timeout=300)
    for i in range(0, count, 2):
        os.unlink(folder / f"a{i}")
    return count


def _environment(plan: Plan, device: str, backing: str | None) -> BenchEnvironment:
    from advisor.system.versions import xfsprogs_version

    fio = run(argv.fio_version(), check=False, timeout=20)
    note = None
    if backing:
        note = (f"a loop device over {backing}: the numbers reflect the storage under "
                f"{os.path.dirname(os.path.dirname(backing))} and this machine, not a real device")
    return BenchEnvironment(
        kernel=os.uname().release,
        xfsprogs=xfsprogs_version(),
        fio=fio.stdout.strip() or None,
        device=device,
        device_size_bytes=plan.device_bytes,
        loop_backing_file=backing,
        direct_io=plan.direct_io if backing else None,
        cpu_count=os.cpu_count(),
        note=note,
        host_effects=HOST_EFFECTS,
    )


def _ci_text(ci: list[float]) -> str:
    """`[0.103, 0.171]`; an end the interval does not have yet as `inf`."""
    hi = "inf" if ci[1] > 1e6 else f"{ci[1]:.3f}"
    return f"[{ci[0]:.3f}, {hi}]"


def _pairs_time(pairs: int, seconds_per_pair: float | None) -> str:
    """`~12 more pairs (~90 s here)`."""
    took = f" (~{pairs * seconds_per_pair:.0f} s here)" if seconds_per_pair else ""
    return f"~{pairs} more pairs{took}"


def _primary_phrase(m: MetricResult, checks: list[MechanismCheck],
                    seconds_per_pair: float | None = None) -> str:
    """One option's primary metric in words, led by what it did per operation:
    `logbsize=256k: 7.1x fewer log writes per 1k directory ops (mechanism seen, decided after 4
    pairs)`."""
    who = ", ".join(m.primary_for)
    seen = next((c.seen for c in checks if c.counter == m.name), None)
    lo, hi = m.ci
    if m.verdict == "inconclusive":
        more = (f" ({_pairs_time(m.rounds_to_resolve - len(m.a), seconds_per_pair)} would "
                "likely decide it)" if m.rounds_to_resolve else "")
        return (f"{who}: {m.title} B/A {m.ratio:.3f} {_ci_text(m.ci)}, not decided after "
                f"{len(m.a)} pairs{more}")
    when = f"decided after {m.decided_after} pairs" if m.decided_after else "decided"
    how = f"mechanism {seen}, {when}" if seen else f"{m.verdict}, {when}"
    if m.higher_is_better:
        return f"{who}: {m.title} B/A {m.ratio:.3f} [{lo:.3f}, {hi:.3f}] ({how})"
    if m.ratio == 0.0:
        return f"{who}: no {m.title} at all (A: {_geo_text(m.geo_mean_a)}) ({how})"
    if m.verdict == "equivalent":
        return f"{who}: the same {m.title} within {m.margin * 100:.0f}% ({how})"
    size = f"{1 / m.ratio:.1f}x fewer" if m.ratio < 1 else f"{m.ratio:.2f}x more"
    return f"{who}: {size} {m.title} [B/A {lo:.3f}, {hi:.3f}] ({how})"


def _geo_text(x: float | None) -> str:
    return "?" if x is None else f"{x:.3g}"


#: The largest slowdown bound said as "no slowdown beyond X% shown": beyond it, inconclusive.
SLOWDOWN_BOUND_SAID = 0.25


def _primaries_of(metrics: list[MetricResult],
                  mechanisms: list[MetricResult]) -> list[MetricResult]:
    return [m for m in [*mechanisms, *metrics] if m.primary_for]


def _primary_shown(m: MetricResult, checks: list[MechanismCheck]) -> bool:
    """A primary figure decided the way its option is meant to move it: the rule's claim seen,
    or for a figure no claim names (CPU time per operation) any decided verdict but worse."""
    seen = next((c.seen for c in checks if c.counter == m.name), None)
    if seen is not None:
        return seen == "seen"
    return m.verdict in ("better", "equivalent")


def headline_verdict(metrics: list[MetricResult], mechanisms: list[MetricResult],
                     checks: list[MechanismCheck]) -> Verdict:
    """The run's one word (and so its exit code), the primary metrics leading: `worse` when a
    timing figure (primary or not) is shown slower, or a primary counter moved against its
    rule's claim; `better` when every changed option's primary metric is decided the way the
    option is meant to move it (throughput then either decided or said as bounds in the
    summary); `equivalent` when every figure is; `inconclusive` otherwise."""
    primary = _primaries_of(metrics, mechanisms)
    opposite = any(c.seen == "opposite" for c in checks
                   if any(m.name == c.counter for m in primary))
    if opposite or any(m.verdict == "worse" for m in metrics):
        return "worse"
    words = [m.verdict for m in [*primary, *metrics]]
    if words and all(w == "equivalent" for w in words):
        return "equivalent"
    if primary and all(_primary_shown(m, checks) for m in primary) \
            and not all(m.verdict == "equivalent" for m in primary):
        return "better"
    return "inconclusive"


def _throughput_phrase(metrics: list[MetricResult]) -> str:
    """Throughput in a few words: the slowdowns shown, else the largest slowdown every interval
    still excludes, else inconclusive."""
    timing = [m for m in metrics if not m.primary_for] or metrics
    if not timing:
        return "not measured"
    worse = [m for m in timing if m.verdict == "worse"]
    if worse:
        return "slower on " + ", ".join(f"{m.name} ({m.ratio:.2f}x)" for m in worse)
    # A slowdown bound per figure: how much lower than A the interval still lets B be.
    bounds = [1.0 - (m.ci[0] if m.higher_is_better else 1.0 / m.ci[1] if m.ci[1] > 0 else 0.0)
              for m in timing]
    worst = max(bounds)
    faster = [m.name for m in timing if m.verdict == "better"]
    said = f"faster on {', '.join(faster)}; " if faster else ""
    if worst <= 0.0:
        return said + "no slowdown shown anywhere"
    if worst <= SLOWDOWN_BOUND_SAID:
        return said + f"no slowdown beyond {math.ceil(round(worst * 100, 6)):.0f}% shown"
    return said + "inconclusive"


def headline(metrics: list[MetricResult], mechanisms: list[MetricResult],
             checks: list[MechanismCheck]) -> str:
    """The first clause of the verdict line: the changed options' mechanisms, then throughput:
    `mechanism shown for every changed option; throughput: no slowdown beyond 8% shown`."""
    primary = _primaries_of(metrics, mechanisms)
    shown = [m for m in primary if _primary_shown(m, checks)]
    against = [m for m in primary if m.verdict != "inconclusive" and m not in shown]
    if not primary:
        lead = "no primary metric measured"
    elif len(shown) == len(primary):
        lead = ("mechanism shown for every changed option" if len(primary) > 1
                else "mechanism shown for the changed option")
    elif len(primary) == 1:
        lead = "mechanism not decided for the changed option" if not against \
            else "mechanism not shown for the changed option"
    else:
        lead = f"mechanism shown for {len(shown)} of {len(primary)} changed options"
        if against:
            lead += " (against its claim: " + ", ".join(
                ", ".join(m.primary_for) for m in against) + ")"
    return f"{lead}; throughput: {_throughput_phrase(metrics)}"


def _summary(verdict: str, calibrate: bool, metrics: list[MetricResult],
             mechanisms: list[MetricResult] | None = None,
             checks: list[MechanismCheck] | None = None,
             seconds_per_pair: float | None = None) -> str:
    """The verdict line: each changed option's primary metric first (what it did per
    operation), then the timing metrics as its consequence (decided, no slowdown beyond the
    margin, or undecided with the pairs and time that would settle it), then the costs the
    counters found."""
    if calibrate:
        bad = [m.name for m in metrics if m.verdict in ("better", "worse")]
        if bad:
            return f"A/A run reported a difference on {', '.join(bad)}: the set-up is too noisy"
        return "A/A run: no false difference; noise floors stored for later runs"
    mechanisms, checks = mechanisms or [], checks or []
    lead = [_primary_phrase(m, checks, seconds_per_pair) for m in [*mechanisms, *metrics]
            if m.primary_for]
    lead += [f"{c.option}: {c.counter} not measured (zero in some round on both sides or "
             "missing)" for c in checks if c.seen == "not measured"]
    rest = [m for m in metrics if not m.primary_for]
    named = {v: [m for m in rest if m.verdict == v]
             for v in ("better", "worse", "equivalent", "inconclusive")}
    said = []
    for v in ("worse", "better"):
        if named[v]:
            said.append(f"{v} on " + ", ".join(f"{m.name} ({m.ratio:.2f}x)" for m in named[v]))
    if named["equivalent"]:
        said.append("no difference beyond +-5% shown on "
                    + ", ".join(m.name for m in named["equivalent"]))
    if named["inconclusive"]:
        needs = [m.rounds_to_resolve - len(m.a) for m in named["inconclusive"]
                 if m.rounds_to_resolve]
        more = (_pairs_time(max(needs), seconds_per_pair) + " would likely settle "
                + ("them" if len(needs) > 1 else "it")) if needs \
            else f"more than {MAX_PAIRS} pairs would be needed"
        said.append(f"undecided on {', '.join(m.name for m in named['inconclusive'])} ({more})")
    if named["worse"] and named["better"]:
        said.append("a trade: weigh which the workload does more of")
    costs = [f"{m.title} up {m.ratio:.2f}x [{m.ci[0]:.2f}, {m.ci[1]:.2f}]" for m in mechanisms
             if not m.primary_for and m.verdict == "worse"]
    text = headline(metrics, mechanisms, checks) + ". " + "; ".join(lead)
    text += (". " if lead else "") + "Throughput: " + ("; ".join(said) or "nothing else measured")
    if costs:
        text += ". Costs the counters found: " + "; ".join(costs)
    return text


def execute(plan: Plan, *, progress: Progress | None = None,
            store: CalibrationStore | None = None,
            resolve_b: Callable[[str], SideConfig] | None = None,
            say: Callable[[str], None] | None = None,
            on_sample: Sample | None = None,
            hold: DeviceHold | None = None,
            recovered: Recovery | None = None,
            stop: Callable[[], bool] | None = None) -> ValidationReport:
    """Run the plan and judge it. `progress(done, total, what)` is called before each step;
    `resolve_b(device)` decides side B once the (loop) device exists, for the proposal; `say`
    prints a line for people (what an earlier, killed run left and this one removed);
    `on_sample(side, round_index, values)` gets each side's values as soon as they are measured
    (an exception it raises ends the run, cleaned up like any other failure). `hold`: the scratch
    device as the caller checked and confirmed it (validate --device); without it the run opens
    its own. Right before every mkfs the guard runs again on the live system and the device must
    still be the one that was checked (advisor.bench.hold). Both sides' options are checked
    against what validate may pass (advisor.bench.options) before anything is made. `recovered`:
    what the caller's recover_and_say() found before its guard (None: recover here).

    Rounds: `plan.pairs` pairs first, then, after each ABBA block, a look at every metric's
    confidence sequence (advisor.bench.stats): the run stops when all are resolved, at
    `plan.max_pairs`, when another block would overrun the budget, or when `stop()` says so
    (checked between blocks once the minimum ran: the report says `cancelled`)."""
    started = time.monotonic()  # the budget counts the set-up and the clean-up too
    loads = [_load()]
    plan.a, plan.b = checked_side(plan.a), checked_side(plan.b)
    check_host(need_loop=plan.device is None)
    if recovered is None:
        recovered = recover_and_say(say)
    shape = plan.shape
    prior = plan.prior
    samples: dict[str, dict[str, list[float]]] = {
        m.name: {"A": [], "B": []} for m in shape.metrics}
    infos: dict[str, str] = {}
    mechanisms: dict[str, dict[str, list[float]]] = {}
    measuring = 0.0
    earlier_wall = 0.0
    looks: list[int] = []
    if prior is not None:
        for name, sides in prior.samples.items():
            samples[name] = {k: list(v) for k, v in sides.items()}
        mechanisms = {name: {k: list(v) for k, v in sides.items()}
                      for name, sides in prior.mechanisms.items()}
        infos = dict(prior.infos)
        measuring, earlier_wall, looks = (prior.measuring_seconds, prior.wall_seconds,
                                          list(prior.looks))
    done = prior.pairs if prior is not None else 0
    first = done
    age_report: AgeReport | None = None
    backing: str | None = None
    reason: StopReason | None = None
    with terminate_as_interrupt(), Resources(say=say) as res, contextlib.ExitStack() as held:
        res.make_folders(plan.loop_dir)
        work = res.make_dir(plan.loop_dir, "xfs-advisor-")
        if plan.device is None:
            backing = res.preallocate(os.path.join(work, "scratch.img"), plan.device_bytes)
            device = res.attach_loop(backing, direct_io=plan.direct_io)
        else:
            device = plan.device
        # Closed before Resources undoes anything: our own loop device detaches only when free.
        if hold is None:
            hold = held.enter_context(DeviceHold(device))
            if backing is not None:  # held open now: it cannot be re-bound any more
                res.check_loop(device)
                hold.verify()
        else:
            held.callback(hold.close)
        # The one XFS the guard may find before the first mkfs: a killed run's, on this device.
        ours = recovered.test_filesystems.get(dev_name(os.stat(device).st_rdev))
        if resolve_b is not None:
            plan.b = checked_side(resolve_b(device))
            # Proposed for the loop device itself: what was proposed is what runs.
            plan.proposed, plan.proposed_for = plan.b, device
        env = _environment(plan, device, backing)
        isolation = open_isolation(f"xfs-advisor-{os.getpid()}")
        held.callback(isolation.close)
        env.isolation = isolation.summary
        floors, calibration = _calibration(plan, env, store)
        margins = _margins(plan, shape, floors)
        primary = primaries(plan)
        mnt = os.path.join(work, "mnt")
        os.mkdir(mnt)
        counted = counters.kernel_name(device)
        if prior is None:
            if progress:
                progress(0, 2 * plan.planned_pairs, "pilot: this machine's rate")
            plan.pilot, ours = _pilot(plan, hold, res, device, mnt, work, ours, started,
                                      isolation)
            shape = plan.shape
            samples = {m.name: {"A": [], "B": []} for m in shape.metrics}
        jobpaths = {}
        for part in ("changes", "rest"):
            # fio runs in `work`: names relative to it, whatever the loop folder is called.
            jobpaths[part] = f"{part}.fio"
            try:
                text = jobs.jobfile(shape, os.path.basename(mnt), counters_for=counted,
                                    part=part)
            except ValueError as err:
                raise DeviceProblem(f"{device}: {err}") from None
            Path(work, jobpaths[part]).write_text(text, encoding="utf-8")
        fio_timeout = 120 + 20 * shape.phase_seconds + shape.directory_entries / 500
        blocks: list[float] = []
        step = 0
        while reason is None:
            block_started = time.monotonic()
            for i, label in enumerate(abba_order(2)):  # one ABBA block: two pairs
                side = plan.a if label == "A" else plan.b
                index = done + i // 2
                if progress:
                    progress(step, 2 * (plan.run_limit - first),
                             f"pair {index + 1} of at most {plan.run_limit}, side {label}")
                step += 1
                mkfs_options = side.mkfs_options
                ours = _format(hold, side, mkfs_options, ours,
                               unrecognized_ok=plan.destroy_unrecognized)
                res.made_filesystem(device)
                res.mount(device, mnt, side.mount_options)
                if plan.age:
                    files = _age(mnt, plan.device_bytes)
                    if age_report is None:
                        freesp = run(argv.xfs_spaceman(mnt, "freesp -s"), check=False,
                                     timeout=60)
                        age_report = AgeReport(seed=AGE_SEED, files_written=files,
                                               freesp_summary=_parse_freesp(freesp.stdout))
                jobs.prepare(shape, mnt)
                run(argv.sync(), timeout=300)
                for old in Path(work).glob("counters.*"):  # a missed snapshot must not be reused
                    old.unlink()
                def remount(options: list[str] = side.mount_options) -> None:
                    res.umount(mnt)
                    res.mount(device, mnt, options)

                measured = _round(label, shape, jobpaths, work, fio_timeout, counted, remount,
                                  isolation)
                work_done = counters.mechanism_values(
                    work, jobs.phases(shape),
                    {"create": float(shape.directory_entries),
                     "delete": float(shape.churn_entries), "refill": float(shape.churn_entries),
                     "syncwrite": measured.operations.get("syncwrite", 0.0),
                     "seqwrite": measured.operations.get("seqwrite", 0.0),  # 1 MiB writes
                     "readback": measured.operations.get("readback", 0.0)})
                work_done.update(counters.writers_in_busiest_ag(device, mnt, shape.writers))
                for name, value in work_done.items():
                    mechanisms.setdefault(name, {"A": [], "B": []})[label].append(value)
                measuring += measured.measuring_seconds
                for name, value in measured.values.items():
                    samples[name][label].append(value)
                if on_sample:
                    on_sample(label, index, dict(measured.values))
                if label not in infos:
                    infos[label] = run(argv.xfs_info(mnt), check=False, timeout=60).stdout
                res.umount(mnt)
                hold.claim()
            done += 2
            blocks.append(time.monotonic() - block_started)
            loads.append(_load())
            reason = _after_block(plan, done, first, looks, samples, mechanisms, primary,
                                  time.monotonic() - started, max(blocks), stop)
        wall = time.monotonic() - started
        loads.append(_load())
        env.load_average = [round(loads[0], 2), round(max(loads), 2), round(loads[-1], 2)]
        if progress:  # the same total: "at most" said from the start
            progress(step, 2 * (plan.run_limit - first), "judging")
    report = judge(plan, samples, infos=infos, env=env, shape=shape, age=age_report,
                   timing=Timing(wall_seconds=round(earlier_wall + wall, 2),
                                 pilot_creates_per_s=plan.pilot.ops_rate if plan.pilot else None,
                                 pilot_side_overhead=plan.pilot.side_overhead
                                 if plan.pilot else None,
                                 measuring_seconds=round(measuring, 2),
                                 measuring_share=round(measuring / (earlier_wall + wall), 3)
                                 if wall else 0.0),
                   recovered=recovered.done, store=store, mechanisms=mechanisms,
                   calibrated=(floors, calibration), margins=margins,
                   stopping=(reason, looks, first),
                   seconds_per_pair=max(blocks) / 2 if blocks else None)
    if plan.device:
        report.device_left = (f"{plan.device} now holds the test filesystem of the last round: "
                              f"`wipefs -a {plan.device}` removes it before any other use")
    return report


def _pilot(plan: Plan, hold: DeviceHold, res: Resources, device: str, mnt: str, work: str,
           ours: str | None, started: float,
           isolation: Isolation | None = None) -> tuple[Pilot, str | None]:
    """Side A's filesystem made and mounted as a round would, jobs.PILOT_ENTRIES creates by
    fio, sync, umount: this machine's create rate now, and what the steps around fio cost
    (Pilot). Returns it and the UUID of the filesystem it made."""
    began = time.monotonic()
    ours = _format(hold, plan.a, plan.a.mkfs_options, ours,
                   unrecognized_ok=plan.destroy_unrecognized)
    res.made_filesystem(device)
    res.mount(device, mnt, plan.a.mount_options)
    os.mkdir(os.path.join(mnt, "big"))
    run(argv.sync(), timeout=300)
    Path(work, "pilot.fio").write_text(jobs.pilot_jobfile(os.path.basename(mnt)),
                                       encoding="utf-8")
    fio = argv.fio("pilot.fio")
    result = run(isolation.wrap(fio) if isolation else fio, check=False, timeout=300, cwd=work)
    if not result.ok:
        raise ToolProblem(f"fio failed in the pilot: {result.first_error_line()}")
    rate, busy = jobs.pilot_rate(result.stdout)
    run(argv.sync(), timeout=300)
    res.umount(mnt)
    hold.claim()
    besides = max(0.0, time.monotonic() - began - busy)
    overhead = PILOT_STEPS * besides + FIO_PHASE_SECONDS * len(counters.PHASES)
    return Pilot(ops_rate=round(rate, 1), side_overhead=round(overhead, 2),
                 spent=round(time.monotonic() - started, 2)), ours


def _load() -> float:
    """The machine's 1-minute load average (0 where the system has none)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def _round(label: str, shape: jobs.Shape, jobpaths: dict[str, str], work: str,
           timeout: float, counted: str, remount: Callable[[], None],
           isolation: Isolation | None = None) -> jobs.RoundResult:
    """One side's fio runs: the directory changes, then `sync`, the counters' snapshot before the
    stats, the test filesystem unmounted and mounted again (`remount`: its caches are then cold,
    and only its own), then the cold stats and the data phases."""
    results = []
    for part in ("changes", "rest"):
        if part == "rest":
            run(argv.sync(), timeout=300)
            counters.take_snapshot(counted, work, "stat")
            remount()
        # cwd: fio writes the counters' snapshots (its phases' exec_prerun) there.
        fio = argv.fio(jobpaths[part])
        result = run(isolation.wrap(fio) if isolation else fio, check=False, timeout=timeout,
                     cwd=work)
        if not result.ok:
            raise ToolProblem(f"fio failed on side {label}: {result.first_error_line()}")
        wanted = tuple(m for m in shape.metrics
                       if (m.job in jobs.CHANGE_PHASES) == (part == "changes"))
        results.append(jobs.parse_fio(result.stdout, wanted))
    counters.take_snapshot(counted, work, counters.END)
    return jobs.RoundResult(
        values={**results[0].values, **results[1].values},
        measuring_seconds=results[0].measuring_seconds + results[1].measuring_seconds,
        operations={**results[0].operations, **results[1].operations})


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
    from advisor.bench.differences import options

    found = []
    for o in options(plan.a, plan.b):
        claims = counters.closest_claims(plan.claims, o.label)
        if claims:
            found += [Primary(o.label, c.counter, rule) for rule, c in claims[:1]]
        else:
            found.append(Primary(o.label, FALLBACK_PRIMARY))
    return found or [Primary("B = A", FALLBACK_PRIMARY)]


def _after_block(plan: Plan, done: int, first: int, looks: list[int],
                 samples: dict[str, dict[str, list[float]]],
                 mechanisms: dict[str, dict[str, list[float]]], primary: list[Primary],
                 elapsed: float, slowest_block: float,
                 stop: Callable[[], bool] | None) -> StopReason | None:
    """The stopping rule, after each ABBA block: None to run another block. From the minimum
    pairs on (fewer decide nothing) it stops when every primary metric is decided, at the most
    pairs, or at the pairs the budget was sized for (Plan.run_limit, so the progress total never
    changes); before and after the minimum, when another block as slow as the slowest so far
    would overrun the budget (counted from the start, set-up and clean-up included): the budget
    is a cap, the minimum pairs included (the phases are sized so that they fit). Every look is
    on confidence sequences or on the rank test of advisor.bench.counters, valid however often
    they are looked at and whenever the run stops."""
    if done >= plan.pairs:
        looks.append(done)
        if not plan.fixed and not _open(samples, mechanisms, primary):
            return "resolved"
        if done >= plan.run_limit:
            return "max rounds" if done >= plan.most_pairs else "budget"
    if elapsed + slowest_block + TEARDOWN_SECONDS > plan.budget_seconds:
        return "budget"
    if done < plan.pairs:
        return None
    if stop is not None and stop():
        return "cancelled"
    return None


def _open(samples: dict[str, dict[str, list[float]]],
          mechanisms: dict[str, dict[str, list[float]]], primary: list[Primary]) -> list[str]:
    """The primary metrics not decided yet (neither a direction nor equivalence shown)."""
    names = {p.name for p in primary}
    judged = {m.name: m for m in _judge_mechanisms(mechanisms, {n: [] for n in names})}
    still = []
    for name in sorted(names):
        if name in judged:
            if judged[name].verdict == "inconclusive":
                still.append(name)
        elif name in samples and len(samples[name]["A"]) >= 2:
            metric = next(m for m in jobs.METRICS if m.name == name)
            v = stats.judge_one(samples[name]["A"], samples[name]["B"], metric.higher_is_better,
                                stats.DEFAULT_MARGIN, alpha=ALPHA, g=stats.PRIMARY_PRIOR)
            if v.verdict == "inconclusive":
                still.append(name)
        else:
            still.append(name)  # no figure yet (a counter zero in some round): not decided
    return still


def _format(hold: DeviceHold, side: SideConfig, options: list[str], ours: str | None, *,
            unrecognized_ok: bool = False) -> str | None:
    """mkfs.xfs for one side, behind the guard: the device must still be the one checked and
    confirmed, and pass every check again now (holding nothing but the XFS our previous round
    made, UUID `ours`). Returns the UUID of the new filesystem."""
    hold.verify()
    check_now(hold.path, MIN_DEVICE_BYTES, ours=ours, unrecognized_ok=unrecognized_ok)
    hold.release()  # mkfs.xfs opens the device O_EXCL itself
    made = run(argv.mkfs_xfs(hold.path, options, force=True, no_discard=True),
               check=False, timeout=300)
    if not made.ok:
        given = " ".join(options) or "defaults"
        raise failure(f"mkfs.xfs for side {side.label} ({given}) failed: "
                      f"{made.first_error_line()}")
    hold.verify()
    return read_xfs_uuid(hold.path)


def _calibration(plan: Plan, env: BenchEnvironment,
                 store: CalibrationStore | None) -> tuple[dict[str, float], CalibrationUse]:
    """The noise floors this run's margins rest on, and where they came from."""
    if plan.prior is not None and plan.prior.calibration is not None:
        return {}, plan.prior.calibration
    key = device_key(env)
    versions: dict[str, str | None] = {"kernel": env.kernel, "xfsprogs": env.xfsprogs,
                                       "fio": env.fio}
    if plan.calibrate:
        return {}, CalibrationUse(
            source="this run", device_key=key, file=str(store.path) if store else None,
            summary=f"an A/A run: it measures the noise floors of {key}"
                    + (f" and stores them in {store.path}" if store else ""))
    if store is not None:
        return store.use(key, versions)
    return {}, CalibrationUse(source="default", device_key=key,
                              summary=f"margins: the default {stats.DEFAULT_MARGIN:.0%} "
                                      "(no calibration store)")


def _margins(plan: Plan, shape: jobs.Shape, floors: dict[str, float]) -> dict[str, float]:
    """Each metric's margin (a fraction: what `equivalent` allows), fixed before the first pair
    (a continued run keeps the earlier run's). Not the calibrated noise floor: noise already
    widens the intervals, and a floor measured under load (74-525% once) would call a large
    slowdown equivalent; the floors are shown beside the metrics instead."""
    del floors
    if plan.prior is not None:
        return {m.name: plan.prior.margins.get(m.name, stats.DEFAULT_MARGIN)
                for m in shape.metrics}
    return {m.name: stats.DEFAULT_MARGIN for m in shape.metrics}


def judge(plan: Plan, samples: dict[str, dict[str, list[float]]], *, infos: dict[str, str],
          env: BenchEnvironment, shape: jobs.Shape, age: AgeReport | None, timing: Timing,
          recovered: list[str], store: CalibrationStore | None,
          mechanisms: dict[str, dict[str, list[float]]] | None = None,
          calibrated: tuple[dict[str, float], CalibrationUse] | None = None,
          margins: dict[str, float] | None = None,
          stopping: tuple[StopReason, list[int], int] | None = None,
          seconds_per_pair: float | None = None) -> ValidationReport:
    """Verdicts from the samples (pure apart from reading/writing the calibration store).
    `mechanisms`: work-per-operation samples (advisor.bench.counters). Each option's primary
    metric (primaries(plan)) is judged at the full ALPHA on its own; the other timing metrics
    and the other counters as two families at ALPHA each (Bonferroni within).
    `calibrated`, `margins`: as execute decided them before the first pair (default: read
    now); `stopping`: (why the run stopped, the pair counts it looked at, pairs it continued);
    `seconds_per_pair`: what a pair cost here, for what the open figures would take."""
    floors, calibration = calibrated or _calibration(plan, env, store)
    margins = margins or _margins(plan, shape, floors)
    primary = [] if plan.calibrate else primaries(plan)
    firsts = {p.name for p in primary}
    rows = [(samples[m.name]["A"], samples[m.name]["B"], m.higher_is_better, margins[m.name])
            for m in shape.metrics]
    second = [r for m, r in zip(shape.metrics, rows, strict=True) if m.name not in firsts]
    secondary = iter(stats.judge(second, alpha=ALPHA))
    metrics = []
    for m, (a_samples, b_samples, hib, margin) in zip(shape.metrics, rows, strict=True):
        if m.name in firsts:
            v = stats.judge_one(a_samples, b_samples, hib, margin, alpha=ALPHA,
                                g=stats.PRIMARY_PRIOR)
        else:
            v = next(secondary)
        metrics.append(_result(
            m.name, m.title, m.unit, m.higher_is_better, a_samples, b_samples, v,
            calibrated_floor=floors.get(m.name),
            primary_for=[p.option for p in primary if p.name == m.name]))
    calibration_file = None
    if store is not None:
        calibration_file = str(store.path)
        if plan.calibrate:
            versions: dict[str, str | None] = {"kernel": env.kernel, "xfsprogs": env.xfsprogs,
                                               "fio": env.fio}
            store.save(device_key(env), {m.name: (samples[m.name]["A"], samples[m.name]["B"])
                                         for m in shape.metrics}, versions)
    judged = _judge_mechanisms(mechanisms or {}, {
        n: [p.option for p in primary if p.name == n] for n in firsts})
    checks = counters.check_claims(plan.claims, plan.a, plan.b, judged)
    verdict = (stats.overall([m.verdict for m in metrics]) if plan.calibrate
               else headline_verdict(metrics, judged, checks))
    a = plan.a.model_copy(update={"xfs_info": infos.get("A")})
    b = plan.b.model_copy(update={"xfs_info": infos.get("B")})
    pairs = min((len(s["A"]) for s in samples.values()), default=0)
    reason, looks, first = stopping or ("max rounds", [pairs], 0)
    claimed = {c.counter for c in checks}
    return ValidationReport(
        a=a, b=b, proposed=plan.proposed, proposed_for=plan.proposed_for,
        not_applied=plan.not_applied, calibrate=plan.calibrate, rounds=pairs,
        order=abba_order(pairs), workload=shape.as_dict(), metrics=metrics, verdict=verdict,
        summary=_summary(verdict, plan.calibrate, metrics, judged, checks, seconds_per_pair),
        age=age, timing=timing,
        environment=env, recovered=recovered, calibration_file=calibration_file,
        calibration=calibration, mechanisms=judged, mechanism_checks=checks,
        stopping=_stopping(plan, reason, looks, first, pairs, metrics,
                           [m for m in judged if m.name in claimed or m.primary_for],
                           seconds_per_pair),
        mechanisms_not_shown=[f"{m.title}: zero in some round (the device or the filesystem "
                              "did none of it), so no ratio" for m in counters.MECHANISMS
                              if m.name in (mechanisms or {})
                              and m.name not in {j.name for j in judged}])


_REASONS: dict[str, str] = {
    "resolved": "every option's primary metric decided",
    "budget": "the budget ran out",
    "max rounds": "the most pairs allowed ran",
    "cancelled": "stopped by request",
}


def _stopping(plan: Plan, reason: StopReason, looks: list[int], first: int, pairs: int,
              metrics: list[MetricResult], counted: list[MetricResult],
              seconds_per_pair: float | None = None) -> Stopping:
    """How many pairs ran, why it stopped, and what is still open (with what it would take)."""
    open_ = []
    for m in [*metrics, *counted]:
        if m.verdict != "inconclusive":
            continue
        could = allows(list(m.still_possible))
        more = (f"; {_pairs_time(m.rounds_to_resolve - pairs, seconds_per_pair)} would likely "
                "resolve it" if m.rounds_to_resolve
                else f"; more than {MAX_PAIRS} pairs in all would be needed")
        open_.append(f"{m.name}: could still be {could} (B/A {_ci_text(m.ci)} against "
                     f"+-{m.margin * 100:.0f}%){more}")
    if plan.fixed and reason == "max rounds":
        why = (f"{pairs} pairs, fixed in advance"
               + (" (an A/A calibration is a fixed design)" if plan.calibrate else ""))
    else:
        why = f"{_REASONS[reason]} after {pairs} pairs"
        if reason == "budget" and pairs >= plan.run_limit:
            why += (f" (the {plan.run_limit} pairs the {plan.budget_seconds:.0f} s budget was "
                    "sized for)")
        elif reason == "budget":
            why += f" (budget {plan.budget_seconds:.0f} s)"
        elif reason == "max rounds":
            why += f" (--max-rounds {plan.most_pairs})"
    if first:
        why += f"; continued from {first} pairs"
    return Stopping(reason=reason, summary=why, min_rounds=plan.pairs,
                    max_rounds=plan.run_limit, budget_seconds=plan.budget_seconds,
                    looks=looks, continued_from=first or None, open=open_,
                    alpha=ALPHA, method=METHOD,
                    seconds_per_pair=round(seconds_per_pair, 1) if seconds_per_pair else None)


def _judge_mechanisms(samples: dict[str, dict[str, list[float]]],
                      primary: dict[str, list[str]] | None = None) -> list[MetricResult]:
    """The counters' figures as metrics (lower is less work), with the performance metrics'
    statistics and default margin: a primary one (`primary`: name -> the options it decides)
    at the full ALPHA on its own, the others in a Bonferroni family of their own. A figure that
    was zero in some round (no log write at all) has no ratio and is left out."""
    primary = primary or {}
    rows, kept = [], []
    for m in counters.MECHANISMS:
        side = samples.get(m.name)
        if not side or len(side["A"]) != len(side["B"]) or len(side["A"]) < 2:
            continue
        if min(side["A"] + side["B"]) <= 0:
            continue
        kept.append(m)
        rows.append((side["A"], side["B"], False, stats.DEFAULT_MARGIN))
    second = iter(stats.judge([r for m, r in zip(kept, rows, strict=True)
                               if m.name not in primary], alpha=ALPHA))
    results = []
    for m, (a, b, _, margin) in zip(kept, rows, strict=True):
        v = (stats.judge_one(a, b, False, margin, alpha=ALPHA, g=stats.PRIMARY_PRIOR)
             if m.name in primary else next(second))
        results.append(_result(m.name, m.title, m.unit, False, a, b, v,
                               primary_for=primary.get(m.name, [])))
    return results + counters.judge_none_on_b(samples, {m.name for m in kept}, primary)


def _result(name: str, title: str, unit: str, higher_is_better: bool, a: list[float],
            b: list[float], v: stats.MetricVerdict, *, calibrated_floor: float | None = None,
            primary_for: list[str] | None = None) -> MetricResult:
    """One judged figure as the report keeps it (rounded; noise 0 when a single pair)."""
    return MetricResult(
        name=name, title=title, unit=unit, higher_is_better=higher_is_better,
        a=[round(x, 3) for x in a], b=[round(x, 3) for x in b],
        ratio=round(v.summary.ratio, 4), geo_mean_a=round(stats.geometric_mean(a), 3),
        geo_mean_b=round(stats.geometric_mean(b), 3),
        ci=[round(v.ci_ratio[0], 4), round(v.ci_ratio[1], 4)],
        margin=round(math.expm1(v.margin), 4),
        noise=round(v.summary.sd, 4) if math.isfinite(v.summary.sd) else 0.0,
        verdict=v.verdict, rounds_to_resolve=v.rounds_needed,
        still_possible=list(v.still_possible),
        calibrated_floor=calibrated_floor, primary_for=list(primary_for or []),
        decided_after=v.decided_after)


def device_key(env: BenchEnvironment) -> str:
    """What a calibration is valid for: the same kind of device of the same size."""
    if env.loop_backing_file:
        return f"loop:{os.path.dirname(os.path.dirname(env.loop_backing_file))}:" \
               f"{human_size(env.device_size_bytes)}"
    return f"{env.device}:{human_size(env.device_size_bytes)}"


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


def writable_folder(what: str, folder: str) -> str:
    """The run makes its work folder (and `folder` itself, when missing) there: it must be, or
    be made in, a writable directory. Returns the directory that exists."""
    existing = existing_folder(folder)
    if not os.path.isdir(existing):
        raise BadInput(f"{what} {folder}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):  # also false on a read-only filesystem
        raise BadInput(f"{what} {folder}: {existing} is not writable")
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
    shape = report.workload
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
