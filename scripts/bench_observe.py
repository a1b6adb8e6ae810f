#!/usr/bin/env python3
"""The cost of `xfs-advisor observe` to the workload it watches: a metadata-heavy fio job run
unobserved and observed, alternating, on one loop-device XFS, in the same run.

    .venv/bin/python scripts/bench_observe.py [--rounds 5] [--files 2000] [--jobs 4]
                                              [--parent /tmp] [--counters-only]

The job: JOBS processes, each creating FILES 4 KiB files (create, write, fsync on close) and
then deleting them: creates, log forces and removes, the events observe counts. Each round runs
the job twice without observe and once with `observe --for 1h` started first (the job starts
once observe says it is observing; observe is then ended with SIGINT, the way a person stops
it). The report gives files per second, the overhead of each round (1 - observed /
unobserved) and, as the noise floor measured in the same run, the difference between the two
unobserved runs (goal: overhead under 2%, which only a host quieter than that floor can show),
and the job's CPU time per file (user + system, from wait4), where the tracepoints' cost is
paid and which the host's other load disturbs less.
Rounds rotate which run goes first, so that a drift of the host's load hits all alike.

Processes are timed here directly, not through advisor.system.runner: the script measures
processes, it is not part of the advisor. The loop device, mount and files are removed at the
end, also on failure or Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import os
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

JOB = """[global]
directory={mnt}
ioengine=psync
rw=write
bs=4k
filesize=4k
nrfiles={files}
openfiles=1
create_on_open=1
fsync_on_close=1
file_service_type=sequential
unlink=1
numjobs={jobs}
group_reporting=1

[meta]
"""


@contextlib.contextmanager
def scratch_xfs(parent: Path) -> Iterator[Path]:
    """A 1 GiB XFS on a loop device over a sparse file, mounted; all removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="bench-observe-", dir=parent) as folder:
        image, mnt = Path(folder, "fs.img"), Path(folder, "mnt")
        with open(image, "wb") as f:
            f.truncate(FS_BYTES)
        dev = subprocess.run(["losetup", "--find", "--show", str(image)], check=True,
                             capture_output=True, text=True).stdout.strip()
        try:
            subprocess.run(["mkfs.xfs", "-q", "-f", dev], check=True)
            mnt.mkdir()
            subprocess.run(["mount", dev, str(mnt)], check=True)
            try:
                yield mnt
            finally:
                subprocess.run(["umount", str(mnt)], check=False)
        finally:
            subprocess.run(["losetup", "-d", dev], check=False)


#: CPU seconds (user + system) of the last job, its processes and their children: the
#: tracepoints' cost is paid in the writers' own system time, which the host's other load
#: disturbs far less than it disturbs wall time.
last_cpu: list[float] = [0.0]


def run_job(jobfile: Path) -> float:
    started = time.perf_counter()
    proc = subprocess.Popen(["fio", "--output=/dev/null", str(jobfile)])
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"fio failed with status {proc.returncode}")
    last_cpu[0] = usage.ru_utime + usage.ru_stime
    return time.perf_counter() - started


def observed_job(jobfile: Path, mnt: Path, counters_only: bool) -> float:
    argv = [sys.executable, "-m", "advisor", "observe", "--for", "1h", str(mnt)]
    if counters_only:
        argv.append("--counters-only")
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            cwd=REPO)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        if "observing" not in line:
            raise SystemExit(f"observe did not start: {line}{proc.stderr.read()}")
        return run_job(jobfile)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--files", type=int, default=2000, help="files per job")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--parent", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--counters-only", action="store_true",
                        help="observe without perf (the counters alone)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (loop devices, mount, perf)")
    files = args.files * args.jobs
    with scratch_xfs(args.parent) as mnt:
        jobfile = mnt.parent / "meta.fio"
        jobfile.write_text(JOB.format(mnt=mnt, files=args.files, jobs=args.jobs))
        run_job(jobfile)  # warm-up: the first run allocates inode chunks the others reuse
        plain: list[float] = []
        again: list[float] = []
        watched: list[float] = []
        cpu: dict[str, list[float]] = {"plain": [], "again": [], "watched": []}
        runs = ("plain", "watched", "again")
        for i in range(args.rounds):
            for which in runs[i % 3:] + runs[:i % 3]:
                if which == "watched":
                    watched.append(files / observed_job(jobfile, mnt, args.counters_only))
                else:
                    (plain if which == "plain" else again).append(files / run_job(jobfile))
                cpu[which].append(1e6 * last_cpu[0] / files)
            print(f"round {i + 1}: unobserved {plain[-1]:,.0f} and {again[-1]:,.0f} files/s, "
                  f"observed {watched[-1]:,.0f} files/s, overhead "
                  f"{1 - 2 * watched[-1] / (plain[-1] + again[-1]):+.1%}, noise "
                  f"{1 - again[-1] / plain[-1]:+.1%}; CPU per file "
                  f"{cpu['plain'][-1]:.0f}/{cpu['again'][-1]:.0f} us unobserved, "
                  f"{cpu['watched'][-1]:.0f} us observed", flush=True)
    overheads = [1 - 2 * w / (p + a) for p, a, w in zip(plain, again, watched, strict=True)]
    noise = [1 - a / p for p, a in zip(plain, again, strict=True)]
    mode = "counters only" if args.counters_only else "counters and tracepoints"
    print(f"observe ({mode}) on {args.jobs} jobs x {args.files} files, {args.rounds} rounds:")
    print(f"  unobserved median {statistics.median(plain + again):,.0f} files/s, observed "
          f"median {statistics.median(watched):,.0f} files/s")
    print(f"  overhead median {statistics.median(overheads):+.1%} (rounds: "
          + ", ".join(f"{o:+.1%}" for o in overheads) + "); goal under 2%")
    print(f"  noise (unobserved vs unobserved) median {statistics.median(noise):+.1%}, "
          f"spread {min(noise):+.1%} to {max(noise):+.1%}")
    base = statistics.median(cpu["plain"] + cpu["again"])
    print(f"  the job's CPU time per file: unobserved median {base:.0f} us, observed median "
          f"{statistics.median(cpu['watched']):.0f} us "
          f"({statistics.median(cpu['watched']) / base - 1:+.1%}); unobserved runs against each "
          f"other {statistics.median(cpu['again']) / statistics.median(cpu['plain']) - 1:+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
