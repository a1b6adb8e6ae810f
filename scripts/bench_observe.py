#!/usr/bin/env python3
"""The cost of `xfs-advisor observe` to the workload it watches: a metadata-heavy fio job run
unobserved and observed in interleaved blocks on one loop-device XFS, in the same run, with a
95% interval on the throughput lost.

    .venv/bin/python scripts/bench_observe.py [--blocks 30] [--max-blocks 120] [--files 1500]
        [--jobs 4] [--parent /dev/shm] [--modes observe] [--baseline DIR] [--no-fsync]
        [--seed 1] [--nice -10]

The job: JOBS processes, each creating FILES 4 KiB files (create, write, fsync on close) in
one directory and then deleting them: creates, transactions, log forces, extent allocations
and removes, the events observe counts (with --no-fsync, no log forces: the job is then
bound by CPU, each file costs less and the tracepoints' share of it is larger: an upper
bound for metadata work). The job is kept shorter than observe's recorded window (its first
10 seconds), so every observed run pays for all of observe's perf processes at once: the
worst case.

Each block runs the job unobserved twice and once under each mode, in an order that cycles
through every order of the block's runs (shuffled once, seeded: --seed), so that each run
holds each place in a block equally often (exactly, with one mode, at every look when --blocks
is a multiple of 6, the orders of 3 runs) and a drift of the host's load hits all alike, at
a raised priority (--nice, the same for the jobs and the observers: perf and observe pay
their cost at the job's priority). Every run starts the same way: the filesystem unmounted
and mounted again (the last run's removed files freed, its log written and its metadata
written back, its inodes dropped from the cache: none of its background work left for the
next run to pay for), then its statistics watched until they hold still for QUIET seconds;
then an observed run starts its observer and waits until it counts; then every run, observed
or not, waits PAUSE seconds, idle, and starts its job. (Settled only by a wait, an unobserved
run started at once paid for the last run's frees, an observed one after observe's start did
not: observed runs came out faster. Settled, a job started at once came out faster than one
started 0.6 s later, idle meanwhile, 6.9% (95% interval -0.2% to 13.9%, 11 blocks), and
observe's start keeps a CPU busy where a plain wait leaves it idle: hence the same idle
pause right before every job. The mode `at-once`, a job started without it, shows that
effect; `counters`, observe's whole start and end with nothing traced, checks that an
observer's start no longer moves the figures: its throughput lost should hold 0.)
- observe: `observe --for 1h` as a person runs it (the job starts once observe says it is
  observing; observe is then ended with SIGINT, the way a person stops it);
- counters: the same with `--counters-only`;
- perf-stat: only observe's `perf stat` (its tracepoints counted in the kernel), as observe
  builds it; its parts alone: stat-events (the EVENTS table), stat-ag-locks (xfs_buf_lock on
  the AG headers, twice, what --ag-locks adds); and stat-per-ag
  (xfs_alloc_vextent_finish counted once per AG, what observe did before it recorded the
  allocations with the writers);
- record-writers: only observe's sliced `perf record` of xfs:xfs_trans_alloc and
  xfs:xfs_alloc_vextent_finish;
- record-attributes: only observe's `perf record` of the attribute sets and log space waits;
- record-every-transaction: `perf record` of every xfs:xfs_trans_alloc (what observe avoids);
- at-once: no observer, the job started without the pause (the effect above);
- baseline: `observe` as another checkout of the advisor runs it (--baseline DIR: its
  `python -m advisor` from DIR), for a before and after in the same blocks.
The perf commands are the ones observe builds (advisor.system.argv), ended with SIGINT.

The bench decides: every --blocks blocks it looks at the first mode's throughput and stops
once the goal is decided (met: the upper bound under 2%; not met: the lower bound over it), or
at --max-blocks. Each look is a chance to be fooled, so the bound it decides by is Pocock's for
the looks planned (--max-blocks / --blocks of them, equally spaced): at 10 looks the mean
+- 2.555 standard errors instead of 1.96, which keeps the chance of a wrong verdict over all
the looks at 5% (Jennison and Turnbull, Group Sequential Methods, table 2.1; by t, not z, for
the few blocks: scaled by t/1.96). The report gives that decision interval and the plain 95%
interval of the blocks done.

Per mode, each block gives the logarithm of the speed ratio, log((files/s of the block's two
unobserved runs, their geometric mean) / (files/s observed)); the report gives its mean over
the blocks and 95% interval (Student's t) as a fraction lost, 1 - exp(-x): the geometric mean
of the blocks' ratios. (Not the mean of 1 - observed/unobserved: a ratio of two noisy speeds
averages above its true value by about their squared coefficient of variation, Jensen's
inequality, so that mean understates the loss; with the two unobserved runs of each block,
the same job twice, it gave -4.07% [-7.56%, -0.59%] at a 21% spread, the logarithms -2.13%
[-5.30%, +1.05%].) The goal (under 2%) is met when the interval's upper bound is under 2%,
not met when its lower bound is above, undecided otherwise. The noise line is the same for
the block's two unobserved runs against each other (its interval should hold 0), and the
order line gives each place in a block's speed against its block's (the order's effect,
which the cycling spreads evenly over the runs).
It also gives the job's CPU time per file and the observer's own CPU (observe or perf, with
its children): where a tracepoint's cost is paid (in the writers' own system time) and what
the host pays in all; and the observer's CPU while the job ran alone (its processes' CPU time
read from /proc at the job's start and end, in milliseconds per second of the job): what it
took from the job's two cores.

Processes are timed here directly, not through advisor.system.runner: the script measures
processes, it is not part of the advisor. The loop device, mount and files are removed at the
end, also on failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import math
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FS_BYTES = 1 << 30
GOAL = 0.02
#: Seconds the filesystem's statistics must hold still before a run starts (settle()).
QUIET = 0.3
#: Seconds settle() waits for that at most (a run then starts anyway, and is counted).
SETTLE_TIMEOUT = 15.0
#: Seconds every job waits, idle, right before it starts (an observed one once its observer
#: counts).
PAUSE = 1.0

JOB = """[global]
directory={mnt}
ioengine=psync
rw=write
bs=4k
filesize=4k
nrfiles={files}
openfiles=1
create_on_open=1
fsync_on_close={fsync}
file_service_type=sequential
unlink=1
numjobs={jobs}
group_reporting=1

[meta]
"""

#: Student's t, two-sided 95%, by degrees of freedom (beyond the table: the normal's 1.96).
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120,
        17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069,
        24: 2.064, 25: 2.060, 26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042,
        40: 2.021, 60: 2.000, 120: 1.980}


def t95(df: int) -> float:
    """The two-sided 95% quantile of Student's t (a conservative step between table rows)."""
    for row in sorted(_T95):
        if df <= row:
            return _T95[row]
    return 1.96


def interval(values: list[float]) -> tuple[float, float, float]:
    """(mean, low, high): the mean and its 95% interval."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, -math.inf, math.inf
    half = t95(len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return mean, mean - half, mean + half


#: Pocock's boundary (z) for K equally spaced looks, two-sided 5% over all of them (Jennison
#: and Turnbull, table 2.1); between rows, the next row up (conservative).
_POCOCK = {1: 1.960, 2: 2.178, 3: 2.289, 4: 2.361, 5: 2.413, 6: 2.453, 7: 2.485, 8: 2.512,
           9: 2.535, 10: 2.555, 11: 2.572, 12: 2.588, 15: 2.626, 20: 2.672}


def pocock(looks: int) -> float:
    """Pocock's z for `looks` planned looks (at most 20)."""
    return next(_POCOCK[row] for row in sorted(_POCOCK) if looks <= row)


def widened(values: list[float], z: float) -> tuple[float, float, float]:
    """The 95% interval of the mean widened to `z` standard errors (by t: scaled t/1.96)."""
    mean, low, _ = interval(values)
    half = (mean - low) * z / 1.96
    return mean, mean - half, mean + half


def _shown(figures: tuple[float, float, float]) -> str:
    mean, low, high = figures
    return f"{mean:+.2%} [{low:+.2%}, {high:+.2%}]"


def lost(logs: list[float], z: float = 1.96) -> tuple[float, float, float]:
    """The fraction lost, 1 - exp(-x), of the mean of per-block log(unobserved / observed)
    and of its interval's ends (95%, or `z` standard errors: the geometric mean of the
    blocks' ratios)."""
    mean, low, high = widened(logs, z)
    return 1 - math.exp(-mean), 1 - math.exp(-low), 1 - math.exp(-high)


def gained(logs: list[float]) -> tuple[float, float, float]:
    """The fraction more, exp(x) - 1, of the mean of per-block log(observed / unobserved)
    and of its 95% interval's ends."""
    mean, low, high = interval(logs)
    return math.exp(mean) - 1, math.exp(low) - 1, math.exp(high) - 1


def verdict(low: float, high: float) -> str:
    """Whether the interval shows the goal: its upper bound under GOAL."""
    if high < GOAL:
        return f"goal shown (upper bound {high:+.2%} < {GOAL:.0%})"
    if low > GOAL:
        return f"goal not met (lower bound {low:+.2%} > {GOAL:.0%})"
    return (f"goal not shown (upper bound {high:+.2%} >= {GOAL:.0%}; the interval holds "
            f"{GOAL:.0%}: undecided)")


@contextlib.contextmanager
def scratch_xfs(parent: Path, mkfs_options: tuple[str, ...] = (),
                size: int = FS_BYTES) -> Iterator[tuple[Path, str]]:
    """An XFS of `size` bytes (1 GiB) on a loop device over a sparse file (mkfs.xfs given
    `mkfs_options`), mounted: (mount point, device); all removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="bench-observe-", dir=parent) as folder:
        image, mnt = Path(folder, "fs.img"), Path(folder, "mnt")
        with open(image, "wb") as f:
            f.truncate(size)
        dev = subprocess.run(["losetup", "--find", "--show", str(image)], check=True,
                             capture_output=True, text=True).stdout.strip()
        try:
            subprocess.run(["mkfs.xfs", "-q", "-f", *mkfs_options, dev], check=True)
            mnt.mkdir()
            subprocess.run(["mount", dev, str(mnt)], check=True)
            try:
                yield mnt, dev
            finally:
                subprocess.run(["umount", str(mnt)], check=False)
        finally:
            subprocess.run(["losetup", "-d", dev], check=False)


MODES = ("observe", "counters", "perf-stat", "stat-events", "stat-per-ag", "stat-ag-locks",
         "record-writers", "record-attributes", "record-every-transaction", "at-once",
         "baseline")

def _background_work(stats: Path) -> list[str]:
    """The filesystem's statistics, all but the log forces: a log force on an idle log writes
    nothing, and something on the host (a sync) asks for one every second or so."""
    lines = []
    for line in stats.read_text().splitlines():
        if line.startswith("log "):
            line = " ".join(line.split()[:4])  # log writes, blocks, noiclogs
        lines.append(line)
    return lines


def settle(mnt: Path, dev: str) -> bool:
    """Have the last run's work done before the next one starts, the same before every run:
    unmount (its removed files freed, its log written, its metadata written back, its inodes
    dropped from the cache) and mount again, then wait until the filesystem's statistics hold
    still for QUIET seconds. False when they did not within SETTLE_TIMEOUT."""
    subprocess.run(["umount", str(mnt)], check=True)
    subprocess.run(["mount", dev, str(mnt)], check=True)
    stats = Path("/sys/fs/xfs", Path(dev).name, "stats", "stats")
    deadline = time.monotonic() + SETTLE_TIMEOUT
    last, since = _background_work(stats), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.02)
        now = _background_work(stats)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= QUIET:
            return True
    return False


def run_job(jobfile: Path) -> tuple[float, float]:
    """Run the job: (wall seconds, CPU seconds of its processes and their children)."""
    started = time.perf_counter()
    proc = subprocess.Popen(["fio", "--output=/dev/null", str(jobfile)])
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except BaseException:  # Ctrl-C: fio ends its jobs on SIGTERM, none left holding the mount
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"fio failed with status {proc.returncode}")
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def _stop(proc: subprocess.Popen[str], group: bool = False) -> float:
    """SIGINT (to its process group when `group`: perf and its sleep, as a terminal's Ctrl-C
    does), then wait: the observer's CPU seconds, its children included."""
    if group:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGINT)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def _perf_command(mode: str, mnt: Path, data: Path) -> list[str]:
    """The perf command observe itself runs for this piece (its own argv builders)."""
    sys.path.insert(0, str(REPO))
    from advisor.observe import observation
    from advisor.observe import tracepoints as tp
    from advisor.system import argv
    from advisor.system.sysroot import SysRoot

    (target,) = observation.resolve([str(mnt)], SysRoot())
    counting = tp.Counting(target.maj_min, 3600,
                           geometry=observation.mkfs_geometry(observation.xfs_info_text(target)))
    flt = tp.device_filter(target.maj_min)
    if mode == "perf-stat":
        return counting.stat_command()
    if mode == "stat-events":
        return argv.perf_stat(list(tp.EVENTS), flt, 3600)
    if mode == "stat-per-ag" and counting.geometry is not None:
        return argv.perf_stat([], flt, 3600, [(tp.AG_EVENT, f"{flt} && agno == {n}")
                                              for n in range(counting.geometry.agcount)])
    if mode == "stat-ag-locks":
        return argv.perf_stat([], flt, 3600, tp.ag_header_filters(flt, counting.geometry))
    if mode == "record-writers":
        return argv.perf_record((tp.WRITER_EVENT, tp.AG_EVENT), flt, str(data), 3600,
                                enabled=tp.writer_slices(tp.WRITER_SECONDS))
    if mode == "record-attributes":
        return argv.perf_record((*tp.ATTRIBUTE_EVENTS, *tp.WAIT_EVENTS), flt, str(data), 3600)
    return argv.perf_record(tp.WRITER_EVENT, flt, str(data), 3600)


def tree_cpu(pid: int) -> float:
    """CPU seconds used so far by a process and every descendant still running (from
    /proc/PID/stat: user and system time, its threads included)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total, pending = 0.0, [pid]
    while pending:
        p = pending.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rpartition(")")[2].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
            for task in Path(f"/proc/{p}/task").iterdir():
                pending += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError, IndexError):
            continue
    return total


def _counting(pid: int) -> bool:
    """perf counts once the child it forked runs `sleep` (it enables the events on the exec)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return any(Path(f"/proc/{c}/comm").read_text().strip() == "sleep" for c in children)
    except OSError:
        return False


def counting_perf(label: str, command: list[str]) -> subprocess.Popen[str]:
    """`command` (a perf stat or record) started in its own session (so that _stop can end it
    and its sleep together), returned once it counts."""
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            text=True, start_new_session=True)
    deadline = time.monotonic() + 30
    while not _counting(proc.pid):
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                _stop(proc, group=True)
            raise SystemExit(f"{label}: perf did not start counting")
        time.sleep(0.005)
    return proc


def observed_job(jobfile: Path, mnt: Path, mode: str,
                 baseline: Path | None) -> tuple[float, float, float, float]:
    """The job under one mode, PAUSE seconds after its observer counts: (wall seconds, job CPU
    seconds, observer CPU seconds, observer CPU seconds while the job ran)."""
    if mode in ("observe", "counters", "baseline"):
        argv = [sys.executable, "-m", "advisor", "observe", "--for", "1h", str(mnt)]
        if mode == "counters":
            argv.append("--counters-only")
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, cwd=baseline if mode == "baseline" else REPO)
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            if "observing" not in line:
                raise SystemExit(f"observe did not start: {line}{proc.stderr.read()}")
            time.sleep(PAUSE)
            before = tree_cpu(proc.pid)
            wall, cpu = run_job(jobfile)
            during = tree_cpu(proc.pid) - before
        finally:
            own = _stop(proc)
            if proc.stderr is not None:
                proc.stderr.close()
        return wall, cpu, own, during
    data = mnt.parent / "observer.data"
    proc = counting_perf(mode, _perf_command(mode, mnt, data))
    try:
        time.sleep(PAUSE)
        before = tree_cpu(proc.pid)
        wall, cpu = run_job(jobfile)
        during = tree_cpu(proc.pid) - before
    finally:
        own = _stop(proc, group=True) if proc.poll() is None else 0.0
        data.unlink(missing_ok=True)
    return wall, cpu, own, during


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=30,
                        help="blocks between two looks at the interval (a multiple of 6: each "
                        "of 3 runs in each place equally often)")
    parser.add_argument("--max-blocks", type=int, default=None,
                        help="blocks at most, looking every --blocks until the goal is decided "
                        "(default: --blocks, one look; at most 20 looks)")
    parser.add_argument("--files", type=int, default=1500, help="files per job")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1, help="of the order within blocks")
    parser.add_argument("--parent", type=Path, default=Path("/dev/shm") if Path(
        "/dev/shm").is_dir() else Path(tempfile.gettempdir()), help="where the loop device's "
        "file goes (default /dev/shm: in memory, the job is bound by CPU, not by a disk other "
        "load shares, and the tracepoints' share of it is the largest)")
    parser.add_argument("--no-fsync", action="store_true",
                        help="no fsync on close: a job bound by CPU (an upper bound)")
    parser.add_argument("--nice", type=int, default=-10,
                        help="the niceness this script, the jobs and the observers run at "
                        "(all alike): other load on a shared host then disturbs them less")
    parser.add_argument("--modes", default="observe",
                        help="comma-separated, among " + ", ".join(MODES) + " (the first "
                        "decides when to stop)")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another checkout of the advisor (`git archive main | tar -x -C "
                        "DIR`): the mode `baseline` runs its observe")
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in MODES for m in modes):
        raise SystemExit(f"--modes: choose among {', '.join(MODES)}")
    if ("baseline" in modes) != (args.baseline is not None):
        raise SystemExit("--baseline DIR and the mode `baseline` go together")
    if args.baseline is not None and not (args.baseline / "advisor" / "__main__.py").is_file():
        raise SystemExit(f"--baseline {args.baseline}: not a checkout of the advisor")
    if args.blocks < 2:
        raise SystemExit("--blocks: at least 2")
    most = max(args.max_blocks or args.blocks, args.blocks) // args.blocks * args.blocks
    if most // args.blocks > max(_POCOCK):
        raise SystemExit(f"--max-blocks: at most {max(_POCOCK)} looks of --blocks each")
    z = pocock(most // args.blocks)
    if os.geteuid() != 0:
        raise SystemExit("needs root (loop devices, mount, perf)")
    os.setpriority(os.PRIO_PROCESS, 0, args.nice)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even started in the background
    files = args.files * args.jobs
    runs = ["unobserved", "unobserved-2", *modes]
    speed: dict[str, list[float]] = {r: [] for r in runs}
    cpu: dict[str, list[float]] = {r: [] for r in runs}
    own: dict[str, list[float]] = {m: [] for m in modes}
    during: dict[str, list[float]] = {m: [] for m in modes}
    walls: list[float] = []
    orders = list(itertools.permutations(runs))
    random.Random(args.seed).shuffle(orders)
    places: list[list[float]] = [[] for _ in runs]
    loads = []
    unsettled = 0
    looks = 0
    with scratch_xfs(args.parent) as (mnt, dev):
        jobfile = mnt.parent / "meta.fio"
        jobfile.write_text(JOB.format(mnt=mnt, files=args.files, jobs=args.jobs,
                                      fsync=0 if args.no_fsync else 1))
        run_job(jobfile)  # warm-up: the first run allocates inode chunks the others reuse
        try:
            for i in range(most):
                block = orders[i % len(orders)]
                for which in block:
                    unsettled += not settle(mnt, dev)
                    if which.startswith("unobserved") or which == "at-once":
                        if which != "at-once":
                            time.sleep(PAUSE)
                        wall, used = run_job(jobfile)
                    else:
                        wall, used, mine, window = observed_job(jobfile, mnt, which,
                                                                args.baseline)
                        own[which].append(1e6 * mine / files)
                        during[which].append(1e3 * window / wall)
                    walls.append(wall)
                    speed[which].append(files / wall)
                    cpu[which].append(1e6 * used / files)
                loads.append(os.getloadavg()[0])
                logs = [math.log(speed[r][-1]) for r in block]
                for place, value in zip(places, logs, strict=True):
                    place.append(value - statistics.fmean(logs))
                base = math.sqrt(speed["unobserved"][-1] * speed["unobserved-2"][-1])
                print(f"block {i + 1} (load {loads[-1]:.1f}): files/s, in the order run: "
                      + ", ".join(f"{r} {speed[r][-1]:,.0f}" for r in block)
                      + "; lost " + ", ".join(f"{m} {1 - speed[m][-1] / base:+.1%}"
                                              for m in modes), flush=True)
                if (i + 1) % args.blocks == 0:
                    looks += 1
                    _, low, high = lost(_lost(speed, modes[0]), z)
                    if high < GOAL or low > GOAL:
                        break
        except KeyboardInterrupt:  # Ctrl-C: the report of the blocks done
            print(f"interrupted: the report of the {len(loads)} blocks done", flush=True)
            for table in (speed, cpu, own, during):
                for values in table.values():
                    del values[len(loads):]
            for place in places:
                del place[len(loads):]
            if len(loads) < 2:
                return 130
    report(args, modes, speed, cpu, own, during, walls, loads, unsettled, places,
           (looks, most // args.blocks, z))
    return 0


def _lost(speed: dict[str, list[float]], mode: str) -> list[float]:
    """Per block, log(unobserved / observed): the unobserved runs' geometric mean against
    `mode`'s speed (positive: `mode` was slower)."""
    return [(math.log(p) + math.log(q)) / 2 - math.log(s)
            for s, p, q in zip(speed[mode], speed["unobserved"], speed["unobserved-2"],
                               strict=True)]


def report(args: argparse.Namespace, modes: list[str], speed: dict[str, list[float]],
           cpu: dict[str, list[float]], own: dict[str, list[float]],
           during: dict[str, list[float]], walls: list[float], loads: list[float],
           unsettled: int, places: list[list[float]], looks: tuple[int, int, float]) -> None:
    taken, planned, z = looks
    blocks = len(loads)
    base_speed = [math.sqrt(p * q) for p, q in zip(speed["unobserved"], speed["unobserved-2"],
                                                    strict=True)]
    base_cpu = statistics.median(cpu["unobserved"] + cpu["unobserved-2"])
    print(f"\n{args.jobs} jobs x {args.files} files"
          f"{' without fsync' if args.no_fsync else ' with fsync'}, {blocks} blocks "
          f"(seed {args.seed}, nice {args.nice}; looked {taken} of {planned} time(s) "
          f"planned, every {args.blocks} blocks), runs of "
          f"{statistics.median(walls):.1f} s (median), load average {min(loads):.1f} to "
          f"{max(loads):.1f} (median {statistics.median(loads):.1f}); unobserved "
          f"{statistics.median(base_speed):,.0f} files/s, {base_cpu:.0f} us of CPU per file")
    if args.baseline is not None:
        print(f"baseline: observe as {args.baseline} runs it")
    print(f"each run started on a filesystem whose statistics held still {QUIET:g} s "
          f"({unsettled} of {len(walls)} did not within {SETTLE_TIMEOUT:g} s), its job "
          f"{PAUSE:g} s after that (an observed one's after its observer counted)")
    print("throughput lost against the block's unobserved runs, geometric mean over the "
          "blocks [95% interval]; goal: under 2%")
    print("and the job's CPU time per file against the block's unobserved runs (where a "
          "tracepoint's cost is paid), geometric mean [95% interval]")
    base_cpus = [math.sqrt(p * q) for p, q in zip(cpu["unobserved"], cpu["unobserved-2"],
                                                   strict=True)]
    noise = [math.log(p / q) for p, q in zip(speed["unobserved"], speed["unobserved-2"],
                                             strict=True)]
    noise_cpu = [math.log(q / p) for p, q in zip(cpu["unobserved"], cpu["unobserved-2"],
                                                 strict=True)]
    print(f"  noise (unobserved against unobserved): {_shown(lost(noise))}; CPU per file "
          f"{_shown(gained(noise_cpu))}")
    print("  order (a place's files/s against its block's, whatever ran there): "
          + ", ".join(f"{n + 1}. {_shown(gained(p))}" for n, p in enumerate(places)))
    for m in modes:
        mean, low, high = lost(_lost(speed, m))
        more_cpu = [math.log(c / b) for c, b in zip(cpu[m], base_cpus, strict=True)]
        theirs = (f"; the observer's own CPU {statistics.median(own[m]) / base_cpu:.0%} of the "
                  f"job's (its start and end included), "
                  f"{statistics.median(during[m]):.0f} ms per second while the job ran "
                  "(median)") if own[m] else ""
        said = (verdict(low, high) if m != "at-once"
                else f"{'holds' if low <= 0 <= high else 'does not hold'} 0")
        if m == modes[0] and m != "at-once":
            decided = lost(_lost(speed, m), z)
            said = (f"by the decision interval {_shown(decided)} (Pocock, {planned} look(s) "
                    f"planned: {z:.3f} standard errors), {verdict(*decided[1:])}")
        print(f"  {m}: {_shown((mean, low, high))}: {said}; CPU per file "
              f"{_shown(gained(more_cpu))}{theirs}")
    if "baseline" in modes and modes[0] != "baseline":
        diff = [b - a for a, b in zip(_lost(speed, modes[0]), _lost(speed, "baseline"),
                                      strict=True)]
        cpu_diff = [math.log(b / a) for a, b in zip(cpu[modes[0]], cpu["baseline"],
                                                    strict=True)]
        print(f"  baseline against {modes[0]} (what {modes[0]} saves, same blocks): "
              f"throughput {_shown(lost(diff))}; CPU per file {_shown(gained(cpu_diff))}")


if __name__ == "__main__":
    sys.exit(main())
