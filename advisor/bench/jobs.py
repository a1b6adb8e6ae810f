"""The fio workload of one round, derived from the workload answers and scaled to the time budget,
and the metrics read back from fio's JSON.

Measured with fio 3.33 (Debian 12):
- filestat/filedelete need `create_on_open=1`, or fio "lays out" (writes and fsyncs) every file
  before the job, and filecreate without it pre-creates the files and then only opens them.
- `file_service_type=sequential`: the default (roundrobin) makes fio's bookkeeping quadratic in
  the number of files.
- fio pays about 0.3 s per phase (its main loop polls in 100 ms steps), so the phases are few.
- Creates into a growing directory hardly show the directory block size on a modern kernel
  (6.18, 60,000 entries: `-n size=64k` within +-10% of 4 KiB). The guide's CPU cost per
  modification of large blocks shows once the blocks have holes to search: deletes scattered
  through the directory and creates into those holes, `-n size=64k` 15-35% slower there.
  Real directories lose files in an order unrelated to their creation (expiry, consumers), so
  after the creates every tenth file is deleted and as many new files are created.
- filedelete deletes in creation order only (random file service is quadratic), so the
  delete job names its files `msg.<k>0...` (`$filenum` then a 0): files 10, 20, 30, ...; for
  k = 0 that is `msg.00...`, which the create job never makes: `prepare` creates it first.
- The stat phase is cold for the test filesystem only: a round runs fio twice, the directory
  changes (`jobfile(..., part="changes")`), then, after `sync`, the run unmounts and mounts the
  test filesystem again (which drops its dentries, inodes and pages, and nothing of the host's),
  then the rest from the cold stats on (`part="rest"`). So lookups read the directory and
  inodes from the device, the case the guide's lookup tables measure; statting files just
  created would time the dentry cache, not XFS.
- Data phases are time-based with one file per writer, each writer in its own directory.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field

from advisor.bench import counters
from advisor.errors import ToolProblem
from advisor.models.bench import METRICS, Metric
from advisor.models.workload import Workload
from advisor.render import inert

#: Directory operations per second the plan shown before a run assumes (a loop device on a
#: 2-core machine); the run itself sizes its directory from a pilot of this machine's own rate
#: (advisor.bench.plan.Pilot), kept within PILOT_RATES.
PLAN_RATE = 40_000
#: The pilot's rate is kept within these (a pilot on a stalled machine must not make a run of
#: a dozen files, nor a very fast one a run of millions).
PILOT_RATES = (2_000.0, 400_000.0)
#: Files the pilot creates: enough for fio's create rate to be more than its start-up.
PILOT_ENTRIES = 2_000
#: Share of the directory deleted, refilled and (cold) statted.
CHURN_SHARE = 0.1
#: Operations per directory entry: the create, a tenth of a delete, a refill and a cold stat
#: (which costs about two).
OPS_PER_ENTRY = 1 + CHURN_SHARE * 4
DEFAULT_DIRECTORY_ENTRIES = 20_000
MIN_DIRECTORY_ENTRIES = 2_000
NAME = "msg.{}.host.example.org"
#: The phases of the first fio run of a round; the rest run after the test filesystem is mounted
#: again (cold).
CHANGE_PHASES = ("create", "delete", "refill")
MAX_WRITERS = 16
LARGE_DIRECTORY_FLOOR = 30_000
SEQUENTIAL_FROM = 1 << 20
READ_FILE_BYTES = 16 << 20


@dataclass(frozen=True)
class Shape:
    """The fixed shape of every round (identical for A and B), decided before the first one."""

    directory_entries: int
    """Files created in one directory (a multiple of 10)."""
    churn_entries: int
    """Files then deleted (every tenth), new files created in their place, and those statted."""
    writers: int
    """Concurrent jobs in the data phases, each in its own directory."""
    write_file_bytes: int
    """Size of each writer's sequential-write file (the write loops over it when done)."""
    read_file_bytes: int
    """Size of each reader's file (laid out by fio before the phase, not timed)."""
    phase_seconds: float
    """Length of each time-based data phase."""
    fsync_phase: bool
    """Whether fsync'd small writes are measured (fsyncs_per_second unknown or > 0)."""
    sequential_phases: bool
    """Whether sequential 1 MiB writes and reads are measured (median file unknown or >= 1 MiB)."""
    directory_entries_asked: int | None
    """largest_directory_entries from the answers (null: not given)."""

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    @property
    def metrics(self) -> tuple[Metric, ...]:
        """The metrics these phases measure."""
        skip = set()
        if not self.fsync_phase:
            skip.add("syncwrite")
        if not self.sequential_phases:
            skip |= {"seqwrite", "seqread"}
        return tuple(m for m in METRICS if m.job not in skip)


def shape_for(workload: Workload, *, measure_seconds: float, fs_bytes: int,
              ops_rate: float = PLAN_RATE, floor_yields: bool = False) -> Shape:
    """Scale the workload to about `measure_seconds` of measuring per round and side, the
    directory at `ops_rate` directory operations per second (the pilot's, else PLAN_RATE).
    `floor_yields`: the budget is a cap on a measured machine, so LARGE_DIRECTORY_FLOOR gives
    way to what fits (the report says the directory was scaled to the budget).

    The phases follow the answers: fsync'd writes unless fsyncs_per_second is 0, sequential
    1 MiB I/O unless the median file is under 1 MiB. A large directory keeps at least
    LARGE_DIRECTORY_FLOOR entries where the budget allows (below that, 4 KiB and 64 KiB
    directory blocks are different shapes of btree than the answer describes); once a pilot
    has measured the machine the budget is a cap and the floor gives way (`floor_yields`): a
    larger --budget keeps the larger directory. Any directory gets at least
    MIN_DIRECTORY_ENTRIES, so that its phases last long enough to time."""
    asked = workload.largest_directory_entries
    fsync = workload.fsyncs_per_second is None or workload.fsyncs_per_second > 0
    sequential = workload.median_file_size is None or workload.median_file_size >= SEQUENTIAL_FROM
    data_phases = int(fsync) + 2 * int(sequential)
    phase_share = 0.15 if data_phases else 0.0
    directory_share = 1.0 - data_phases * phase_share
    rate = min(max(ops_rate, PILOT_RATES[0]), PILOT_RATES[1])
    budgeted = int(measure_seconds * directory_share * rate / OPS_PER_ENTRY)
    wanted = asked if asked is not None else DEFAULT_DIRECTORY_ENTRIES
    floor = min(wanted, LARGE_DIRECTORY_FLOOR)
    if floor_yields:
        floor = min(floor, budgeted)
    entries = max(MIN_DIRECTORY_ENTRIES, min(wanted, budgeted), floor)
    entries -= entries % 10  # the delete phase removes one file of every ten
    writers = min(workload.concurrent_writers or 1, MAX_WRITERS)
    # Leave half the filesystem free: writers' files and readers' files must both fit.
    room = fs_bytes // 2
    read_bytes = max(4 << 20, min(READ_FILE_BYTES, room // (4 * writers)) // (1 << 20) << 20)
    write_bytes = max(8 << 20, min(1 << 30, (room - read_bytes * writers) // writers)
                      // (1 << 20) << 20)
    return Shape(
        directory_entries=entries,
        churn_entries=entries // 10,
        writers=writers,
        write_file_bytes=write_bytes,
        read_file_bytes=read_bytes,
        phase_seconds=round(max(0.5, measure_seconds * phase_share), 2),
        fsync_phase=fsync,
        sequential_phases=sequential,
        directory_entries_asked=asked,
    )


def seed_files() -> list[str]:
    """Empty files (relative to the mountpoint) to create before fio starts: the delete job's
    first name, which the create job does not make (see the module's notes)."""
    return [f"big/{NAME.format('00')}"]


def prepare(shape: Shape, mountpoint: str) -> None:
    """Make what the job file expects on a fresh filesystem: the big directory, one folder per
    writer, and the seed files."""
    for folder in ["big", *(f"w{i}" for i in range(shape.writers))]:
        os.mkdir(os.path.join(mountpoint, folder))
    for seed in seed_files():
        with open(os.path.join(mountpoint, seed), "x"):
            pass


def phases(shape: Shape) -> list[str]:
    """The phases a round of this shape runs, in order (advisor.bench.counters.PHASES)."""
    run = ["create", "delete", "refill", "stat"]
    if shape.fsync_phase:
        run += ["syncwrite", "readback"]
    if shape.sequential_phases:
        run += ["seqwrite", "seqread"]
    return run


def _prerun(counters_for: str | None, phase: str, first: str | None = None) -> list[str]:
    """`exec_prerun` of a phase's first job: `first` (a shell line, e.g. the cache drop), then a
    snapshot of the mechanism counters (advisor.bench.counters) into the run's folder."""
    steps = [first] if first else []
    if counters_for:
        steps.append(counters.snapshot_command(counters_for, f"counters.{phase}"))
    return [f'exec_prerun=sh -c "{" && ".join(steps)}"'] if steps else []


def jobfile(shape: Shape, mountpoint: str, counters_for: str | None = None,
            part: str = "changes") -> str:
    """One of the two fio job files of a round: `changes` (create, delete, refill) or `rest`
    (the cold stats, then the data phases), run after the test filesystem is mounted again.
    `counters_for`: the device's kernel name, to snapshot its XFS and block counters before each
    phase (fio runs in the run's folder); the snapshot before the stats is the run's own, taken
    after `sync` and before the unmount (XFS's per-mount counters start again at the mount).

    `mountpoint` is best relative to the folder fio runs in (`mnt`): fio cuts `directory=` at
    `;` and splits it at `:`, so a loop folder named `/tmp/a;b` would send the files elsewhere.
    A name fio would not take literally is refused (ValueError), never written."""
    mountpoint = inert.fio_name(mountpoint)
    if counters_for is not None:
        counters_for = inert.fio_name(counters_for)
    t = f"{round(shape.phase_seconds * 1000)}ms"
    lines = [
        "[global]",
        "thread",
        "ioengine=psync",
        "fallocate=none",
        "",
    ]

    def files(name: str, engine: str, count: int, name_format: str, snapshot: bool = True
              ) -> None:
        lines.extend([
            f"[{name}]",
            "stonewall",
            *_prerun(counters_for if snapshot else None, name),
            f"directory={mountpoint}/big",
            f"ioengine={engine}",
            "filesize=4k",
            f"nrfiles={count}",
            "openfiles=1",
            "file_service_type=sequential",
            # Names of a realistic length (mail spools, object stores): with 3-byte names the
            # directory stays so small that its block size hardly matters.
            f"filename_format={name_format}",
            "create_on_open=1",
            "",
        ])

    refill = "new.$filenum.host.example.org"
    if part == "changes":
        files("create", "filecreate", shape.directory_entries, NAME.format("$filenum"))
        files("delete", "filedelete", shape.churn_entries, NAME.format("$filenum0"))
        files("refill", "filecreate", shape.churn_entries, refill)
        return "\n".join(lines)
    files("stat", "filestat", shape.churn_entries, refill, snapshot=False)

    def data(name: str, extra: list[str]) -> None:
        for i in range(shape.writers):
            lines.extend([
                f"[{name}.{i}]",
                *(["stonewall", *_prerun(counters_for, name)] if i == 0 else []),
                f"directory={mountpoint}/w{i}",
                *extra,
                "time_based=1",
                f"runtime={t}",
                "",
            ])

    if shape.fsync_phase:
        data("syncwrite", ["rw=write", "bs=4k", "fsync=1", "size=16m", "filename=sync.dat"])
        # One 4 KiB read of each writer's file, just written: what an access time costs
        # (relatime updates it once after a write, noatime never). One job, so the counters'
        # snapshot precedes every read; not timed (no metric), about 0.3 s of fio per side.
        lines.extend([
            "[readback]", "stonewall", *_prerun(counters_for, "readback"),
            f"directory={mountpoint}",
            "filename=" + ":".join(f"w{i}/sync.dat" for i in range(shape.writers)),
            "rw=read", "bs=4k", f"size={4 * shape.writers}k", "file_service_type=sequential",
            "",
        ])
    if shape.sequential_phases:
        data("seqwrite", ["rw=write", "bs=1m", "direct=1", f"size={shape.write_file_bytes}",
                          "filename=seq.dat"])
        data("seqread", ["rw=read", "bs=1m", "direct=1", f"size={shape.read_file_bytes}",
                         "filename=read.dat"])
    return "\n".join(lines)


def pilot_jobfile(mountpoint: str, entries: int = PILOT_ENTRIES) -> str:
    """The pilot's fio job: `entries` creates into one directory (`big`), as the create phase
    makes them. Its rate sizes the run's directory; nothing of it is a sample."""
    mountpoint = inert.fio_name(mountpoint)
    return "\n".join([
        "[global]", "thread", "fallocate=none", "",
        "[create]", f"directory={mountpoint}/big", "ioengine=filecreate", "filesize=4k",
        f"nrfiles={entries}", "openfiles=1", "file_service_type=sequential",
        f"filename_format={NAME.format('$filenum')}", "create_on_open=1", ""])


def pilot_rate(text: str) -> tuple[float, float]:
    """From the pilot's fio JSON: creates per second, and the seconds the creates took."""
    create = next(m for m in METRICS if m.name == "creates_per_s")
    result = parse_fio(text, (create,))
    return result.values["creates_per_s"], result.measuring_seconds


@dataclass(frozen=True)
class RoundResult:
    values: dict[str, float]
    """Metric name -> value."""
    measuring_seconds: float
    """Sum over phases of the longest I/O runtime of a job in the phase."""
    operations: dict[str, float] = field(default_factory=dict)
    """Phase -> I/O operations fio counted in it (reads and writes; for the fsync phase, the
    writes, each followed by an fsync)."""


def _io_runtime(job: dict[str, object]) -> float:
    """Milliseconds of I/O (the longer direction) in one fio job."""
    best = 0.0
    for direction in ("read", "write"):
        d = job.get(direction)
        if isinstance(d, dict):
            best = max(best, float(d.get("runtime", 0) or 0))
    return best


def _ops_per_cpu_second(jobs: list[dict[str, object]]) -> float:
    """Operations of these fio jobs over the CPU seconds their threads used (usr + sys share of
    each job's runtime)."""
    ops = cpu = 0.0
    for job in jobs:
        for direction in ("read", "write"):
            d = job.get(direction)
            if isinstance(d, dict):
                ops += float(d.get("total_ios", 0) or 0)
        share = float(str(job.get("usr_cpu", 0))) + float(str(job.get("sys_cpu", 0)))
        cpu += share / 100.0 * float(str(job.get("job_runtime", 0) or 0)) / 1000.0
    return ops / cpu if cpu > 0 else 0.0


def parse_fio(text: str, metrics: tuple[Metric, ...] = METRICS) -> RoundResult:
    """Metric values from `fio --output-format=json`; ToolProblem when a job failed or is absent."""
    start = text.find("{")
    try:
        doc = json.loads(text[start:]) if start >= 0 else None
    except json.JSONDecodeError:
        doc = None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise ToolProblem("fio printed no JSON result")
    phases: dict[str, list[dict[str, object]]] = {}
    for job in doc["jobs"]:
        name = str(job.get("jobname", ""))
        if job.get("error"):
            raise ToolProblem(f"fio job {name} failed with error {job['error']}")
        phases.setdefault(name.split(".")[0], []).append(job)
    values: dict[str, float] = {}
    operations = {phase: float(sum(
        int(d.get("total_ios", 0) or 0) for job in jobs for direction in ("read", "write")
        if isinstance(d := job.get(direction), dict))) for phase, jobs in phases.items()}
    measuring = 0.0
    counted: set[str] = set()
    for metric in metrics:
        jobs = phases.get(metric.job)
        if not jobs:
            raise ToolProblem(f"fio gave no result for the {metric.job} phase")
        if metric.kind == "dirops_per_cpu":
            total = _ops_per_cpu_second([j for p in CHANGE_PHASES for j in phases.get(p, [])])
            if not math.isfinite(total) or total <= 0:
                raise ToolProblem("fio measured no CPU time in the directory phases")
            values[metric.name] = total
            continue
        total = 0.0
        for job in jobs:
            rate = 0.0
            for direction in ("read", "write"):
                d = job.get(direction)
                if isinstance(d, dict):
                    rate += float(d.get("bw_bytes", 0.0) if metric.kind == "bw"
                                  else d.get("iops", 0.0)) or 0.0
            if metric.kind == "iops_per_cpu":
                busy = (float(str(job.get("usr_cpu", 0))) + float(str(job.get("sys_cpu", 0))))
                rate = rate * 100.0 / busy if busy > 0 else 0.0
            total += rate
        if metric.kind == "bw":
            total /= 1 << 20
        if not math.isfinite(total) or total <= 0:
            raise ToolProblem(f"fio measured nothing in the {metric.job} phase")
        values[metric.name] = total
        if metric.job not in counted:
            # The time fio spent doing the operations (`runtime` per direction), not the job's
            # life: with create_on_open, fio's per-file set-up also runs inside the job.
            counted.add(metric.job)
            measuring += max(_io_runtime(job) for job in jobs) / 1000.0
    return RoundResult(values=values, measuring_seconds=measuring, operations=operations)
