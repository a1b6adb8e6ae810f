#!/usr/bin/env python3
"""Do the mechanism counters show what an option does, every time? (root, loop devices)

Planted: B = `logbsize=256k` against A = the default 32 KiB log buffers (the logbsize rule's
claim: fewer, larger log writes), `validate` at its default rounds as a fixed design
(`--rounds 6 --max-rounds 6`: the anytime-valid intervals at the fewest pairs a run has), on the
embedded example workload (fsync'd writes and a large directory), N times (default 10).
Prints, per run, the log writes per 1,000 directory operations B/A with its interval and the
counter's verdict and the rule checks, then how many runs saw "less work" (goal: 10 of 10), and
the same for the throughput metrics, which noise usually leaves inconclusive.

    sudo .venv/bin/python scripts/bench_mechanism.py [--runs 10] [--budget 20]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--budget", type=float, default=20.0, help="validate --budget (seconds)")
    p.add_argument("--max-rounds", type=int, default=6,
                   help="validate --max-rounds (default 6: a fixed design at the default rounds)")
    args = p.parse_args()
    if os.geteuid() != 0:
        print("bench_mechanism: needs root (validate makes loop devices)", file=sys.stderr)
        return 2
    seen = 0
    throughput_resolved = 0
    with tempfile.TemporaryDirectory(prefix="bench-mechanism-") as tmp:
        env = {**os.environ, "XFS_ADVISOR_STATE_DIR": f"{tmp}/state",
               "XFS_ADVISOR_CALIBRATION": f"{tmp}/calibration.json"}
        for i in range(args.runs):
            proc = subprocess.run(
                [sys.executable, "-m", "advisor", "validate", "--json", "--mount-options",
                 "logbsize=256k", "--budget", str(args.budget), "--max-rounds",
                 str(args.max_rounds)],
                capture_output=True, text=True, cwd=REPO, env=env, timeout=900)
            report = json.loads(proc.stdout) if proc.stdout.strip() else {}
            mech = {m["name"]: m for m in report.get("mechanisms", [])}
            m = mech.get("log_writes_per_1k_dirops")
            if m is None:
                print(f"run {i + 1}: no figure (exit {proc.returncode}): "
                      f"{proc.stderr.strip().splitlines()[-1:]}")
                continue
            resolved = [x["name"] for x in report["metrics"] if x["verdict"] != "inconclusive"]
            checks = {f"{c['counter']}: {c['seen']}" for c in report["mechanism_checks"]
                      if c["option"].startswith("logbsize")}
            seen += m["verdict"] == "better"  # lower is better: less work
            throughput_resolved += bool(resolved)
            print(f"run {i + 1}: log writes/1k dir ops A {m['geo_mean_a']:.2f} B "
                  f"{m['geo_mean_b']:.2f}  B/A {m['ratio']:.3f} [{m['ci'][0]:.3f}, "
                  f"{m['ci'][1]:.3f}]  {m['verdict']}; {report['rounds']} pairs; rule checks: "
                  f"{sorted(checks)}; throughput metrics resolved: "
                  f"{', '.join(resolved) or 'none'}", flush=True)
    print(f"log writes per 1k directory ops: less work in {seen} of {args.runs} runs "
          f"(goal {args.runs} of {args.runs}); runs where any throughput metric resolved: "
          f"{throughput_resolved} of {args.runs}")
    return 0 if seen == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
