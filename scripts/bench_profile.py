#!/usr/bin/env python3
"""Benchmark `xfs-advisor profile` against `du -s --inodes` on a generated tree, warm cache.

    .venv/bin/python scripts/bench_profile.py [--files 1000000] [--runs 3] [--parent /tmp]
                                              [--baseline DIR]

Builds FILES empty files in /tmp (10 top directories, each 100 directories of FILES/1000 files),
so that one top directory holds a tenth of the tree. Both tools walk the whole tree and one top
directory, alternating, RUNS times each after a warm-up; the report gives the best wall time and
the least CPU time (user + system, the forked process of a shared walk included; the user and
system time of that run below it) of each, side by side with their ratios (goal: profile at most
1.2x du's time), the ratios of every du/profile pair, and the peak RSS (goal: the same at a tenth
and at the whole tree), with the load average before and after. CPU time moves less than wall
time when other processes want the CPUs: wall time then also counts the waits for a CPU, and the
two processes of a shared walk run one after the other. With --baseline DIR (a checkout of an
earlier version) its `profile` runs too, in the same alternation, from DIR's advisor package. The
tree is deleted at the end, also on failure or Ctrl-C.

Beside them, in the same alternation, Python's floor: the least a Python walk of the tree costs,
a bare loop that lists each directory by descriptor (os.scandir) and stats each entry once
(DirEntry.stat, a chunk at a time through map, as the walker does), nothing else but finding the
subdirectories; started as `python -c`, without the advisor's imports. Its CPU time against du's
is the ratio no walk in Python can go below: the kernel's work is du's (the same fstatat per
entry), and Python adds the objects of each entry (a DirEntry, a stat_result with its fields).

Each tree's advisor package is compiled first (python -m compileall), as an installed one is:
with PYTHONDONTWRITEBYTECODE set and no __pycache__, every start would compile its modules.

Processes are timed here directly (GNU time gives their peak RSS), not through
advisor.system.runner: the script measures processes, it is not part of the advisor.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TOP_DIRECTORIES = 10
DIRECTORIES_PER_TOP = 100

#: Python's floor (see the module's docstring): prints the entries it saw, the root included. The
#: generated tree has no symlinks, so DirEntry.stat (which follows them) stats each entry itself.
FLOOR = """
import os, stat, sys
from itertools import compress, islice
from operator import itemgetter
lstat, mode = os.DirEntry.stat, itemgetter(0)
stack, entries = [sys.argv[1]], 1
while stack:
    path = stack.pop()
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    with os.scandir(fd) as listing:
        while chunk := list(islice(listing, 512)):
            entries += len(chunk)
            stats = list(map(lstat, chunk))
            stack.extend([path + "/" + entry.name for entry in
                          compress(chunk, map(stat.S_ISDIR, map(mode, stats)))])
    os.close(fd)
print(entries)
"""


def build_tree(root: Path, files: int) -> int:
    per_directory = max(1, files // (TOP_DIRECTORIES * DIRECTORIES_PER_TOP))
    made = 0
    for t in range(TOP_DIRECTORIES):
        for d in range(DIRECTORIES_PER_TOP):
            directory = os.fsencode(root / f"t{t:02d}" / f"d{d:03d}")
            os.makedirs(directory)
            for f in range(per_directory):
                os.mknod(directory + b"/f%06d" % f)
            made += per_directory
    return made


def measure(argv: list[str], tree: Path = REPO
            ) -> tuple[float, int, str, float, float, float]:
    """Wall seconds, peak RSS in KiB, stdout, CPU seconds (user + system: what a busy machine
    moves least), user seconds and system seconds of one run.

    The peak RSS comes from GNU time when it is installed: a child forked straight from this
    Python process would report this process's size as its own peak."""
    gnu_time = Path("/usr/bin/time")
    with tempfile.NamedTemporaryFile("r") as rss_file:
        wrapped = ([str(gnu_time), "-f", "%M", "-o", rss_file.name, *argv]
                   if gnu_time.exists() else argv)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        proc = subprocess.run(wrapped, capture_output=True, cwd=tree,
                              env={**os.environ, "PYTHONPATH": str(tree)})
        elapsed = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        user, system = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
        peak = int(rss_file.read().split()[-1]) if gnu_time.exists() else 0
    if proc.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({proc.returncode}): "
                         f"{proc.stderr.decode(errors='replace')}")
    return elapsed, peak, proc.stdout.decode(), user + system, user, system


def best(runs: list[tuple[float, int, str, float, float, float]]
         ) -> tuple[float, float, float, float]:
    """The least wall time and the least CPU time of `runs` (each may come from another run),
    and the user and system time of the run with the least CPU time."""
    least = min(runs, key=lambda r: r[3])
    return (round(min(r[0] for r in runs), 3), round(least[3], 3), round(least[4], 3),
            round(least[5], 3))


def compile_package(tree: Path) -> None:
    """Write the bytecode of `tree`'s advisor package, as an installed package has it."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "advisor")],
                   check=True, stdout=subprocess.DEVNULL)


def _cell(r: dict[str, Any], tool: str, key: str, ratio: str | None, width: int) -> str:
    """`tool`'s figure of `key` in result `r`, with its ratio to du's when `ratio` names it."""
    shown = f"{r[tool + '_' + key]:>{width}.2f}"
    if ratio is None:
        return shown + " " * 7
    return shown + f" {r[ratio if tool == 'profile' else tool + '_' + ratio]:>5.2f}x"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--parent", default="/tmp", help="where to build the tree (default /tmp)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--baseline", type=Path, metavar="DIR",
                    help="a checkout of an earlier version, measured in the same run")
    args = ap.parse_args()
    baseline = args.baseline.resolve() if args.baseline else None
    load_before = os.getloadavg()[0]

    for tree in (REPO, baseline):
        if tree is not None:
            compile_package(tree)
    root = Path(tempfile.mkdtemp(prefix="bench-profile-", dir=args.parent))
    try:
        t0 = time.perf_counter()
        files = build_tree(root, args.files)
        print(f"built {files:,} files in {time.perf_counter() - t0:.1f} s under {root}",
              file=sys.stderr)
        subprocess.run(["sync"], check=True)
        results = []
        for label, target in (("tenth", root / "t00"), ("whole", root)):
            du_argv = ["du", "-s", "--inodes", str(target)]
            profile_argv = [sys.executable, "-m", "advisor", "profile", "--json", str(target)]
            floor_argv = [sys.executable, "-c", FLOOR, str(target)]
            measure(du_argv)  # warm the dentry and inode caches
            du_runs, profile_runs, floor_runs, base_runs = [], [], [], []
            inodes = 0
            for _ in range(args.runs):
                du_runs.append(measure(du_argv))
                profile_runs.append(measure(profile_argv))
                floor_runs.append(measure(floor_argv))
                if baseline is not None:
                    base_runs.append(measure(profile_argv, baseline))
                inodes = int(du_runs[-1][2].split()[0])
                doc = json.loads(profile_runs[-1][2])
                if doc["inodes"] != inodes:
                    raise SystemExit(f"profile counted {doc['inodes']} inodes, du {inodes}")
                if int(floor_runs[-1][2]) != inodes:
                    raise SystemExit(f"the floor loop saw {floor_runs[-1][2].strip()} entries, "
                                     f"du {inodes}")
            # Best of RUNS: on a shared machine a busy neighbour or a dropped cache only ever
            # adds time, so the fastest run is the one closest to "warm cache, quiet machine".
            du_s, du_cpu, du_user, du_system = best(du_runs)
            profile_s, profile_cpu, profile_user, profile_system = best(profile_runs)
            floor_s, floor_cpu, floor_user, floor_system = best(floor_runs)
            base_s, base_cpu, base_user, base_system = (best(base_runs) if base_runs
                                                        else (None, None, None, None))
            results.append({
                "tree": label, "inodes": inodes,
                "du_seconds": du_s, "profile_seconds": profile_s,
                "ratio": round(profile_s / du_s, 2),
                "du_cpu_seconds": du_cpu, "profile_cpu_seconds": profile_cpu,
                "cpu_ratio": round(profile_cpu / max(du_cpu, 1e-3), 2),
                "du_user_seconds": du_user, "du_system_seconds": du_system,
                "profile_user_seconds": profile_user, "profile_system_seconds": profile_system,
                "floor_seconds": floor_s, "floor_cpu_seconds": floor_cpu,
                "floor_ratio": round(floor_s / du_s, 2),
                "floor_cpu_ratio": round(floor_cpu / max(du_cpu, 1e-3), 2),
                "floor_user_seconds": floor_user, "floor_system_seconds": floor_system,
                "paired_ratios": [round(p[0] / d[0], 2)
                                  for d, p in zip(du_runs, profile_runs, strict=True)],
                "paired_cpu_ratios": [round(p[3] / max(d[3], 1e-3), 2)
                                      for d, p in zip(du_runs, profile_runs, strict=True)],
                "profile_entries_per_second": round(inodes / profile_s),
                "du_peak_rss_kib": max(r[1] for r in du_runs),
                "profile_peak_rss_kib": max(r[1] for r in profile_runs),
                "profile_walk_seconds": min(json.loads(r[2])["elapsed_seconds"]
                                            for r in profile_runs),
                "baseline_seconds": base_s, "baseline_cpu_seconds": base_cpu,
                "baseline_ratio": round(base_s / du_s, 2) if base_s else None,
                "baseline_cpu_ratio": round(base_cpu / max(du_cpu, 1e-3), 2) if base_cpu else None,
                "baseline_peak_rss_kib": max(r[1] for r in base_runs) if base_runs else None,
                "baseline_user_seconds": base_user, "baseline_system_seconds": base_system,
            })
    finally:
        t0 = time.perf_counter()
        subprocess.run(["rm", "-rf", str(root)], check=False)  # rm is faster than shutil.rmtree
        if root.exists():
            shutil.rmtree(root, ignore_errors=True)
        print(f"deleted {root} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)

    load = {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)}
    if args.json:
        print(json.dumps({"load_average": load, "results": results}, indent=2))
        return 0
    print(f"load average: {load['before']} before, {load['after']} after")
    print(f"{'tree':<6} {'inodes':>10} {'':<9} {'du':>7} {'profile':>8} {'ratio':>6}"
          f" {'floor':>7} {'ratio':>6}" + (f" {'baseline':>9} {'ratio':>6}" if baseline else ""))
    for r in results:
        for what, key, ratio in (("wall s", "seconds", "ratio"),
                                 ("CPU s", "cpu_seconds", "cpu_ratio"),
                                 ("  user", "user_seconds", None),
                                 ("  system", "system_seconds", None)):
            print(f"{r['tree']:<6} {r['inodes']:>10,} {what:<9} {r['du_' + key]:>7.2f} "
                  f"{_cell(r, 'profile', key, ratio, 8)} {_cell(r, 'floor', key, ratio, 7)}"
                  + (f" {_cell(r, 'baseline', key, ratio, 9)}" if baseline else ""))
    for r in results:
        print(f"{r['tree']}: paired ratios, wall {', '.join(f'{x}x' for x in r['paired_ratios'])};"
              f" CPU {', '.join(f'{x}x' for x in r['paired_cpu_ratios'])}; walk "
              f"{r['profile_walk_seconds']:.2f} s; peak RSS du {r['du_peak_rss_kib']:,} KiB, "
              f"profile {r['profile_peak_rss_kib']:,} KiB"
              + (f", baseline {r['baseline_peak_rss_kib']:,} KiB" if baseline else ""))
        if r["baseline_seconds"]:
            wall = r["profile_seconds"] / r["baseline_seconds"]
            cpu = r["profile_cpu_seconds"] / r["baseline_cpu_seconds"]
            print(f"{r['tree']}: this tree takes {wall:.2f}x the wall time and {cpu:.2f}x the CPU"
                  f" time of {baseline}")
    tenth, whole = results[0], results[-1]
    per_inode = [r["du_seconds"] / r["inodes"] for r in (tenth, whole)]
    if per_inode[1] > 3 * per_inode[0]:
        print(f"warning: du needed {per_inode[1] * 1e6:.1f} us per inode on the whole tree but "
              f"{per_inode[0] * 1e6:.1f} on a tenth: the cache was not warm (dropped by another "
              "benchmark?); rerun on a quiet machine")
    for what, key in (("wall", "ratio"), ("CPU", "cpu_ratio")):
        print(f"goal: at most 1.2x du's {what} time -> "
              f"{'met' if whole[key] <= 1.2 else 'NOT met'} ({whole[key]}x on "
              f"{whole['inodes']:,} inodes; Python's floor {whole['floor_' + key]}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
