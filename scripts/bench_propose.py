#!/usr/bin/env python3
"""Cold start of `xfs-advisor --json --device DEV --workload FILE`, with a breakdown.

Each run is a fresh interpreter (what a script or a fleet tool pays). The breakdown comes from
the document's extra.timings_ms (asked for with --timings); "startup" is the wall time before the
command starts (the interpreter, the CLI's imports, building the parser). Goal: under 300 ms in
total. CPU time (user + system, children included: mkfs.xfs) is printed too: on a busy machine it
moves less than wall time does.

    .venv/bin/python scripts/bench_propose.py [--device vda] [--runs 10]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORKLOAD = REPO / "advisor" / "data" / "example-workload.toml"
HOST_FILE = REPO / "tests" / "engine" / "data" / "hosts" / "nvme-100g.json"
PHASES = ("imports", "inspection", "environment", "rules", "defaults_check", "engine",
          "proposal_check")


def bench(label: str, argv: list[str], runs: int) -> float:
    walls: list[float] = []
    cpus: list[float] = []
    phases: dict[str, list[float]] = {p: [] for p in (*PHASES, "startup")}
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO)
        wall = (time.perf_counter() - start) * 1000
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
        if proc.returncode != 0:
            sys.exit(f"{label}: exit {proc.returncode}: {proc.stderr.strip()}")
        timings = json.loads(proc.stdout)["extra"]["timings_ms"]
        walls.append(wall)
        for p in PHASES:
            phases[p].append(timings.get(p, 0.0))
        phases["startup"].append(wall - timings["total"])
    median = statistics.median(walls)
    print(f"{label}: median {median:.0f} ms, min {min(walls):.0f}, max {max(walls):.0f} "
          f"({runs} cold runs; CPU time median {statistics.median(cpus):.0f} ms, "
          f"load average {os.getloadavg()[0]:.1f})")
    for p in ("startup", *PHASES):
        print(f"  {p:<15} {statistics.median(phases[p]):7.1f} ms")
    return median


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", help="a live device to inspect (read only; default: the "
                        "first disk in /sys/block that is not a loop device)")
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    exe = shutil.which("xfs-advisor", path=str(REPO / ".venv" / "bin")) or "xfs-advisor"
    device = args.device or next((p.name for p in sorted(Path("/sys/block").iterdir())
                                  if not p.name.startswith(("loop", "ram", "zram"))), None)
    worst = bench("device file", [exe, "--json", "--timings", "--device-file", str(HOST_FILE),
                                  "--workload", str(WORKLOAD)], args.runs)
    if device:
        worst = max(worst, bench(f"live --device {device}",
                                 [exe, "--json", "--timings", "--device", device, "--workload",
                                  str(WORKLOAD)], args.runs))
    print(f"goal < 300 ms: {'met' if worst < 300 else 'NOT met'} (worst median {worst:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
