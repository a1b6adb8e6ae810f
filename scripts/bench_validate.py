#!/usr/bin/env python3
"""How honest and how fast is `xfs-advisor validate`? (root, loop devices, a few minutes)

1. `validate --calibrate` N times (default 10): an A/A run must never call a metric better or
   worse; prints how often any metric was (goal: at most 1 in 10).
2. One default run (`validate`, the embedded example workload on the loop default): its wall
   time (goal: a verdict within 120 s) and the share of it spent measuring (goal: over 60%).
3. The issue's planted difference, B = `-n size=64k` on a create-heavy workload with 60,000
   entries in one directory, 10 pairs (as tests/bench/test_validate_runs.py runs it, but with
   the margins the A/A runs above stored): every metric's ratio, interval and verdict
   (`--skip-planted` to leave it out).

Run it on a quiet machine: other load makes the A/A runs noisier (they then say inconclusive,
which is honest, but slower machines also stretch the wall time).

    sudo .venv/bin/python scripts/bench_validate.py [--runs 10] [--budget SECONDS] [--json]
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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=10, help="A/A runs (default 10)")
    p.add_argument("--budget", type=float, default=None,
                   help="--budget for the A/A runs (default: validate's own)")
    p.add_argument("--skip-default", action="store_true", help="skip the timed default run")
    p.add_argument("--skip-planted", action="store_true", help="skip the -n size=64k run")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = p.parse_args()
    if os.geteuid() != 0:
        print("bench_validate: needs root (validate makes loop devices)", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="bench-validate-") as tmp:
        env = {**os.environ, "XFS_ADVISOR_CALIBRATION": str(Path(tmp, "calibration.json"))}
        budget = ["--budget", str(args.budget)] if args.budget else []
        runs = []
        for i in range(args.runs):
            report, wall, code, err = validate("--calibrate", *budget, env=env)
            metrics = report.get("metrics", []) if isinstance(report, dict) else []
            alarms = [m["name"] for m in metrics
                      if m["verdict"] in ("better", "worse")]
            verdicts = {m["name"]: m["verdict"] for m in metrics}
            runs.append({"run": i + 1, "exit": code, "wall_s": round(wall, 1),
                         "false_alarms": alarms, "verdicts": verdicts,
                         "error": err if code else ""})
            print(f"A/A run {i + 1}/{args.runs}: {wall:.0f} s, exit {code}, "
                  f"false better/worse: {alarms or 'none'}", file=sys.stderr)
        false_runs = sum(1 for r in runs if r["false_alarms"])
        failed = sum(1 for r in runs if r["exit"] != 0)
        figures: dict[str, Any] = {
            "aa_runs": args.runs,
            "aa_runs_with_false_alarm": false_runs,
            "aa_false_alarm_rate": round(false_runs / args.runs, 3) if args.runs else None,
            "aa_runs_failed": failed,
            "aa_runs_detail": runs,
        }
        if not args.skip_default:
            report, wall, code, err = validate(env=env)
            timing = report.get("timing", {}) if isinstance(report, dict) else {}
            figures.update({
                "default_run_exit": code,
                "default_run_wall_s": round(wall, 1),
                "default_run_verdict": report.get("verdict"),
                "default_run_measuring_s": timing.get("measuring_seconds"),
                "default_run_rounds_wall_s": timing.get("wall_seconds"),
                "default_run_measuring_share": timing.get("measuring_share"),
                "default_run_error": err if code not in (0, 5) else "",
            })
        if not args.skip_planted:
            report, wall, code, err = validate(
                "--mkfs-options", "-n size=64k", "--budget", "100", "--rounds", "10",
                "--largest-directory-entries", "60000", "--concurrent-writers", "1",
                "--fsyncs-per-second", "0", "--median-file-size", "4KiB", env=env)
            planted = {m["name"]: {"ratio": m["ratio"], "ci": m["ci"], "verdict": m["verdict"]}
                       for m in (report.get("metrics", []) if isinstance(report, dict) else [])}
            figures.update({"planted_64k_wall_s": round(wall, 1), "planted_64k_exit": code,
                            "planted_64k_verdict": report.get("verdict"),
                            "planted_64k_metrics": planted})
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(f"A/A runs with a false better/worse: {figures['aa_runs_with_false_alarm']} of "
              f"{args.runs} (goal: at most 1 in 10); runs that failed: {failed}")
        if not args.skip_default:
            print(f"default run: {figures['default_run_wall_s']} s to the verdict "
                  f"({figures['default_run_verdict']}; goal <= 120 s), "
                  f"{(figures['default_run_measuring_share'] or 0) * 100:.0f}% of the rounds' "
                  "time measuring (goal > 60%)")
        for name, m in figures.get("planted_64k_metrics", {}).items():
            print(f"planted -n size=64k: {name} B/A {m['ratio']} [{m['ci'][0]}, {m['ci'][1]}] "
                  f"{m['verdict']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
