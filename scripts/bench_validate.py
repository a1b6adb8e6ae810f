#!/usr/bin/env python3
"""Does `xfs-advisor validate` decide, and how fast, beside the tests people run by hand? (root,
loop devices, many minutes; run it on a busy machine: that is the condition it is for)

Interleaved in one period, per repetition and case, the three methods on the same planted
effects:
- the tool: `validate --json` with the case's options and workload at its default settings
  (rounds, budget, margins); its decision is each option's pre-declared primary metric (the
  mechanism counter its rule names, else CPU time per directory create), and for the fsync case
  also its throughput verdict on fsync'd writes;
- Welch: a hand-made Welch t-test on unpaired fio runs (RUNS per side, A and B alternating,
  each a fresh mkfs, mount, one fio job of the case's operation, umount), two-sided at 0.05; for
  the no-effect cases "correct" needs equivalence within +-5% shown (two one-sided Welch tests);
- trimmed mean: seed 002's method on the same runs (5 per side, drop the highest and lowest,
  compare the means of the middle three, call a difference beyond 5%).

Cases: `-n size=64k` on a 50,000-entry create-heavy directory (truth: creates worse),
`logbsize=256k` against the default on an fsync-heavy workload (truth: fewer log writes per
directory operation; the fsync rate is lower here), a no-effect change (`-i maxpct=5`) and A/A.
Prints correct / wrong / undecided per method and case, time to verdict, correct decisions per
10 minutes, and the machine's load. Then (unless --default-runs 0) the embedded default
(`validate` with no arguments) N times: wall time to its decided verdict.

    sudo .venv/bin/python scripts/bench_validate.py [--reps 3] [--default-runs 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from advisor.bench.stats import t_cdf  # noqa: E402

RUNS = 5
CREATE_HEAVY = ("--largest-directory-entries", "50000", "--concurrent-writers", "1",
                "--fsyncs-per-second", "0", "--median-file-size", "4KiB")
FSYNC_HEAVY = ("--largest-directory-entries", "5000", "--concurrent-writers", "4",
               "--fsyncs-per-second", "2000", "--median-file-size", "4KiB")
CREATE_JOB = """[global]
thread
fallocate=none
[create]
directory={mnt}/big
ioengine=filecreate
filesize=4k
nrfiles={files}
openfiles=1
file_service_type=sequential
filename_format=msg.$filenum.host.example.org
create_on_open=1
"""
FSYNC_JOB = """[global]
thread
ioengine=psync
fallocate=none
group_reporting=1
[syncwrite]
directory={mnt}
rw=write
bs=4k
fsync=1
size=16m
numjobs=4
time_based=1
runtime=2s
"""
#: case: (validate options, workload, hand mkfs options, hand mount options, fio job, files,
#: truth): truth "worse"/"fewer" or "none".
CASES: dict[str, dict[str, Any]] = {
    "n-size-64k": {"args": ("--mkfs-options", "-n size=64k", *CREATE_HEAVY),
                   "mkfs": ["-n", "size=64k"], "mount": [], "job": CREATE_JOB, "files": 50000,
                   "truth": "worse"},
    "logbsize-256k": {"args": ("--mount-options", "logbsize=256k", *FSYNC_HEAVY),
                      "mkfs": [], "mount": ["logbsize=256k"], "job": FSYNC_JOB, "files": 0,
                      "truth": "worse"},
    "no-effect": {"args": ("--mkfs-options", "-i maxpct=5", *CREATE_HEAVY),
                  "mkfs": ["-i", "maxpct=5"], "mount": [], "job": CREATE_JOB, "files": 50000,
                  "truth": "none"},
    "a-a": {"args": ("--mount-options", "", *CREATE_HEAVY), "mkfs": [], "mount": [],
            "job": CREATE_JOB, "files": 50000, "truth": "none"},
}


def sh(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def load() -> float:
    return round(os.getloadavg()[0], 2)


# ---- the tool ------------------------------------------------------------------------------

def tool(case: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "advisor", "validate", "--json", *case["args"]],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=900)
    wall = time.monotonic() - started
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"decision": "failed", "wall_s": round(wall, 1),
                "error": proc.stderr.strip().splitlines()[-1:] or ["?"]}
    figures = report["metrics"] + report["mechanisms"]
    primary = [m for m in figures if m["primary_for"]]
    words = {m["verdict"] for m in primary}
    if case["truth"] == "none":
        decision = ("wrong" if words & {"better", "worse"} else
                    "correct" if words == {"equivalent"} else "undecided")
    else:
        # The planted change: its primary metric moved the way the change does (less CPU-time
        # efficiency per create; fewer log writes per directory operation).
        want = {"creates_per_cpu_s": "worse", "dirops_per_cpu_s": "worse",
                "log_writes_per_1k_dirops": "better"}
        got = [m["verdict"] for m in primary if m["name"] in want]
        decision = ("correct" if got and all(v == want[m["name"]] for m, v in zip(
            [m for m in primary if m["name"] in want], got, strict=True)) else
            "wrong" if any(v in ("better", "worse") for v in got) else "undecided")
    by_name = {m["name"]: m for m in figures}
    fsync = by_name.get("fsync_writes_per_s")
    return {"decision": decision, "wall_s": round(wall, 1), "pairs": report["rounds"],
            "stopped": report["stopping"]["reason"],
            "primary": {m["name"]: [m["ratio"], m["ci"], m["verdict"], m["decided_after"]]
                        for m in primary},
            "fsync_verdict": fsync["verdict"] if fsync else None,
            "fsync_ratio": fsync["ratio"] if fsync else None,
            "load": report["environment"].get("load_average"), "summary": report["summary"]}


# ---- by hand: unpaired fio runs ------------------------------------------------------------

def hand_runs(case: dict[str, Any], folder: str) -> tuple[list[float], list[float], float]:
    """RUNS fio runs per side, alternating A and B, each on a fresh filesystem."""
    img = os.path.join(folder, "hand.img")
    mnt = os.path.join(folder, "mnt")
    os.makedirs(mnt, exist_ok=True)
    sh("fallocate", "-l", "4G", img)
    dev = sh("losetup", "-f", "--show", "--direct-io=on", img).strip()
    job = os.path.join(folder, "hand.fio")
    Path(job).write_text(case["job"].format(mnt=mnt, files=case["files"]), encoding="utf-8")
    a: list[float] = []
    b: list[float] = []
    started = time.monotonic()
    try:
        for i in range(2 * RUNS):
            side_b = i % 2 == 1
            sh("mkfs.xfs", "-q", "-f", "-K", *(case["mkfs"] if side_b else []), dev)
            mount = ["mount"] + (["-o", ",".join(case["mount"])]
                                 if side_b and case["mount"] else [])
            sh(*mount, dev, mnt)
            try:
                if case["files"]:
                    os.mkdir(os.path.join(mnt, "big"))
                out = sh("fio", "--output-format=json", job)
            finally:
                sh("umount", mnt)
            doc = json.loads(out[out.find("{"):])
            iops = sum(j["write"]["iops"] + j["read"]["iops"] for j in doc["jobs"])
            (b if side_b else a).append(iops)
    finally:
        subprocess.run(["umount", mnt], capture_output=True, check=False)
        subprocess.run(["losetup", "-d", dev], capture_output=True, check=False)
        os.unlink(img)
    return a, b, time.monotonic() - started


def welch(a: Sequence[float], b: Sequence[float], shift: float = 0.0) -> tuple[float, float]:
    """Welch's t of mean(b) - mean(a) - shift, and its degrees of freedom."""
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    se = math.sqrt(va + vb) or 1e-12
    df = (va + vb) ** 2 / ((va * va) / (len(a) - 1) + (vb * vb) / (len(b) - 1) or 1e-12)
    return (statistics.mean(b) - statistics.mean(a) - shift) / se, df


def welch_decision(a: list[float], b: list[float], truth: str) -> str:
    t, df = welch(a, b)
    p = 2 * (1 - t_cdf(abs(t), df))
    if truth == "none":
        if p < 0.05:
            return "wrong"
        m = 0.05 * statistics.mean(a)  # TOST: both one-sided tests at 0.05 show |diff| < 5%
        lo_t, lo_df = welch(a, b, -m)
        hi_t, hi_df = welch(a, b, m)
        equivalent = (1 - t_cdf(lo_t, lo_df)) < 0.05 and t_cdf(hi_t, hi_df) < 0.05
        return "correct" if equivalent else "undecided"
    if p >= 0.05:
        return "undecided"
    return "correct" if t < 0 else "wrong"  # the planted cases are slower on B


def trimmed_decision(a: list[float], b: list[float], truth: str) -> str:
    def trimmed(x: list[float]) -> float:
        return statistics.mean(sorted(x)[1:-1])

    ratio = trimmed(b) / trimmed(a)
    called = abs(ratio - 1) > 0.05
    if truth == "none":
        return "wrong" if called else "correct"
    return ("correct" if ratio < 1 else "wrong") if called else "undecided"


# ---- the comparison ------------------------------------------------------------------------

def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--reps", type=int, default=3, help="repetitions of every case (default 3)")
    p.add_argument("--cases", default=",".join(CASES), help="comma-separated cases")
    p.add_argument("--default-runs", type=int, default=5,
                   help="runs of the embedded default afterwards (default 5)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = p.parse_args()
    if os.geteuid() != 0:
        print("bench_validate: needs root (loop devices, mkfs, mount)", file=sys.stderr)
        return 2
    rows: list[dict[str, Any]] = []
    folder = os.environ.get("TMPDIR") or "/var/tmp"
    for rep in range(args.reps):
        for name in args.cases.split(","):
            case = CASES[name]
            with tempfile.TemporaryDirectory(prefix="bench-validate-", dir=folder) as tmp:
                env = {**os.environ,
                       "XFS_ADVISOR_CALIBRATION": str(Path(tmp, "calibration.json")),
                       "XFS_ADVISOR_STATE_DIR": str(Path(tmp, "state")), "TMPDIR": tmp}
                order = ("tool", "hand") if rep % 2 == 0 else ("hand", "tool")
                for method in order:
                    before = load()
                    if method == "tool":
                        got = tool(case, env)
                        rows.append({"rep": rep, "case": name, "method": "tool",
                                     "load_before": before, **got})
                    else:
                        a, b, wall = hand_runs(case, tmp)
                        for label, decide in (("welch", welch_decision),
                                              ("trimmed-mean", trimmed_decision)):
                            rows.append({"rep": rep, "case": name, "method": label,
                                         "decision": decide(a, b, case["truth"]),
                                         "wall_s": round(wall, 1), "load_before": before,
                                         "ratio": round(statistics.mean(b)
                                                        / statistics.mean(a), 3)})
                    print(json.dumps(rows[-1] if method == "tool" else rows[-2:]),
                          file=sys.stderr, flush=True)
    defaults = []
    for _ in range(args.default_runs):
        with tempfile.TemporaryDirectory(prefix="bench-validate-", dir=folder) as tmp:
            env = {**os.environ, "XFS_ADVISOR_CALIBRATION": str(Path(tmp, "calibration.json")),
                   "XFS_ADVISOR_STATE_DIR": str(Path(tmp, "state")), "TMPDIR": tmp}
            before = load()
            started = time.monotonic()
            proc = subprocess.run([sys.executable, "-m", "advisor", "validate", "--json"],
                                  capture_output=True, text=True, cwd=REPO, env=env,
                                  timeout=900)
            wall = time.monotonic() - started
            try:
                report = json.loads(proc.stdout)
            except json.JSONDecodeError:
                report = {}
            primary = [m for m in report.get("metrics", []) + report.get("mechanisms", [])
                       if m["primary_for"]]
            defaults.append({"wall_s": round(wall, 1), "load_before": before,
                             "pairs": report.get("rounds"),
                             "stopped": (report.get("stopping") or {}).get("reason"),
                             "primary": {m["name"]: [m["verdict"], m["decided_after"]]
                                         for m in primary},
                             "decided": bool(primary) and all(
                                 m["verdict"] != "inconclusive" for m in primary)})
            print(json.dumps(defaults[-1]), file=sys.stderr, flush=True)
    summary = summarise(rows, defaults)
    if args.json:
        print(json.dumps({"rows": rows, "defaults": defaults, "summary": summary}, indent=2))
    else:
        for line in summary:
            print(line)
    return 0


def summarise(rows: list[dict[str, Any]], defaults: list[dict[str, Any]]) -> list[str]:
    lines = []
    for method in ("tool", "welch", "trimmed-mean"):
        mine = [r for r in rows if r["method"] == method]
        if not mine:
            continue
        for case in CASES:
            here = [r for r in mine if r["case"] == case]
            if not here:
                continue
            count = {d: sum(r["decision"] == d for r in here) for d in
                     ("correct", "wrong", "undecided", "failed")}
            walls = [r["wall_s"] for r in here]
            lines.append(f"{method:<13} {case:<14} correct {count['correct']}/{len(here)}, "
                         f"wrong {count['wrong']}, undecided {count['undecided']}"
                         + (f", failed {count['failed']}" if count["failed"] else "")
                         + f"; time to verdict median {statistics.median(walls):.0f} s "
                         f"({min(walls):.0f}-{max(walls):.0f}); load "
                         f"{min(r['load_before'] for r in here):.1f}-"
                         f"{max(r['load_before'] for r in here):.1f}")
        planted = [r for r in mine if CASES[r["case"]]["truth"] != "none"]
        if planted:
            correct = sum(r["decision"] == "correct" for r in planted)
            seconds = sum(r["wall_s"] for r in planted)
            lines.append(f"{method:<13} planted: {correct} correct in {seconds:.0f} s = "
                         f"{600 * correct / seconds:.1f} correct decisions per 10 minutes")
    fsync = [r for r in rows if r["method"] == "tool" and r["case"] == "logbsize-256k"]
    if fsync:
        lines.append("tool          logbsize-256k throughput (fsync'd writes): "
                     + ", ".join(f"{r.get('fsync_verdict')} {r.get('fsync_ratio')}"
                                 for r in fsync))
    if defaults:
        walls = [d["wall_s"] for d in defaults]
        lines.append(f"embedded default: decided {sum(d['decided'] for d in defaults)}/"
                     f"{len(defaults)}; wall median {statistics.median(walls):.0f} s "
                     f"({min(walls):.0f}-{max(walls):.0f}); pairs "
                     f"{[d['pairs'] for d in defaults]}; load before "
                     f"{[d['load_before'] for d in defaults]}")
    return lines


if __name__ == "__main__":
    sys.exit(main())
