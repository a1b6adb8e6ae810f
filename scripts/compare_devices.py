#!/usr/bin/env python3
"""Check that this tree's device output is byte for byte an earlier version's, on the same hosts.

A faster scan must not change a byte of what it says: this runs the device commands from this
tree and from BASELINE (a checkout of the earlier version, e.g. `git archive main | tar -x -C
DIR`), same interpreter and packages, on the same hosts, and compares stdout, stderr and exit
codes. The hosts: the benchmark's SAN host (scripts/bench_devices.py, --luns LUNs over 4 paths),
the real captures of tests/data/sysfs-dumps and the hand-written host of
tests/inspect/test_fixture_hosts.py (md arrays, LVM, dm-crypt, partitions, garbage attributes).
The commands: `devices` (the tree), `devices --json` with and without probes and with lsblk's
columns as --fields, `devices --json DEVICE` for every device of the small hosts (three of the
SAN host), and `devices DEVICE` and a proposal for three of each; the rules folder a proposal
names is each tree's own, shown as TREE. Exit status 1 when anything differs. Not a test: it
needs the earlier version.

    .venv/bin/python scripts/compare_devices.py BASELINE [--luns 1280] [--keep-going]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _bench() -> object:
    spec = importlib.util.spec_from_file_location("bench_devices",
                                                  REPO / "scripts" / "bench_devices.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _hosts(work: Path, luns: int) -> dict[str, Path]:
    bench = _bench()
    hosts: dict[str, Path] = {}
    san = work / "san"
    count = bench.generate(san, luns, 4)  # type: ignore[attr-defined]
    hosts[f"san-{count}"] = san
    from tests.inspect.sysfs_builder import unpack_dumps

    captures = work / "captures"
    captures.mkdir()
    hosts.update(unpack_dumps(REPO / "tests" / "data" / "sysfs-dumps", captures))
    from tests.inspect.test_fixture_hosts import _host

    hand = work / "hand"
    hand.mkdir()
    hosts["hand-written"] = _host(hand)
    return hosts


def _run(tree: Path, argv: list[str]) -> tuple[int, bytes, bytes]:
    env = {**os.environ, "PYTHONPATH": str(tree), "XFS_ADVISOR_STATE_DIR": str(STATE)}
    proc = subprocess.run([sys.executable, "-m", "advisor", *argv], capture_output=True,
                          cwd=tree, env=env)
    # A proposal names the rules folder it read, which is each tree's own.
    here = str(tree).encode()
    return proc.returncode, proc.stdout.replace(here, b"TREE"), proc.stderr.replace(here, b"TREE")


def _commands(root: Path, small: bool) -> list[list[str]]:
    bench = _bench()
    sysroot = ["--sysroot", str(root)]
    fields = ",".join(bench.FIELDS_FOR_COLUMNS)  # type: ignore[attr-defined]
    commands = [
        ["devices", *sysroot],
        ["devices", "--json", *sysroot],
        ["devices", "--json", "--no-probe", *sysroot],
        ["devices", "--json", "--fields", fields, *sysroot],
        ["devices", "--json", "--fields", "usage,stripe,storage_hint,thin,discard_below,model",
         *sysroot],
    ]
    rc, out, _ = _run(REPO, ["devices", "--json", *sysroot])
    names = [d["name"] for d in json.loads(out)["devices"]] if rc == 0 else []
    if not small:
        names = ["dm-0", "sdb", "mpath7"]
    workload = REPO / "advisor" / "data" / "example-workload.toml"
    commands.extend(["devices", "--json", name, *sysroot] for name in names)
    commands.extend(["devices", name, *sysroot] for name in names[:3])
    for name in names[:3]:
        commands.append(["--json", "--device", name, "--workload", str(workload), *sysroot])
    return commands


STATE = Path(tempfile.mkdtemp(prefix="xfs-advisor-compare-state-"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("baseline", help="a checkout of the earlier version")
    ap.add_argument("--luns", type=int, default=1024, help="SAN host LUNs (x4 paths + 1 dm)")
    ap.add_argument("--keep-going", action="store_true", help="report every difference")
    args = ap.parse_args()
    baseline = Path(args.baseline).resolve()
    if not (baseline / "advisor" / "__init__.py").is_file():
        sys.exit(f"{baseline}: no advisor package there")
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    work = Path(tempfile.mkdtemp(prefix="xfs-advisor-compare-", dir=shm))
    differ = same = 0
    try:
        for host, root in _hosts(work, args.luns).items():
            commands = _commands(root, small=not host.startswith("san-"))
            for argv in commands:
                ours, theirs = _run(REPO, argv), _run(baseline, argv)
                shown = " ".join(a if not a.startswith(str(work)) else "ROOT" for a in argv)
                if ours == theirs:
                    same += 1
                    continue
                differ += 1
                print(f"DIFFERS {host}: {shown}: exit {ours[0]} vs {theirs[0]}, stdout "
                      f"{len(ours[1])} vs {len(theirs[1])} bytes, stderr {ours[2][:200]!r} vs "
                      f"{theirs[2][:200]!r}")
                if not args.keep_going:
                    return 1
            print(f"{host}: {len(commands)} commands compared")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(STATE, ignore_errors=True)
    print(f"{same} outputs identical, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
