#!/usr/bin/env python3
"""What each transaction pays for observe's record of the writers (xfs:xfs_trans_alloc), by
how it is taken: counted only (`perf stat`), recorded every hit, one in 10, one in 100, every
hit over the first 100 ms of each second (what observe runs: perf enables the event only then).
A process changes one file's mode over and over on a loop-device XFS (each
chmod one transaction and little else), alone and under each perf command, in rounds of a
shuffled order; per round, its CPU time per chmod against its runs alone; over the rounds,
the mean and its 95% interval, in nanoseconds per transaction.

    .venv/bin/python scripts/bench_writers_record.py [--rounds 6] [--chmods 1000000]
        [--parent /dev/shm] [--nice -10]

It tells where the record's cost is: in the records the kernel writes (a sparser sample would
lower it) or in each hit of the enabled tracepoint, sampled or not (only fewer hits would).
With --allocations AGCOUNT (repeatable), it measures instead what each extent allocation pays
for the per-AG split of xfs:xfs_alloc_vextent_finish, on an XFS made with -d agcount=AGCOUNT:
a process allocates 4 KiB extents one at a time (fallocate of the next 4 KiB past the end
of a file, truncated every 2,000), alone and under: the event counted once;
counted once per AG under `agno == N` (the copies observe counted before); recorded over the
writers' slices (what observe runs now); per round, its CPU time per extent allocated (the
filesystem's own count, extent_alloc in its statistics) against its runs alone.

    .venv/bin/python scripts/bench_writers_record.py --allocations 4 --allocations 32
        [--rounds 8] [--extents 200000]

The loop device, mount and files are removed at the end, also on failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
LOOP = """import os, sys
for i in range(int(sys.argv[2])):
    os.chmod(sys.argv[1], 0o600 | (i & 1) << 6)
"""
ALLOCATE = """import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY)
for i in range(int(sys.argv[2])):
    if i % 2000 == 0:
        os.ftruncate(fd, 0)
    os.posix_fallocate(fd, (i % 2000) * 4096, 4096)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--chmods", type=int, default=1_000_000,
                        help="per run: enough for a few seconds, over several slices")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--parent", type=Path, default=Path("/dev/shm") if Path(
        "/dev/shm").is_dir() else Path(tempfile.gettempdir()))
    parser.add_argument("--nice", type=int, default=-10)
    parser.add_argument("--allocations", type=int, action="append", metavar="AGCOUNT",
                        help="measure the per-AG allocation count on this many AGs instead")
    parser.add_argument("--extents", type=int, default=200_000,
                        help="extents allocated per run (--allocations)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (loop devices, mount, perf)")
    sys.path[:0] = [str(REPO), str(REPO / "scripts")]
    if args.allocations:
        os.setpriority(os.PRIO_PROCESS, 0, args.nice)
        for agcount in args.allocations:
            allocations(args, agcount)
        return 0
    import bench_observe as bench

    from advisor.observe import tracepoints as tp
    from advisor.system import argv

    os.setpriority(os.PRIO_PROCESS, 0, args.nice)
    arms = ["alone", "alone-2", "counted", "every hit", "one in 10", "one in 100",
            "slices (observe)"]
    ns: dict[str, list[float]] = {a: [] for a in arms}
    with bench.scratch_xfs(args.parent) as (mnt, dev):
        target = mnt / "f"
        target.write_text("x")
        rdev = os.stat(dev).st_rdev
        flt = tp.device_filter(f"{os.major(rdev)}:{os.minor(rdev)}")
        data = str(mnt.parent / "writers.data")
        commands = {"counted": argv.perf_stat([tp.WRITER_EVENT], flt, 3600),
                    "every hit": argv.perf_record(tp.WRITER_EVENT, flt, data, 3600, 1),
                    "one in 10": argv.perf_record(tp.WRITER_EVENT, flt, data, 3600, 10),
                    "one in 100": argv.perf_record(tp.WRITER_EVENT, flt, data, 3600, 100),
                    "slices (observe)": argv.perf_record(tp.WRITER_EVENT, flt, data, 3600,
                                                         enabled=tp.writer_slices(3600))}
        order = random.Random(args.seed)
        for _ in range(args.rounds):
            for arm in order.sample(arms, len(arms)):
                perf = bench.counting_perf(arm, commands[arm]) if arm in commands else None
                try:
                    loop = subprocess.Popen([sys.executable, "-c", LOOP, str(target),
                                             str(args.chmods)])
                    _, status, usage = os.wait4(loop.pid, 0)
                finally:
                    if perf is not None and perf.poll() is None:
                        bench._stop(perf, group=True)
                    Path(data).unlink(missing_ok=True)
                if os.waitstatus_to_exitcode(status):
                    raise SystemExit("the chmod loop failed")
                ns[arm].append(1e9 * (usage.ru_utime + usage.ru_stime) / args.chmods)
    alone = [(p + q) / 2 for p, q in zip(ns["alone"], ns["alone-2"], strict=True)]
    print(f"{args.rounds} rounds of {args.chmods:,} chmods, load average "
          f"{os.getloadavg()[0]:.1f}; alone {statistics.median(alone):,.0f} ns of CPU per "
          "chmod (one transaction each)")
    _print_arms(bench, "more CPU per transaction", ns, arms, alone)
    return 0


def _print_arms(bench: Any, title: str, ns: dict[str, list[float]], arms: list[str],
                alone: list[float]) -> None:
    """Each arm's ns more than the rounds' two runs alone, mean [95% interval], after the
    noise (alone against alone)."""
    print(f"{title}, ns, mean [95% interval]:")
    noise = [q - p for p, q in zip(ns["alone"], ns["alone-2"], strict=True)]
    mean, low, high = bench.interval(noise)
    print(f"  alone against alone (noise): {mean:+,.0f} [{low:+,.0f}, {high:+,.0f}]")
    for arm in arms[2:]:
        mean, low, high = bench.interval([c - a for c, a in zip(ns[arm], alone, strict=True)])
        print(f"  {arm}: {mean:+,.0f} [{low:+,.0f}, {high:+,.0f}]")


def allocations(args: argparse.Namespace, agcount: int) -> None:
    """The allocation loop alone and under each way of taking the AGs' split, on `agcount`
    AGs; prints CPU per extent allocated, more than alone, mean [95% interval]."""
    import bench_observe as bench

    from advisor.observe import tracepoints as tp
    from advisor.system import argv

    arms = ["alone", "alone-2", "counted once", f"counted per AG ({agcount} copies)",
            "recorded in the slices"]
    ns: dict[str, list[float]] = {a: [] for a in arms}
    # 4 GiB, sparse: 32 AGs of 128 MiB, each room for the 64 MiB log mkfs.xfs insists on
    with bench.scratch_xfs(args.parent, ("-d", f"agcount={agcount}"), 4 << 30) as (mnt, dev):
        rdev = os.stat(dev).st_rdev
        flt = tp.device_filter(f"{os.major(rdev)}:{os.minor(rdev)}")
        stats = Path(f"/sys/fs/xfs/{Path(os.path.realpath(dev)).name}/stats/stats")
        data = str(mnt.parent / "allocations.data")
        commands = {
            arms[2]: argv.perf_stat([], flt, 3600, [(tp.AG_EVENT, flt)]),
            arms[3]: argv.perf_stat([], flt, 3600, [
                (tp.AG_EVENT, f"{flt} && agno == {n}") for n in range(agcount)]),
            arms[4]: argv.perf_record(tp.AG_EVENT, flt, data, 3600,
                                      enabled=tp.writer_slices(3600))}
        order = random.Random(args.seed)
        for _ in range(args.rounds):
            for arm in order.sample(arms, len(arms)):
                perf = bench.counting_perf(arm, commands[arm]) if arm in commands else None
                before = _extents(stats)
                try:
                    loop = subprocess.Popen([sys.executable, "-c", ALLOCATE, str(mnt / "f"),
                                             str(args.extents)])
                    _, status, usage = os.wait4(loop.pid, 0)
                finally:
                    if perf is not None and perf.poll() is None:
                        bench._stop(perf, group=True)
                    Path(data).unlink(missing_ok=True)
                if os.waitstatus_to_exitcode(status):
                    raise SystemExit("the allocation loop failed")
                extents = _extents(stats) - before
                ns[arm].append(1e9 * (usage.ru_utime + usage.ru_stime) / max(extents, 1))
    alone = [(p + q) / 2 for p, q in zip(ns["alone"], ns["alone-2"], strict=True)]
    print(f"agcount {agcount}: {args.rounds} rounds of {args.extents:,} extent allocations, "
          f"load average {os.getloadavg()[0]:.1f}; alone {statistics.median(alone):,.0f} ns "
          "of CPU per extent allocated")
    _print_arms(bench, "more CPU per extent allocated", ns, arms, alone)
    per_ag = [c - o for c, o in zip(ns[arms[3]], ns[arms[2]], strict=True)]
    mean, low, high = bench.interval(per_ag)
    print(f"  per AG against once, same rounds: {mean:+,.0f} [{low:+,.0f}, {high:+,.0f}]")


def _extents(stats: Path) -> int:
    """Extents the filesystem allocated so far (extent_alloc's first figure)."""
    for line in stats.read_text().splitlines():
        if line.startswith("extent_alloc "):
            return int(line.split()[1])
    raise SystemExit(f"no extent_alloc in {stats}")


if __name__ == "__main__":
    sys.exit(main())
