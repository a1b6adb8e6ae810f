#!/usr/bin/env python3
"""Benchmark `xfs-advisor fleet DIR` on many hosts: fixture hosts collected once with the Ansible
role's own collect.sh (over hand-written trees and the real captures of tests/data/sysfs-dumps),
then replicated under other names (hard links: distinct folders, as fetched results are) up to
--hosts. Runs the report with every CPU and with one, and for a tenth of the hosts, each in a
fresh process; prints wall time, hosts/s, the largest process's peak RSS (getrusage of the
children: the report or one of its workers) and the machine's load. Not a test: figures to read.

    .venv/bin/python scripts/bench_fleet.py [--hosts 1000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.fleet_hosts import TOOL, collect  # noqa: E402
from tests.inspect.sysfs_builder import Dev, Part, unpack_dumps, write_tree  # noqa: E402

GiB, TiB, KiB = 1 << 30, 1 << 40, 1 << 10
SAS = "pci0000:00/0000:00:02.0/host2/target2:0:0/2:0:0:0"
NVME = "pci0000:00/0000:00:01.0/0000:01:00.0/nvme/nvme0"

#: name -> (devices to propose for, workload answers)
REQUESTS = {
    "raid": (["sdb"], {"concurrent_writers": 16, "access": "write-heavy"}),
    "nvme": (["nvme0n1"], {"largest_directory_entries": 200000}),
    "simple-lvm": (["sda", "nvme0n1"], {"concurrent_writers": 8}),
    "simple-nvme": (["sdb"], {}),
    "multi-devs-bcachefs": (["sda"], {"fsyncs_per_second": 500}),
}


def _trees(work: Path) -> dict[str, Path]:
    trees = {
        "raid": write_tree(work / "raid", [
            Dev("sda", 480 * GiB, "8:0", devpath=SAS, rotational=0,
                partitions=[Part("sda1", 2048, 1 * GiB), Part("sda2", 2048 + GiB // 512,
                                                              400 * GiB)]),
            Dev("sdb", 16 * TiB, "8:16", devpath=SAS, min_io=64 * KiB, opt_io=512 * KiB,
                write_cache="write through", queue_depth=256)]),
        "nvme": write_tree(work / "nvme", [
            Dev("nvme0n1", 1 * TiB, "259:0", devpath=NVME, rotational=0, fua=1, hw_queues=4,
                scheduler="[none] mq-deadline")]),
    }
    shared = REPO / "tests" / "data" / "sysfs-dumps"
    trees.update(unpack_dumps(shared, work))
    return trees


def _measure(results: Path, jobs: int) -> tuple[float, int, dict[str, int]]:
    """Wall time, peak RSS in KiB of the largest process, the report's counts."""
    code = ("import resource, subprocess, sys, time, json\n"
            "t = time.perf_counter()\n"
            "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "wall = time.perf_counter() - t\n"
            "assert p.returncode == 0, p.stderr\n"
            "counts = json.loads(p.stdout)['counts']\n"
            "print(json.dumps([wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,"
            " counts]))\n")
    out = subprocess.run([sys.executable, "-c", code, str(TOOL), "fleet", "--json", "--jobs",
                          str(jobs), str(results)], check=True, capture_output=True, text=True)
    wall, rss, counts = json.loads(out.stdout)
    return wall, rss, counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--keep", metavar="DIR", help="build the results here and keep them")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-fleet."))
    work.mkdir(parents=True, exist_ok=True)
    try:
        protos = work / "protos"
        made = []
        for name, tree in _trees(work / "trees").items():
            devices, workload = REQUESTS.get(name, ([], {}))
            made.append(collect(protos, name, tree, devices, workload))
        cpus = len(os.sched_getaffinity(0))
        print(f"fixture hosts: {', '.join(p.name for p in made)}; CPUs: {cpus}")
        for n in (args.hosts // 10, args.hosts):
            results = work / f"results-{n}"
            if not results.exists():
                results.mkdir()
                for i in range(n):
                    proto = made[i % len(made)]
                    shutil.copytree(proto, results / f"{proto.name}-{i:05d}", symlinks=True,
                                    copy_function=os.link)
            for jobs in sorted({cpus, 1}, reverse=True):
                load = os.getloadavg()[0]
                wall, rss, counts = _measure(results, jobs)
                print(f"{n:6d} hosts, {jobs} worker(s): {wall:6.1f} s, {n / wall:6.1f} hosts/s, "
                      f"peak RSS {rss / 1024:6.1f} MiB (largest process); load before "
                      f"{load:.1f}, after {os.getloadavg()[0]:.1f}; {counts}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
