#!/usr/bin/env python3
"""The cost of `xfs-advisor observe` to the workload it watches: a metadata-heavy fio job run
unobserved and observed, alternating, on one loop-device XFS, in the same run.

    .venv/bin/python scripts/bench_observe.py [--rounds 5] [--files 2000] [--jobs 4]
        [--parent /tmp] [--modes observe,counters,perf-stat,perf-record,perf-record-sampled]
        [--no-fsync]

The job: JOBS processes, each creating FILES 4 KiB files (create, write, fsync on close) and
then deleting them: creates, log forces and removes, the events observe counts (with
--no-fsync, no log forces: the job is then bound by CPU, not by the device, each file costs
less, and the tracepoints' share of it is larger, so that figure is an upper bound for
metadata work; runs are short and many rounds fit). Each round runs
the job twice unobserved and once under each mode:
- observe: `observe --for 1h` as a person runs it (the job starts once observe says it is
  observing; observe is then ended with SIGINT, the way a person stops it);
- counters: the same with `--counters-only`;
- perf-stat: only observe's `perf stat` (its tracepoints counted in the kernel);
- perf-record: only the writer stream, `perf record` of xfs:xfs_trans_alloc, every hit;
- perf-record-sampled: the same, one hit in observe's sample period (`--no-period --count N`).
The perf commands are the ones observe builds (advisor.system.argv), ended with SIGINT.

The report gives, per mode, the job's CPU time per file (user + system, from wait4: where a
tracepoint's cost is paid, in the writers' own system time) against the unobserved runs', the
observer's own CPU time per file (observe or perf, with its children), files per second and
the overhead of each round (1 - observed / unobserved), and, as the noise floor measured in the
same run, the difference between the two unobserved runs. On a busy host throughput is lost in
that noise; CPU time is the steadier measure, and job + observer CPU is what the host pays.
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
fsync_on_close={fsync}
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


MODES = ("observe", "counters", "perf-stat", "perf-record", "perf-record-sampled")


def run_job(jobfile: Path) -> tuple[float, float]:
    """Run the job: (wall seconds, CPU seconds of its processes and their children)."""
    started = time.perf_counter()
    proc = subprocess.Popen(["fio", "--output=/dev/null", str(jobfile)])
    _, status, usage = os.wait4(proc.pid, 0)
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
    sys.path.insert(0, str(REPO))
    from advisor.observe import tracepoints as tp
    from advisor.system import argv

    st = os.stat(mnt)
    flt = tp.device_filter(f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if mode == "perf-stat":
        return argv.perf_stat(list(tp.EVENTS), flt, 3600)
    period = tp.WRITER_PERIOD if mode == "perf-record-sampled" else 1
    return argv.perf_record(tp.WRITER_EVENT, flt, str(data), 3600, period)


def _counting(pid: int) -> bool:
    """perf counts once the child it forked runs `sleep` (it enables the events on the exec)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return any(Path(f"/proc/{c}/comm").read_text().strip() == "sleep" for c in children)
    except OSError:
        return False


def observed_job(jobfile: Path, mnt: Path, mode: str) -> tuple[float, float, float]:
    """The job under one mode: (wall seconds, job CPU seconds, observer CPU seconds)."""
    if mode in ("observe", "counters"):
        argv = [sys.executable, "-m", "advisor", "observe", "--for", "1h", str(mnt)]
        if mode == "counters":
            argv.append("--counters-only")
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, cwd=REPO)
        try:
            assert proc.stderr is not None
            line = proc.stderr.readline()
            if "observing" not in line:
                raise SystemExit(f"observe did not start: {line}{proc.stderr.read()}")
            wall, cpu = run_job(jobfile)
        finally:
            own = _stop(proc)
            proc.stderr.close()
        return wall, cpu, own
    data = mnt.parent / "writers.data"
    proc = subprocess.Popen(_perf_command(mode, mnt, data), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not _counting(proc.pid):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{mode}: perf did not start counting")
            time.sleep(0.005)
        wall, cpu = run_job(jobfile)
    finally:
        own = _stop(proc, group=True) if proc.poll() is None else 0.0
        data.unlink(missing_ok=True)
    return wall, cpu, own


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--files", type=int, default=2000, help="files per job")
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--parent", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--no-fsync", action="store_true",
                        help="no fsync on close: a job bound by CPU (an upper bound)")
    parser.add_argument("--modes", default="observe",
                        help="comma-separated, among " + ", ".join(MODES))
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in MODES for m in modes):
        raise SystemExit(f"--modes: choose among {', '.join(MODES)}")
    if os.geteuid() != 0:
        raise SystemExit("needs root (loop devices, mount, perf)")
    files = args.files * args.jobs
    runs = ["plain", *modes, "again"]
    speed: dict[str, list[float]] = {r: [] for r in runs}
    cpu: dict[str, list[float]] = {r: [] for r in runs}
    own: dict[str, list[float]] = {m: [] for m in modes}
    own_seconds: dict[str, list[float]] = {m: [] for m in modes}
    with scratch_xfs(args.parent) as mnt:
        jobfile = mnt.parent / "meta.fio"
        jobfile.write_text(JOB.format(mnt=mnt, files=args.files, jobs=args.jobs,
                                      fsync=0 if args.no_fsync else 1))
        run_job(jobfile)  # warm-up: the first run allocates inode chunks the others reuse
        for i in range(args.rounds):
            shift = i % len(runs)
            for which in runs[shift:] + runs[:shift]:
                if which in ("plain", "again"):
                    wall, used = run_job(jobfile)
                else:
                    wall, used, mine = observed_job(jobfile, mnt, which)
                    own[which].append(1e6 * mine / files)
                    own_seconds[which].append(mine)
                speed[which].append(files / wall)
                cpu[which].append(1e6 * used / files)
            print(f"round {i + 1} (load {os.getloadavg()[0]:.1f}): CPU per file "
                  + ", ".join(f"{r} {cpu[r][-1]:.0f}" for r in runs) + " us; files/s "
                  + ", ".join(f"{r} {speed[r][-1]:,.0f}" for r in runs), flush=True)
    base = statistics.median(cpu["plain"] + cpu["again"])
    noise_cpu = statistics.median(cpu["again"]) / statistics.median(cpu["plain"]) - 1
    noise = [1 - a / p for p, a in zip(speed["plain"], speed["again"], strict=True)]
    print(f"{args.jobs} jobs x {args.files} files{' without fsync' if args.no_fsync else ''}, "
          f"{args.rounds} rounds, load average "
          f"{os.getloadavg()[0]:.1f} at the end (`uptime`); goal: under 2%")
    print(f"  unobserved: the job's CPU time per file median {base:.0f} us; unobserved against "
          f"unobserved {noise_cpu:+.1%}; files/s median "
          f"{statistics.median(speed['plain'] + speed['again']):,.0f} (noise median "
          f"{statistics.median(noise):+.1%}, {min(noise):+.1%} to {max(noise):+.1%})")
    for m in modes:
        job = statistics.median(cpu[m])
        mine = statistics.median(own[m])
        overheads = [1 - 2 * w / (p + a)
                     for p, a, w in zip(speed["plain"], speed["again"], speed[m], strict=True)]
        print(f"  {m}: the job's CPU per file {job:.0f} us ({job / base - 1:+.1%}); the "
              f"observer's own CPU {statistics.median(own_seconds[m]):.2f} s per run "
              f"({mine:.1f} us per file, {mine / base:+.1%} of the job's); together "
              f"{(job + mine) / base - 1:+.1%}; files/s overhead median "
              f"{statistics.median(overheads):+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
