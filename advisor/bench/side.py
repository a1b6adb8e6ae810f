"""One side of one pair, on the run's scratch device: `mkfs.xfs -f -K` behind the guard, mount,
(age), sync, fio (the directory changes), sync, umount and mount again (cold caches for the test
filesystem only: nothing of the host's page cache is dropped and no setting changed), fio (cold
stats, data phases), the counters' figures, `xfs_info` (first time per side), umount. Also the
pilot, which does the same once before the first pair to size the phases."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from advisor.bench import counters, jobs
from advisor.bench.guard import check_now
from advisor.bench.hold import DeviceHold
from advisor.bench.plan import (
    FIO_PHASE_SECONDS,
    MIN_DEVICE_BYTES,
    PILOT_STEPS,
    Pilot,
    Plan,
    Prior,
)
from advisor.bench.resources import Resources, failure
from advisor.errors import DeviceProblem, ToolProblem
from advisor.models.bench import AgeReport, SideConfig
from advisor.system import argv
from advisor.system.cgroup import Isolation
from advisor.system.runner import run
from advisor.system.superblock import read_xfs_uuid

AGE_SEED = 20140501
AGE_FILL = 0.10

#: `on_sample(side, round_index, values)`: one side's metric values of one round (round_index
#: counts pairs from 0), called as soon as that side's fio output has been read.
Sample = Callable[[str, int, dict[str, float]], None]


@dataclass
class Scratch:
    """Where every side runs: the scratch device (held between sides), the run's work folder
    and the mountpoint in it, the ledger that undoes what is made there, fio's cgroup."""

    plan: Plan
    hold: DeviceHold
    res: Resources
    device: str
    work: str
    mnt: str
    isolation: Isolation | None
    counted: str
    """The device's kernel name, whose counters a side reads (advisor.bench.counters)."""
    ours: str | None = None
    """The UUID of the last test filesystem on the device that is this run's (or a killed
    run's): the one XFS the guard lets the next mkfs replace."""


@dataclass(frozen=True)
class JobFiles:
    """fio's job files of every side, written once into the work folder."""

    shape: jobs.Shape
    paths: dict[str, str]
    """Part ("changes", "rest") -> its job file, relative to the work folder (fio's cwd)."""
    timeout: float
    """Seconds one fio run of a side may take."""


@dataclass
class Tally:
    """What the run has measured so far, an earlier run's pairs included."""

    samples: dict[str, dict[str, list[float]]]
    """Metric -> side -> one value per pair."""
    mechanisms: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    """The counters' work per operation (advisor.bench.counters), the same way."""
    infos: dict[str, str] = field(default_factory=dict)
    """Side -> xfs_info of its filesystem (the first pair's)."""
    measuring: float = 0.0
    """Seconds fio measured, over every side."""
    earlier_wall: float = 0.0
    """Wall seconds of the earlier run this one continues."""
    looks: list[int] = field(default_factory=list)
    """The pair counts the stopping rule looked at."""
    age: AgeReport | None = None

    @classmethod
    def start(cls, shape: jobs.Shape, prior: Prior | None) -> Tally:
        """Empty for every metric of `shape`, with what `prior` measured kept."""
        tally = cls(samples={m.name: {"A": [], "B": []} for m in shape.metrics})
        if prior is not None:
            for name, sides in prior.samples.items():
                tally.samples[name] = {k: list(v) for k, v in sides.items()}
            tally.mechanisms = {name: {k: list(v) for k, v in sides.items()}
                                for name, sides in prior.mechanisms.items()}
            tally.infos = dict(prior.infos)
            tally.measuring, tally.earlier_wall, tally.looks = (
                prior.measuring_seconds, prior.wall_seconds, list(prior.looks))
        return tally


def write_jobfiles(scratch: Scratch, shape: jobs.Shape) -> JobFiles:
    """The two job files of a side, in the work folder; DeviceProblem naming the device when
    the shape cannot run on it."""
    paths = {}
    for part in ("changes", "rest"):
        # fio runs in `work`: names relative to it, whatever the loop folder is called.
        paths[part] = f"{part}.fio"
        try:
            text = jobs.jobfile(shape, os.path.basename(scratch.mnt),
                                counters_for=scratch.counted, part=part)
        except ValueError as err:
            raise DeviceProblem(f"{scratch.device}: {err}") from None
        Path(scratch.work, paths[part]).write_text(text, encoding="utf-8")
    return JobFiles(shape=shape, paths=paths,
                    timeout=120 + 20 * shape.phase_seconds + shape.directory_entries / 500)


def measure_side(scratch: Scratch, job: JobFiles, tally: Tally, label: str, index: int,
                 on_sample: Sample | None = None) -> None:
    """Side `label` of pair `index` (from 0), from mkfs to umount; its figures go to `tally`,
    and to `on_sample` as soon as fio's output is read. The device is held again after."""
    plan, res, mnt, shape = scratch.plan, scratch.res, scratch.mnt, job.shape
    side = plan.a if label == "A" else plan.b
    scratch.ours = format_side(scratch.hold, side, side.mkfs_options, scratch.ours,
                               unrecognized_ok=plan.destroy_unrecognized)
    res.made_filesystem(scratch.device)
    res.mount(scratch.device, mnt, side.mount_options)
    if plan.age:
        files = _age(mnt, plan.device_bytes)
        if tally.age is None:
            freesp = run(argv.xfs_spaceman(mnt, "freesp -s"), check=False, timeout=60)
            tally.age = AgeReport(seed=AGE_SEED, files_written=files,
                                  freesp_summary=_parse_freesp(freesp.stdout))
    jobs.prepare(shape, mnt)
    run(argv.sync(), timeout=300)
    for old in Path(scratch.work).glob("counters.*"):  # a missed snapshot must not be reused
        old.unlink()

    def remount() -> None:
        res.umount(mnt)
        res.mount(scratch.device, mnt, side.mount_options)

    measured = fio_round(label, shape, job.paths, scratch.work, job.timeout, scratch.counted,
                         remount, scratch.isolation)
    work_done = counters.mechanism_values(
        scratch.work, jobs.phases(shape),
        {"create": float(shape.directory_entries),
         "delete": float(shape.churn_entries), "refill": float(shape.churn_entries),
         "syncwrite": measured.operations.get("syncwrite", 0.0),
         "seqwrite": measured.operations.get("seqwrite", 0.0),  # 1 MiB writes
         "readback": measured.operations.get("readback", 0.0)})
    work_done.update(counters.writers_in_busiest_ag(scratch.device, mnt, shape.writers))
    for name, value in work_done.items():
        tally.mechanisms.setdefault(name, {"A": [], "B": []})[label].append(value)
    tally.measuring += measured.measuring_seconds
    for name, value in measured.values.items():
        tally.samples[name][label].append(value)
    if on_sample:
        on_sample(label, index, dict(measured.values))
    if label not in tally.infos:
        tally.infos[label] = run(argv.xfs_info(mnt), check=False, timeout=60).stdout
    res.umount(mnt)
    scratch.hold.claim()


def measure_pilot(scratch: Scratch, started: float) -> Pilot:
    """Side A's filesystem made and mounted as a round would, jobs.PILOT_ENTRIES creates by
    fio, sync, umount: this machine's create rate now, and what the steps around fio cost
    (Pilot; `started`: the run's start, for what the set-up spent of the budget)."""
    plan, res, mnt, isolation = scratch.plan, scratch.res, scratch.mnt, scratch.isolation
    began = time.monotonic()
    scratch.ours = format_side(scratch.hold, plan.a, plan.a.mkfs_options, scratch.ours,
                               unrecognized_ok=plan.destroy_unrecognized)
    res.made_filesystem(scratch.device)
    res.mount(scratch.device, mnt, plan.a.mount_options)
    os.mkdir(os.path.join(mnt, "big"))
    run(argv.sync(), timeout=300)
    Path(scratch.work, "pilot.fio").write_text(jobs.pilot_jobfile(os.path.basename(mnt)),
                                               encoding="utf-8")
    fio = argv.fio("pilot.fio")
    result = run(isolation.wrap(fio) if isolation else fio, check=False, timeout=300,
                 cwd=scratch.work)
    if not result.ok:
        raise ToolProblem(f"fio failed in the pilot: {result.first_error_line()}")
    rate, busy = jobs.pilot_rate(result.stdout)
    run(argv.sync(), timeout=300)
    res.umount(mnt)
    scratch.hold.claim()
    besides = max(0.0, time.monotonic() - began - busy)
    overhead = PILOT_STEPS * besides + FIO_PHASE_SECONDS * len(counters.PHASES)
    return Pilot(ops_rate=round(rate, 1), side_overhead=round(overhead, 2),
                 spent=round(time.monotonic() - started, 2))


def fio_round(label: str, shape: jobs.Shape, jobpaths: dict[str, str], work: str,
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


def format_side(hold: DeviceHold, side: SideConfig, options: list[str], ours: str | None, *,
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
