#!/usr/bin/env python3
"""How honest and how fast is `xfs-advisor validate`? (root, loop devices, many minutes)

1. A/A with the adaptive stopping rule, N times (default 10): `validate --mount-options ""`
   (B = A, both the defaults) with the embedded example workload and the default --rounds,
   --max-rounds and --budget, so that the run adds ABBA blocks and looks at its verdicts after
   each, exactly as a real run does. An A/A run must never call a metric better or worse;
   prints how many runs did (goal: at most 1 in 10), and how many pairs each ran and why it
   stopped.
2. One default run (`validate`, the embedded example workload on the loop default): its wall
   time and the share of it spent measuring (`--skip-default` to leave it out).
3. The issue's planted difference, B = `-n size=64k` on a write-heavy workload with 50,000
   entries in one directory, default settings (rounds, budget, margins), M times (default 10,
   `--planted-runs`): how many came out `worse` on at least one metric (goal: all), with every
   metric's ratio, interval and verdict, the pairs run and why it stopped.

Each run uses a fresh temporary calibration file, so the margins are the default 5% (no stored
A/A floors). Load on the machine makes noise; the error control must hold anyway.

    sudo .venv/bin/python scripts/bench_validate.py [--runs 10] [--planted-runs 10] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SMALL = ("--largest-directory-entries", "5000", "--concurrent-writers", "1",
         "--fsyncs-per-second", "0", "--median-file-size", "4KiB")


def validate(*args: str, env: dict[str, str]) -> tuple[Any, float, int, str]:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "advisor", "validate", "--json", *args],
                          capture_output=True, text=True, cwd=REPO, env=env, timeout=900)
    wall = time.monotonic() - started
    try:
        report = json.loads(proc.stdout) if proc.stdout.strip() else {}
    except json.JSONDecodeError:
        report = {}
    last_line = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
    return report, wall, proc.returncode, last_line


def _stopped(report: Any) -> str:
    st = report.get("stopping") or {} if isinstance(report, dict) else {}
    return f"{report.get('rounds')} pairs, {st.get('reason')}" if isinstance(report, dict) \
        else "no report"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=10, help="A/A runs (default 10)")
    p.add_argument("--planted-runs", type=int, default=10, help="-n size=64k runs (default 10)")
    p.add_argument("--budget", type=float, default=None,
                   help="--budget for every run (default: validate's own)")
    p.add_argument("--skip-default", action="store_true", help="skip the timed default run")
    p.add_argument("--aa-small", action="store_true",
                   help="A/A on a small directory-only workload (5,000 entries, one writer): "
                   "cheap pairs, so that a 100 s budget holds several looks")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = p.parse_args()
    if os.geteuid() != 0:
        print("bench_validate: needs root (validate makes loop devices)", file=sys.stderr)
        return 2

    budget = ["--budget", str(args.budget)] if args.budget else []
    figures: dict[str, Any] = {}
    runs = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="bench-validate-") as tmp:
            env = {**os.environ, "XFS_ADVISOR_CALIBRATION": str(Path(tmp, "calibration.json")),
                   "XFS_ADVISOR_STATE_DIR": str(Path(tmp, "state"))}
            report, wall, code, err = validate("--mount-options", "", *budget,
                                               *(SMALL if args.aa_small else ()), env=env)
        metrics = report.get("metrics", []) if isinstance(report, dict) else []
        alarms = [m["name"] for m in metrics if m["verdict"] in ("better", "worse")]
        verdicts = {m["name"]: m["verdict"] for m in metrics}
        runs.append({"run": i + 1, "exit": code, "wall_s": round(wall, 1),
                     "pairs": report.get("rounds") if isinstance(report, dict) else None,
                     "looks": (report.get("stopping") or {}).get("looks")
                     if isinstance(report, dict) else None,
                     "stopped": (report.get("stopping") or {}).get("reason")
                     if isinstance(report, dict) else None,
                     "false_alarms": alarms, "verdicts": verdicts,
                     "error": err if code not in (0, 5) else ""})
        print(f"A/A run {i + 1}/{args.runs}: {wall:.0f} s, exit {code}, {_stopped(report)}, "
              f"looks at {runs[-1]['looks']}, "
              f"false better/worse: {alarms or 'none'}; verdicts {verdicts}", file=sys.stderr,
              flush=True)
    false_runs = sum(1 for r in runs if r["false_alarms"])
    failed = sum(1 for r in runs if r["exit"] not in (0, 5))
    figures.update({
        "aa_runs": args.runs,
        "aa_runs_with_false_alarm": false_runs,
        "aa_runs_failed": failed,
        "aa_runs_detail": runs,
    })
    if not args.skip_default:
        with tempfile.TemporaryDirectory(prefix="bench-validate-") as tmp:
            env = {**os.environ, "XFS_ADVISOR_CALIBRATION": str(Path(tmp, "calibration.json")),
                   "XFS_ADVISOR_STATE_DIR": str(Path(tmp, "state"))}
            report, wall, code, err = validate(*budget, env=env)
        timing = report.get("timing", {}) if isinstance(report, dict) else {}
        figures.update({
            "default_run_exit": code,
            "default_run_wall_s": round(wall, 1),
            "default_run_verdict": report.get("verdict"),
            "default_run_stopped": _stopped(report),
            "default_run_measuring_share": timing.get("measuring_share"),
            "default_run_error": err if code not in (0, 5) else "",
        })
    planted_runs = []
    for i in range(args.planted_runs):
        with tempfile.TemporaryDirectory(prefix="bench-validate-") as tmp:
            env = {**os.environ, "XFS_ADVISOR_CALIBRATION": str(Path(tmp, "calibration.json")),
                   "XFS_ADVISOR_STATE_DIR": str(Path(tmp, "state"))}
            report, wall, code, err = validate(
                "--mkfs-options", "-n size=64k", *budget,
                "--largest-directory-entries", "50000", "--concurrent-writers", "1",
                "--fsyncs-per-second", "0", "--median-file-size", "4KiB", env=env)
        metrics = report.get("metrics", []) if isinstance(report, dict) else []
        worse = [m["name"] for m in metrics if m["verdict"] == "worse"]
        planted_runs.append({"run": i + 1, "exit": code, "wall_s": round(wall, 1),
                             "stopped": _stopped(report), "worse": worse,
                             "metrics": {m["name"]: [m["ratio"], m["ci"], m["verdict"]]
                                         for m in metrics},
                             "error": err if code not in (0, 5) else ""})
        print(f"planted run {i + 1}/{args.planted_runs}: {wall:.0f} s, exit {code}, "
              f"{_stopped(report)}, worse on: {worse or 'nothing'}; "
              + "; ".join(f"{m['name']} {m['ratio']} [{m['ci'][0]}, {m['ci'][1]}] "
                          f"{m['verdict']}" for m in metrics), file=sys.stderr, flush=True)
    figures.update({"planted_runs": args.planted_runs,
                    "planted_runs_worse": sum(1 for r in planted_runs if r["worse"]),
                    "planted_runs_detail": planted_runs})
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"A/A runs with a false better/worse: {false_runs} of {args.runs} (goal: at most "
              f"1 in 10); runs that failed: {failed}; pairs run: "
              f"{[r['pairs'] for r in runs]}; stopped: {[r['stopped'] for r in runs]}")
        if not args.skip_default:
            print(f"default run: {figures['default_run_wall_s']} s to the verdict "
                  f"({figures['default_run_verdict']}; {figures['default_run_stopped']}), "
                  f"{(figures['default_run_measuring_share'] or 0) * 100:.0f}% of the rounds' "
                  "time measuring")
        print(f"planted -n size=64k, 50,000 entries, default settings: worse on some metric in "
              f"{figures['planted_runs_worse']} of {args.planted_runs} runs (goal: all); "
              f"wall seconds {[r['wall_s'] for r in planted_runs]}; stopped "
              f"{[r['stopped'] for r in planted_runs]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
