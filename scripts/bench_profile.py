#!/usr/bin/env python3
"""Benchmark `xfs-advisor profile` against `du -s --inodes` on a generated tree, warm cache.

    .venv/bin/python scripts/bench_profile.py [--files 1000000] [--runs 3] [--parent /tmp]
                                              [--baseline DIR]

Builds FILES empty files in /tmp (10 top directories, each 100 directories of FILES/1000 files),
so that one top directory holds a tenth of the tree. Both tools walk the whole tree and one top
directory, alternating, RUNS times each after a warm-up; the report gives the best wall time of
each, their ratio (goal: profile at most 1.2x du's time), the ratio of every du/profile pair, and
the peak RSS (goal: the same at a tenth and at the whole tree), with the load average before and
after. With --baseline DIR (a checkout of an earlier version) its `profile` runs too, in the same
alternation, from DIR's advisor package. The tree is deleted at the end, also on failure or
Ctrl-C.

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

REPO = Path(__file__).resolve().parent.parent
TOP_DIRECTORIES = 10
DIRECTORIES_PER_TOP = 100


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


def measure(argv: list[str], tree: Path = REPO) -> tuple[float, int, str, float]:
    """Wall seconds, peak RSS in KiB, stdout and CPU seconds (user + system: what a busy machine
    moves least) of one run.

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
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        peak = int(rss_file.read().split()[-1]) if gnu_time.exists() else 0
    if proc.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({proc.returncode}): "
                         f"{proc.stderr.decode(errors='replace')}")
    return elapsed, peak, proc.stdout.decode(), cpu


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
            measure(du_argv)  # warm the dentry and inode caches
            du_runs, profile_runs, base_runs = [], [], []
            inodes = 0
            for _ in range(args.runs):
                du_runs.append(measure(du_argv))
                profile_runs.append(measure(profile_argv))
                if baseline is not None:
                    base_runs.append(measure(profile_argv, baseline))
                inodes = int(du_runs[-1][2].split()[0])
                doc = json.loads(profile_runs[-1][2])
                if doc["inodes"] != inodes:
                    raise SystemExit(f"profile counted {doc['inodes']} inodes, du {inodes}")
            # Best of RUNS: on a shared machine a busy neighbour or a dropped cache only ever
            # adds time, so the fastest run is the one closest to "warm cache, quiet machine".
            du_s = min(r[0] for r in du_runs)
            profile_s = min(r[0] for r in profile_runs)
            paired = [p[0] / d[0] for d, p in zip(du_runs, profile_runs, strict=True)]
            results.append({
                "tree": label, "inodes": inodes,
                "du_seconds": round(du_s, 3), "profile_seconds": round(profile_s, 3),
                "ratio": round(profile_s / du_s, 2),
                "du_cpu_seconds": round(min(r[3] for r in du_runs), 3),
                "profile_cpu_seconds": round(min(r[3] for r in profile_runs), 3),
                "cpu_ratio": round(min(r[3] for r in profile_runs)
                                   / max(min(r[3] for r in du_runs), 1e-3), 2),
                "baseline_cpu_seconds": (round(min(r[3] for r in base_runs), 3) if base_runs
                                         else None),
                "paired_ratios": [round(r, 2) for r in paired],
                "profile_entries_per_second": round(inodes / profile_s),
                "du_peak_rss_kib": max(r[1] for r in du_runs),
                "profile_peak_rss_kib": max(r[1] for r in profile_runs),
                "profile_walk_seconds": min(json.loads(r[2])["elapsed_seconds"]
                                            for r in profile_runs),
                "baseline_seconds": round(min(r[0] for r in base_runs), 3) if base_runs else None,
                "baseline_peak_rss_kib": max(r[1] for r in base_runs) if base_runs else None,
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
    print(f"{'tree':<6} {'inodes':>10} {'du s':>7} {'profile s':>10} {'ratio':>6} "
          f"{'walk s':>7} {'du RSS':>9} {'profile RSS':>12}")
    for r in results:
        print(f"{r['tree']:<6} {r['inodes']:>10,} {r['du_seconds']:>7.2f} "
              f"{r['profile_seconds']:>10.2f} {r['ratio']:>5.2f}x "
              f"{r['profile_walk_seconds']:>7.2f} {r['du_peak_rss_kib']:>6,} KiB "
              f"{r['profile_peak_rss_kib']:>8,} KiB")
    for r in results:
        print(f"CPU ({r['tree']}): du {r['du_cpu_seconds']:.2f} s, profile "
              f"{r['profile_cpu_seconds']:.2f} s ({r['cpu_ratio']}x)"
              + (f", baseline {r['baseline_cpu_seconds']:.2f} s" if r["baseline_cpu_seconds"]
                 else ""))
        print(f"paired ratios ({r['tree']}): {', '.join(f'{x}x' for x in r['paired_ratios'])}")
        if r["baseline_seconds"]:
            print(f"baseline {baseline} ({r['tree']}): {r['baseline_seconds']:.2f} s "
                  f"({r['baseline_seconds'] / r['du_seconds']:.2f}x du), peak RSS "
                  f"{r['baseline_peak_rss_kib']:,} KiB; this tree "
                  f"{r['profile_seconds'] / r['baseline_seconds']:.2f}x its time")
    tenth, whole = results[0], results[-1]
    per_inode = [r["du_seconds"] / r["inodes"] for r in (tenth, whole)]
    if per_inode[1] > 3 * per_inode[0]:
        print(f"warning: du needed {per_inode[1] * 1e6:.1f} us per inode on the whole tree but "
              f"{per_inode[0] * 1e6:.1f} on a tenth: the cache was not warm (dropped by another "
              "benchmark?); rerun on a quiet machine")
    print(f"goal: at most 1.2x du -> {'met' if whole['ratio'] <= 1.2 else 'NOT met'} "
          f"({whole['ratio']}x on {whole['inodes']:,} inodes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
