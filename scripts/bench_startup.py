#!/usr/bin/env python3
"""Cold start of the commands people script: `xfs-advisor --json --device D --workload W` (both
dry runs included) and `xfs-advisor devices --json`, beside peers measured in the same run
(`python -c pass`, `import pydantic`, and `lsblk -J -O`, what an admin runs instead of
`devices --json`).

Figures that a machine shared with other work moves little: CPU time (user + system, the
command's children included: mkfs.xfs) and, with --callgrind, the instructions the Python process
itself executes (valgrind; children not counted). `devices --json` reads every process's
/proc/PID/fd, so its count moves with the host's process count (+-10 M): `--callgrind 5` counts
each command five times, interleaved with the baseline's, and gives the median and the range.
Wall times are printed too, with the load average, and each command's figures as a ratio to
`python -c pass` of the same run.

Byte-code caches: an installed package has them (pip compiles at install); a checkout run with
PYTHONDONTWRITEBYTECODE=1 (as in this project's sandbox) compiles every advisor module at every
start, about a fifth of the instructions. The script compiles the package first (compileall,
into the usual __pycache__ folders) so that it measures what an installation runs.

With --baseline DIR (another checkout's top folder, e.g. `git archive main | tar -x -C DIR`), the
same commands run from DIR's advisor package too (PYTHONPATH, same interpreter and packages), and
each of ours is given as a ratio to it. With --load N, N busy loops run while the commands are
timed (bench_tui.py's, started and always stopped by the script; the load average printed is
then the machine's with them): `--load 2` gives the figure at load 2.

    .venv/bin/python scripts/bench_startup.py [--device vda] [--runs 15] [--callgrind [N]]
                                              [--baseline DIR] [--load N]
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORKLOAD = REPO / "advisor" / "data" / "example-workload.toml"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _env(path: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = path
    return env


def once(argv: list[str], path: str | None) -> tuple[float, float]:
    """Wall and CPU milliseconds of one cold run (`path`: where advisor is imported from)."""
    cpu = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, cwd=path or REPO, env=_env(path))
    wall = (time.perf_counter() - start) * 1000
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr.decode()[:300]}")
    return wall, (_children_cpu() - cpu) * 1000


def instructions(argv: list[str], path: str | None) -> int | None:
    """Instructions the process executes (callgrind; children not traced)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    proc = subprocess.run([valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                          capture_output=True, text=True, cwd=path or REPO, env=_env(path))
    m = re.search(r"refs:\s+([\d,]+)", proc.stderr)
    return int(m.group(1).replace(",", "")) if m else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", help="a live device to inspect (read only; default: the first "
                    "disk in /sys/block that is not a loop, ram or zram device)")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--callgrind", type=int, nargs="?", const=1, default=0, metavar="N",
                    help="also count instructions with valgrind, N times each, interleaved "
                    "(about 10 s per command and time; default 1)")
    ap.add_argument("--baseline", metavar="DIR",
                    help="another checkout to compare with, in the same run")
    ap.add_argument("--load", type=int, default=0, metavar="N",
                    help="N busy-loop processes running while the commands are timed (as "
                    "bench_tui.py's --load: the figure on a busy machine)")
    args = ap.parse_args()
    from bench_tui import busy_loops  # beside this script (sys.path[0])

    with busy_loops(args.load):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    python = sys.executable
    device = args.device or next((p.name for p in sorted(Path("/sys/block").iterdir())
                                  if not p.name.startswith(("loop", "ram", "zram"))), None)
    if device is None:
        sys.exit("no disk to inspect: give --device")
    compileall.compile_dir(str(REPO / "advisor"), quiet=1)
    ours = {
        f"--json --device {device}": [python, "-m", "advisor", "--json", "--device", device,
                                      "--workload", str(WORKLOAD)],
        "devices --json": [python, "-m", "advisor", "devices", "--json"],
    }
    commands: dict[str, tuple[list[str], str | None]] = {
        "python -c pass": ([python, "-c", "pass"], None),
        "python -c 'import pydantic'": ([python, "-c", "import pydantic"], None),
        # The tool an admin would use instead of `devices --json`.
        "lsblk -J -O": ([shutil.which("lsblk") or "/usr/bin/lsblk", "-J", "-O"], None),
        **{name: (argv, None) for name, argv in ours.items()},
    }
    if args.baseline:
        baseline = str(Path(args.baseline).resolve())
        where = subprocess.run([python, "-c", "import advisor; print(advisor.__file__)"],
                               capture_output=True, text=True, cwd=baseline,
                               env=_env(baseline)).stdout.strip()
        if not where.startswith(baseline):
            sys.exit(f"--baseline {baseline}: its advisor package is not the one imported "
                     f"({where})")
        compileall.compile_dir(str(Path(baseline) / "advisor"), quiet=1)
        commands.update({f"baseline {name}": (argv, baseline) for name, argv in ours.items()})
    walls: dict[str, list[float]] = {k: [] for k in commands}
    cpus: dict[str, list[float]] = {k: [] for k in commands}
    load_before = os.getloadavg()
    for argv, path in commands.values():
        once(argv, path)  # warm the page cache
    for _ in range(args.runs):  # interleaved: the load moves all of them alike
        for name, (argv, path) in commands.items():
            wall, cpu = once(argv, path)
            walls[name].append(wall)
            cpus[name].append(cpu)
    base_wall = statistics.median(walls["python -c pass"])
    base_cpu = statistics.median(cpus["python -c pass"])
    load_after = os.getloadavg()
    print(f"{args.runs} cold runs each, interleaved; load average {load_before[0]:.1f} before "
          f"(5 min: {load_before[1]:.1f}), {load_after[0]:.1f} after")
    seen: dict[str, list[int]] = {k: [] for k in commands}
    for _ in range(args.callgrind):  # interleaved too: the process count moves them alike
        for name, (argv, path) in commands.items():
            n = instructions(argv, path)
            if n is not None:
                seen[name].append(n)
    counts: dict[str, float | None] = {
        k: statistics.median(v) if v else None for k, v in seen.items()}
    heading = ("" if not args.callgrind else "  instructions" if args.callgrind == 1
               else f"  instructions (median of {args.callgrind}, range)")
    print(f"{'command':<41} {'wall ms':>8} {'min':>6} {'CPU ms':>7} {'CPU/peer':>8}{heading}")
    for name in commands:
        wall, cpu = statistics.median(walls[name]), statistics.median(cpus[name])
        line = (f"{name:<41} {wall:8.0f} {min(walls[name]):6.0f} {cpu:7.0f} "
                f"{cpu / base_cpu:7.1f}x")
        if args.callgrind:
            found, count = seen[name], counts[name]
            line += f"  {count / 1e6:,.1f}M" if count is not None else "  (no valgrind)"
            if len(found) > 1:
                line += f" ({min(found) / 1e6:,.1f}-{max(found) / 1e6:,.1f})"
        print(line)
    if args.baseline:
        for name in ours:
            base = f"baseline {name}"
            ratio = statistics.median(cpus[name]) / statistics.median(cpus[base])
            wall_ratio = statistics.median(walls[name]) / statistics.median(walls[base])
            text = f"{name}: CPU {ratio:.2f}x, wall {wall_ratio:.2f}x the baseline's"
            ours_n, base_n = counts.get(name), counts.get(base)
            if ours_n and base_n:
                text += f", instructions {ours_n / base_n:.3f}x ({(ours_n - base_n) / 1e6:+,.1f}M)"
            print(text)
    print(f"(python -c pass: {base_wall:.0f} ms wall, {base_cpu:.0f} ms CPU in this run)")
    devices_ms = statistics.median(walls["devices --json"])
    advice_ms = statistics.median(walls[f"--json --device {device}"])
    lsblk_wall, lsblk_cpu = (statistics.median(walls["lsblk -J -O"]),
                             statistics.median(cpus["lsblk -J -O"]))
    print(f"devices --json / lsblk -J -O: wall "
          f"{statistics.median(walls['devices --json']) / lsblk_wall:.1f}x, CPU "
          f"{statistics.median(cpus['devices --json']) / max(lsblk_cpu, 0.1):.1f}x "
          f"(lsblk: {lsblk_wall:.0f} ms wall, {lsblk_cpu:.0f} ms CPU)")
    print(f"goals on a quiet machine: devices --json under 120 ms (here {devices_ms:.0f}), "
          f"advice under 200 ms (here {advice_ms:.0f}); wall times move with the load above")
    return 0


if __name__ == "__main__":
    sys.exit(main())
