#!/usr/bin/env python3
"""Does `xfs-advisor validate` decide, and how fast, beside the tests people run by hand? (root,
loop devices, many minutes; run it on a busy machine: that is the condition it is for)

Interleaved in one period, per repetition and case, the three methods on the same planted
effects:
- the tool: `validate --json` with the case's options and workload at its default settings
  (rounds, budget, margins), scored twice: on each option's pre-declared primary metric (the
  mechanism counter its rule names, scored by whether the report shows the rule's claim, else
  CPU time per directory operation), and on its
  throughput verdict for the case's scored figure (creates into the holes of the directory for
  the directory cases, fsync'd writes for the fsync case);
- Welch: a hand-made Welch t-test on unpaired runs of the same job (RUNS per side, A and B
  alternating, each a fresh mkfs and mount, the tool's own fio job files for the shape the
  tool's run used: create, delete and refill in a directory of the same size, sync, umount and
  mount, cold stats and the data phases), scored on its own throughput of the same figure,
  two-sided at 0.05; for the no-effect cases "correct" needs equivalence within +-5% shown (two
  one-sided Welch tests);
- trimmed mean: a common method of hand benchmarks, on the same runs (5 per side, drop the
  highest and lowest, compare the means of the middle three, call a difference beyond 5%).

Cases: `-n size=64k` on a 50,000-entry create-heavy directory (truth: fewer allocations per
directory operation, creates into holes slower), `logbsize=256k` against the default on an
fsync-heavy workload (truth: fewer log writes per directory operation; fewer fsync'd writes per
second), a no-effect change (`-i maxpct=5`) and A/A. Prints correct / wrong / undecided per
method and case, time to verdict, correct decisions per 10 minutes, the machine's load, and the
goals with pass or fail: the tool decides the planted cases 10 of 10, calls no-effect and A/A
wrong at most 1 in 20, and makes at least 3x Welch's correct decisions per 10 minutes. Then
(unless --default-runs 0) the embedded default (`validate` with no arguments) N times: wall time
to its decided verdict.

    sudo .venv/bin/python scripts/bench_validate.py [--reps 3] [--default-runs 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
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

from advisor.bench import jobs  # noqa: E402
from advisor.bench.stats import t_cdf  # noqa: E402

RUNS = 5
CREATE_HEAVY = ("--largest-directory-entries", "50000", "--concurrent-writers", "1",
                "--fsyncs-per-second", "0", "--median-file-size", "4KiB")
FSYNC_HEAVY = ("--largest-directory-entries", "5000", "--concurrent-writers", "4",
               "--fsyncs-per-second", "2000", "--median-file-size", "4KiB")
#: case: validate's options and workload, the same options by hand, the truth of the primary
#: metric ("moved": the change's mechanism moves, "none": nothing does) and of the scored
#: throughput figure ("worse" or "none").
CASES: dict[str, dict[str, Any]] = {
    "n-size-64k": {"args": ("--mkfs-options", "-n size=64k", *CREATE_HEAVY),
                   "mkfs": ["-n", "size=64k"], "mount": [], "figure": "refill_creates_per_s",
                   "truth": "moved", "throughput": "worse"},
    "logbsize-256k": {"args": ("--mount-options", "logbsize=256k", *FSYNC_HEAVY),
                      "mkfs": [], "mount": ["logbsize=256k"], "figure": "fsync_writes_per_s",
                      "truth": "moved", "throughput": "worse"},
    "no-effect": {"args": ("--mkfs-options", "-i maxpct=5", *CREATE_HEAVY),
                  "mkfs": ["-i", "maxpct=5"], "mount": [], "figure": "refill_creates_per_s",
                  "truth": "none", "throughput": "none"},
    "a-a": {"args": ("--mount-options", "", *CREATE_HEAVY), "mkfs": [], "mount": [],
            "figure": "refill_creates_per_s", "truth": "none", "throughput": "none"},
}
#: The way each planted change's primary metric moves (B against A), for a primary no rule's
#: claim speaks for (a claimed one is scored by the report's check of the claim).
PLANTED = {"creates_per_cpu_s": "worse", "dirops_per_cpu_s": "worse",
           "log_writes_per_1k_dirops": "better"}


def sh(*argv: str, cwd: str | None = None) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, cwd=cwd).stdout


def load() -> float:
    return round(os.getloadavg()[0], 2)


def judged(verdict: str | None, truth: str) -> str:
    """A verdict against the truth: `worse`/`better` is a direction, `equivalent` is "none"."""
    if truth == "none":
        return ("wrong" if verdict in ("better", "worse") else
                "correct" if verdict == "equivalent" else "undecided")
    if verdict == truth:
        return "correct"
    return "wrong" if verdict in ("better", "worse", "equivalent") else "undecided"


# ---- the tool ------------------------------------------------------------------------------

def tool(case: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "advisor", "validate", "--json", *case["args"]],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=900)
    wall = time.monotonic() - started
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"decision": "failed", "throughput_decision": "failed", "wall_s": round(wall, 1),
                "error": proc.stderr.strip().splitlines()[-1:] or ["?"]}
    figures = report["metrics"] + report["mechanisms"]
    primary = [m for m in figures if m["primary_for"]]
    if case["truth"] == "none":
        words = {m["verdict"] for m in primary}
        decision = ("wrong" if words & {"better", "worse"} else
                    "correct" if words == {"equivalent"} else "undecided")
    else:
        # The planted change: its primary metric moved the way the change does: the rule's
        # claim seen (fewer allocations per directory operation; fewer log writes per directory
        # operation), or for a figure no claim names the way PLANTED says.
        checks = {c["counter"]: c["seen"] for c in report.get("mechanism_checks", [])}
        got = [({"seen": "correct", "opposite": "wrong"}.get(checks[m["name"]], "undecided")
                if m["name"] in checks else judged(m["verdict"], PLANTED[m["name"]]))
               for m in primary if m["name"] in checks or m["name"] in PLANTED]
        decision = ("correct" if got and all(g == "correct" for g in got) else
                    "wrong" if "wrong" in got else "undecided")
    by_name = {m["name"]: m for m in figures}
    scored = by_name.get(case["figure"])
    return {"decision": decision, "wall_s": round(wall, 1), "pairs": report["rounds"],
            "throughput_decision": judged(scored["verdict"] if scored else None,
                                          case["throughput"]),
            "stopped": report["stopping"]["reason"], "verdict": report["verdict"],
            "primary": {m["name"]: [m["ratio"], m["ci"], m["verdict"], m["decided_after"]]
                        for m in primary},
            "figure": [scored["ratio"], scored["ci"], scored["verdict"]] if scored else None,
            "shape": report["workload"],
            "load": report["environment"].get("load_average"), "summary": report["summary"]}


# ---- by hand: unpaired runs of the same job ------------------------------------------------

def hand_runs(case: dict[str, Any], folder: str,
              shape_doc: dict[str, Any]) -> tuple[list[float], list[float], float]:
    """RUNS runs per side, alternating A and B, each on a fresh filesystem, of the tool's own
    job files for `shape_doc` (the shape the tool's run of this case used): the case's figure
    from each run."""
    shape = jobs.Shape(**shape_doc)
    img = os.path.join(folder, "hand.img")
    mnt = os.path.join(folder, "mnt")
    os.makedirs(mnt, exist_ok=True)
    for part in ("changes", "rest"):
        Path(folder, f"{part}.fio").write_text(jobs.jobfile(shape, "mnt", part=part),
                                               encoding="utf-8")
    wanted = {part: tuple(m for m in shape.metrics
                          if (m.job in jobs.CHANGE_PHASES) == (part == "changes"))
              for part in ("changes", "rest")}
    sh("fallocate", "-l", "4G", img)
    dev = sh("losetup", "-f", "--show", "--direct-io=on", img).strip()
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
            values: dict[str, float] = {}
            try:
                jobs.prepare(shape, mnt)
                sh("sync")
                out = sh("fio", "--output-format=json", "changes.fio", cwd=folder)
                values.update(jobs.parse_fio(out, wanted["changes"]).values)
                sh("sync")
                sh("umount", mnt)
                sh(*mount, dev, mnt)
                out = sh("fio", "--output-format=json", "rest.fio", cwd=folder)
                values.update(jobs.parse_fio(out, wanted["rest"]).values)
            finally:
                sh("umount", mnt)
            (b if side_b else a).append(values[case["figure"]])
    finally:
        # A fio just killed (Ctrl-C, SIGTERM) keeps the mount busy for a moment.
        for _ in range(10):
            if not os.path.ismount(mnt) or subprocess.run(
                    ["umount", mnt], capture_output=True, check=False).returncode == 0:
                break
            time.sleep(1)
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

def _env(tmp: str) -> dict[str, str]:
    return {**os.environ, "XFS_ADVISOR_CALIBRATION": str(Path(tmp, "calibration.json")),
            "XFS_ADVISOR_STATE_DIR": str(Path(tmp, "state")), "TMPDIR": tmp}


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM as Ctrl-C: the hand runs' `finally` unmounts and detaches what they made."""
    del signum, frame
    raise KeyboardInterrupt


def main() -> int:
    signal.signal(signal.SIGTERM, _interrupt)
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--reps", type=int, default=3, help="repetitions of every case (default 3)")
    p.add_argument("--cases", default=",".join(CASES), help="comma-separated cases")
    p.add_argument("--default-runs", type=int, default=5,
                   help="runs of the embedded default afterwards (default 5)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument("--earlier", action="append", default=[], metavar="LOG",
                   help="an earlier run's stderr (a row a line): its rows join the summary")
    args = p.parse_args()
    if os.geteuid() != 0:
        print("bench_validate: needs root (loop devices, mkfs, mount)", file=sys.stderr)
        return 2
    names = args.cases.split(",")
    unknown = [n for n in names if n not in CASES]
    if unknown:
        print(f"bench_validate: unknown case {unknown[0]!r} (cases: {', '.join(CASES)})",
              file=sys.stderr)
        return 2
    rows: list[dict[str, Any]] = []
    for log in args.earlier:
        for line in Path(log).read_text(encoding="utf-8").splitlines():
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                continue  # a traceback's lines
            for row in doc if isinstance(doc, list) else [doc]:
                if isinstance(row, dict) and "method" in row:
                    rows.append({**row, "earlier": log})
    shapes: dict[str, dict[str, Any]] = {
        r["case"]: r["shape"] for r in rows if r["method"] == "tool" and "shape" in r}
    folder = os.environ.get("TMPDIR") or "/var/tmp"
    for rep in range(args.reps):
        for name in names:
            case = CASES[name]
            with tempfile.TemporaryDirectory(prefix="bench-validate-", dir=folder) as tmp:
                # The hand runs take the shape the tool used, so the tool goes first until it is
                # known; then the order alternates.
                order = ("tool", "hand") if rep % 2 == 0 or name not in shapes \
                    else ("hand", "tool")
                for method in order:
                    before = load()
                    if method == "tool":
                        got = tool(case, _env(tmp))
                        if "shape" in got:
                            shapes[name] = got["shape"]
                        rows.append({"rep": rep, "case": name, "method": "tool",
                                     "load_before": before, **got})
                        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
                        continue
                    if name not in shapes:
                        continue
                    try:
                        a, b, wall = hand_runs(case, tmp, shapes[name])
                    except subprocess.CalledProcessError as err:
                        # e.g. another process took the loop device: said, not fatal
                        why = (err.stderr or "").strip().splitlines()[:1] or [str(err)]
                        rows += [{"rep": rep, "case": name, "method": label,
                                  "decision": "failed", "error": why[0], "wall_s": 0.0,
                                  "load_before": before} for label in ("welch", "trimmed-mean")]
                        print(json.dumps(rows[-2:]), file=sys.stderr, flush=True)
                        continue
                    for label, decide in (("welch", welch_decision),
                                          ("trimmed-mean", trimmed_decision)):
                        rows.append({"rep": rep, "case": name, "method": label,
                                     "decision": decide(a, b, case["throughput"]),
                                     "wall_s": round(wall, 1), "load_before": before,
                                     "ratio": round(statistics.mean(b)
                                                    / statistics.mean(a), 3)})
                    print(json.dumps(rows[-2:]), file=sys.stderr, flush=True)
    defaults = []
    for _ in range(args.default_runs):
        with tempfile.TemporaryDirectory(prefix="bench-validate-", dir=folder) as tmp:
            before = load()
            started = time.monotonic()
            proc = subprocess.run([sys.executable, "-m", "advisor", "validate", "--json"],
                                  capture_output=True, text=True, cwd=REPO, env=_env(tmp),
                                  timeout=900)
            wall = time.monotonic() - started
            try:
                report = json.loads(proc.stdout)
            except json.JSONDecodeError:
                report = {}
            primary = [m for m in report.get("metrics", []) + report.get("mechanisms", [])
                       if m["primary_for"]]
            defaults.append({"wall_s": round(wall, 1), "load_before": before,
                             "load": (report.get("environment") or {}).get("load_average"),
                             "pairs": report.get("rounds"), "verdict": report.get("verdict"),
                             "stopped": (report.get("stopping") or {}).get("reason"),
                             "primary": {m["name"]: [m["verdict"], m["decided_after"]]
                                         for m in primary},
                             "decided": bool(primary) and all(
                                 m["verdict"] != "inconclusive" for m in primary),
                             "summary": report.get("summary")})
            print(json.dumps(defaults[-1]), file=sys.stderr, flush=True)
    summary = summarise(rows, defaults)
    if args.json:
        print(json.dumps({"rows": rows, "defaults": defaults, "summary": summary}, indent=2))
    else:
        for line in summary:
            print(line)
    return 0


def _count(rows: list[dict[str, Any]], key: str) -> dict[str, int]:
    return {d: sum(r.get(key) == d for r in rows) for d in
            ("correct", "wrong", "undecided", "failed")}


def _per_10_min(rows: list[dict[str, Any]], key: str) -> float:
    seconds = sum(r["wall_s"] for r in rows)
    return 600 * sum(r.get(key) == "correct" for r in rows) / seconds if seconds else 0.0


def scored(rows: list[dict[str, Any]]) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(method label, the row key its decision is in, its rows): the tool twice."""
    tool_rows = [r for r in rows if r["method"] == "tool"]
    return [("tool primary", "decision", tool_rows),
            ("tool throughput", "throughput_decision", tool_rows),
            *[(m, "decision", [r for r in rows if r["method"] == m])
              for m in ("welch", "trimmed-mean")]]


def goals(rows: list[dict[str, Any]]) -> list[str]:
    """The goals the module's docstring names, each PASS or FAIL on what ran (and how many runs
    that is)."""
    tool_rows = [r for r in rows if r["method"] == "tool"]
    planted = [r for r in tool_rows if CASES[r["case"]]["truth"] != "none"]
    null = [r for r in tool_rows if CASES[r["case"]]["truth"] == "none"]
    welch_planted = [r for r in rows if r["method"] == "welch"
                     and CASES[r["case"]]["truth"] != "none"]
    out = []
    right = sum(r["decision"] == "correct" for r in planted)
    ok = bool(planted) and right == len(planted)
    out.append(f"goal: planted cases decided correctly every time (10 of 10): {right}/"
               f"{len(planted)} -> {'PASS' if ok else 'FAIL'}"
               + (f" (on {len(planted)} runs, not 10)" if ok and len(planted) < 10 else ""))
    for label, key in (("primary", "decision"), ("throughput", "throughput_decision")):
        wrong = sum(r.get(key) == "wrong" for r in null)
        ok = bool(null) and wrong / len(null) <= 1 / 20
        out.append(f"goal: no-effect and A/A called wrong at most 1 in 20 ({label}): {wrong}/"
                   f"{len(null)} -> {'PASS' if ok else 'FAIL'}"
                   + (f" (on {len(null)} runs, not 20)" if ok and len(null) < 20 else ""))
    for label, key in (("primary", "decision"), ("throughput", "throughput_decision")):
        mine, theirs = _per_10_min(planted, key), _per_10_min(welch_planted, "decision")
        ok = (theirs == 0 and mine > 0) or (theirs > 0 and mine >= 3 * theirs)
        ratio = f"{mine / theirs:.1f}x" if theirs else "Welch none"
        out.append(f"goal: correct decisions per 10 minutes on the planted cases at least 3x "
                   f"Welch's ({label}): tool {mine:.1f}, Welch {theirs:.1f} ({ratio}) -> "
                   f"{'PASS' if ok else 'FAIL'}")
    return out


def summarise(rows: list[dict[str, Any]], defaults: list[dict[str, Any]]) -> list[str]:
    lines = []
    for method, key, mine in scored(rows):
        if not mine:
            continue
        for case in CASES:
            here = [r for r in mine if r["case"] == case]
            if not here:
                continue
            count = _count(here, key)
            walls = [r["wall_s"] for r in here if r.get(key) != "failed"] or [0.0]
            lines.append(f"{method:<16} {case:<14} correct {count['correct']}/{len(here)}, "
                         f"wrong {count['wrong']}, undecided {count['undecided']}"
                         + (f", failed {count['failed']}" if count["failed"] else "")
                         + f"; time to verdict median {statistics.median(walls):.0f} s "
                         f"({min(walls):.0f}-{max(walls):.0f}); load "
                         f"{min(r['load_before'] for r in here):.1f}-"
                         f"{max(r['load_before'] for r in here):.1f}")
        planted = [r for r in mine if CASES[r["case"]]["truth"] != "none"]
        if planted:
            correct = sum(r.get(key) == "correct" for r in planted)
            seconds = sum(r["wall_s"] for r in planted)
            lines.append(f"{method:<16} planted: {correct} correct in {seconds:.0f} s = "
                         f"{_per_10_min(planted, key):.1f} correct decisions per 10 minutes")
    lines += goals(rows)
    if defaults:
        walls = [d["wall_s"] for d in defaults]
        loads = [x for d in defaults for x in (d.get("load") or [d["load_before"]])]
        lines.append(f"embedded default: decided {sum(d['decided'] for d in defaults)}/"
                     f"{len(defaults)}; wall median {statistics.median(walls):.0f} s "
                     f"({min(walls):.0f}-{max(walls):.0f}); pairs "
                     f"{[d['pairs'] for d in defaults]}; load {min(loads):.1f}-{max(loads):.1f}")
    return lines


if __name__ == "__main__":
    sys.exit(main())
