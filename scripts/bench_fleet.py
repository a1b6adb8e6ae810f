#!/usr/bin/env python3
"""Benchmark `xfs-advisor fleet DIR` on many hosts: fixture hosts collected once with the Ansible
role's own collect.sh (over hand-written trees and the real captures of tests/data/sysfs-dumps),
then replicated under other names (hard links: distinct folders, as fetched results are) up to
--hosts. Runs the report with every CPU and with one, and for a tenth of the hosts, each in a
fresh process; prints wall time, hosts/s, the largest process's peak RSS (getrusage of the
children: the report or one of its workers) and the machine's load; then the two owner questions
(`fleet --by-rule`, `fleet --by-proposal`) on all the hosts (11 fixture hosts, 10 shapes:
8 hand-written trees, one a disk with a mounted partition whose proposal warns, and the 3 real
captures, two of which share a shape), and the controller's store step for
a tenth of them: the role's store.py once per host (as the role did) against one --batch run.
Each figure is printed beside the one of the previous run (kept in --figures FILE). With
--baseline DIR (another checkout, e.g. `git worktree add /tmp/fleet-base main`), each report runs
from DIR's advisor package too, right after this tree's, on the same results: the two figures of
the same moment side by side, and whether the two reports are the same. Besides the wall time,
the CPU time of the report and everything it waited for (its workers, mkfs.xfs): on a loaded
machine the wall time follows the CPU share the scheduler gives, and the CPU time is what a
change moves. Not a test: figures to read.

    .venv/bin/python scripts/bench_fleet.py [--hosts 1000] [--keep DIR] [--figures FILE]
                                            [--baseline DIR] [--report-only]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.fleet_hosts import TOOL, collect  # noqa: E402
from tests.inspect.sysfs_builder import Dev, Part, unpack_dumps, write_tree  # noqa: E402

GiB, TiB, KiB = 1 << 30, 1 << 40, 1 << 10
SAS = "pci0000:00/0000:00:02.0/host2/target2:0:0/2:0:0:0"
NVME = "pci0000:00/0000:00:01.0/0000:01:00.0/nvme/nvme0"

OLD_FSTAB = "UUID=0000-gone /srv/old xfs delaylog,nofail 0 0\n"
#: name -> (devices to propose for, workload answers)
REQUESTS = {
    "raid": (["sdb"], {"concurrent_writers": 16, "access": "write-heavy"}),
    "nvme": (["nvme0n1"], {"largest_directory_entries": 200000}),
    "simple-lvm": (["sda", "nvme0n1"], {"concurrent_writers": 8}),
    "simple-nvme": (["sdb"], {}),
    "multi-devs-bcachefs": (["sda"], {"fsyncs_per_second": 500}),
    "mounted-part": (["sdb"], {"concurrent_writers": 4}),
    "sata-ssd": (["sda"], {"access": "read-heavy", "mount_point": "/srv/cache"}),
    "hdd-4kn": (["sdc"], {"median_file_size": "4KiB", "atime_needed": False}),
    "nvme-4k": (["nvme0n1"], {"fsyncs_per_second": 5000, "concurrent_writers": 32}),
    "virtio": (["vda"], {"mount_point": "/var/lib/data"}),
    "two-hdd": (["sdb", "sdc"], {"write_pattern": "sequential"}),
}


def _trees(work: Path) -> dict[str, Path]:
    trees = {
        "raid": write_tree(work / "raid", [
            Dev("sda", 480 * GiB, "8:0", devpath=SAS, rotational=0,
                partitions=[Part("sda1", 2048, 1 * GiB), Part("sda2", 2048 + GiB // 512,
                                                              400 * GiB)]),
            Dev("sdb", 16 * TiB, "8:16", devpath=SAS, min_io=64 * KiB, opt_io=512 * KiB,
                write_cache="write through", queue_depth=256)]),
        "nvme": write_tree(work / "nvme", [
            Dev("nvme0n1", 1 * TiB, "259:0", devpath=NVME, rotational=0, fua=1, hw_queues=4,
                scheduler="[none] mq-deadline")]),
    }
    # A disk whose first partition is mounted: its own proposal warns (formatting the whole
    # disk destroys the partition), and the warning must reach --by-proposal.
    trees["mounted-part"] = write_tree(work / "mounted-part", [
        Dev("sda", 240 * GiB, "8:0", devpath=SAS, rotational=0),
        Dev("sdb", 4 * TiB, "8:16", devpath=SAS, partitions=[Part("sdb1", 2048, 1024 * GiB)])],
        mountinfo="1 0 8:17 / /data rw - xfs /dev/sdb1 rw")
    trees["sata-ssd"] = write_tree(work / "sata-ssd", [
        Dev("sda", 960 * GiB, "8:0", devpath=SAS, rotational=0, discard_granularity=4096,
            discard_max_bytes=2 * GiB)])
    trees["hdd-4kn"] = write_tree(work / "hdd-4kn", [
        Dev("sda", 480 * GiB, "8:0", devpath=SAS, rotational=0),
        Dev("sdc", 8 * TiB, "8:32", devpath=SAS, logical=4096, physical=4096)])
    trees["nvme-4k"] = write_tree(work / "nvme-4k", [
        Dev("nvme0n1", 4 * TiB, "259:0", devpath=NVME, rotational=0, logical=4096,
            physical=4096, fua=1, hw_queues=8, write_cache="write through",
            scheduler="[none] mq-deadline")])
    trees["virtio"] = write_tree(work / "virtio", [
        Dev("vda", 100 * GiB, "254:0", devpath="pci0000:00/0000:00:05.0/virtio2",
            rotational=1)])
    trees["two-hdd"] = write_tree(work / "two-hdd", [
        Dev("sdb", 12 * TiB, "8:16", devpath=SAS, physical=4096),
        Dev("sdc", 12 * TiB, "8:32", devpath=SAS, physical=4096)])
    shared = REPO / "tests" / "data" / "sysfs-dumps"
    trees.update(unpack_dumps(shared, work))
    # Two shapes have an fstab line with an option Linux 4.0 removed, for a disk not there (the
    # audit of a --sysroot tree reads DIR/xfs-advisor-audit/fstab): findings for --by-rule.
    for name in ("raid", "simple-lvm"):
        if name in trees:
            (trees[name] / "xfs-advisor-audit").mkdir(exist_ok=True)
            (trees[name] / "xfs-advisor-audit" / "fstab").write_text(OLD_FSTAB)
    return trees


def _tool(tree: Path | None) -> tuple[list[str], dict[str, str], Path]:
    """The command that runs xfs-advisor from `tree` (None: this tree's installed one), its
    environment and the folder it runs in (`python -m` puts that folder first on sys.path)."""
    if tree is None:
        return [str(TOOL)], dict(os.environ), REPO
    return [sys.executable, "-m", "advisor"], {**os.environ, "PYTHONPATH": str(tree)}, tree


def _measure(results: Path, jobs: int,
             tree: Path | None = None) -> tuple[float, float, int, dict[str, int], str]:
    """Wall time, CPU time (user + system of the report, its workers and what they ran), peak
    RSS in KiB of the largest process, the report's counts, and a digest of the report (less
    the rules folders, which name the checkout)."""
    # The measuring process is a child subreaper: the report's forkserver (and the workers it
    # forked) are its children once the report exits, and are waited for, so that the CPU time
    # of the children counts them.
    code = ("import ctypes, hashlib, os, resource, subprocess, sys, time, json\n"
            "ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER\n"
            "t = time.perf_counter()\n"
            "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "wall = time.perf_counter() - t\n"
            "assert p.returncode == 0, p.stderr\n"
            "doc = json.loads(p.stdout)\n"
            "counts = doc['counts']\n"
            "doc.pop('rules_dirs')  # each checkout's own rules folder\n"
            "digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()\n"
            "while True:\n"
            "    try:\n"
            "        os.wait()\n"
            "    except ChildProcessError:\n"
            "        break\n"
            "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "print(json.dumps([wall, r.ru_utime + r.ru_stime, r.ru_maxrss, counts, digest]))\n")
    argv, env, cwd = _tool(tree)
    out = subprocess.run([sys.executable, "-c", code, *argv, "fleet", "--json", "--jobs",
                          str(jobs), str(results.resolve())], check=True, capture_output=True,
                         text=True, env=env, cwd=cwd)
    wall, cpu, rss, counts, digest = json.loads(out.stdout)
    return wall, cpu, rss, counts, digest


def _timed(argv: list[str], stdin: str | None = None,
           env: dict[str, str] | None = None) -> tuple[float, int, str]:
    """Wall time, peak RSS in KiB and stdout of one command."""
    code = ("import resource, subprocess, sys, time, json\n"
            "t = time.perf_counter()\n"
            "p = subprocess.run(sys.argv[1:], capture_output=True, text=True,\n"
            "                   input=sys.stdin.read())\n"
            "wall = time.perf_counter() - t\n"
            "print(json.dumps([wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,"
            " p.returncode, p.stdout[-2000:]]))\n")
    out = subprocess.run([sys.executable, "-c", code, *argv], check=True, capture_output=True,
                         text=True, input=stdin or "", env=env)
    wall, rss, rc, text = json.loads(out.stdout)
    assert rc in (0, 6), (argv, text)
    return wall, rss, text


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _beside(key: str, value: float, previous: dict[str, float], now: dict[str, float]) -> str:
    now[key] = value
    before = previous.get(key)
    return f"(previous run: {before:.1f})" if before is not None else "(no previous run)"


def _stores(protos: list[Path], work: Path, n: int, previous: dict[str, float],
            now: dict[str, float]) -> None:
    """The store step for n hosts: store.py once per host, then one --batch run."""
    import base64
    import tarfile

    store_py = REPO / "ansible" / "roles" / "xfs_advisor" / "files" / "store.py"
    payloads = []
    for proto in protos:
        packed = work / f"{proto.name}.tar.gz"
        with tarfile.open(packed, "w:gz") as tf:
            tf.add(proto, arcname=".")
        payloads.append(packed)
    one, many = work / "stored-one", work / "stored-batch"
    started = time.perf_counter()
    for i in range(n):
        data = base64.b64encode(payloads[i % len(payloads)].read_bytes()).decode()
        subprocess.run([sys.executable, str(store_py), str(one), f"h{i:05d}"], check=True,
                       capture_output=True, input=json.dumps({"payload": data}), text=True)
    per_host = time.perf_counter() - started
    incoming = work / "stored-batch.incoming"
    incoming.mkdir()
    for i in range(n):
        os.link(payloads[i % len(payloads)], incoming / f"h{i:05d}.tar.gz")
    doc = json.dumps({"incoming": str(incoming), "hosts": {f"h{i:05d}": "" for i in range(n)}})
    wall, rss, _ = _timed([sys.executable, str(store_py), str(many), "--batch"], doc)
    print(f"store {n} hosts: one store.py per host {per_host:6.1f} s "
          f"({per_host / n:.3f} s/host) {_beside('store_per_host_s', per_host, previous, now)}; "
          f"one --batch run {wall:6.1f} s ({wall / n:.3f} s/host), peak RSS {rss / 1024:.1f} MiB "
          f"{_beside('store_batch_s', wall, previous, now)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--keep", metavar="DIR",
                    help="build the results here and keep them (a second run reuses them)")
    ap.add_argument("--figures", metavar="FILE", default=str(REPO / ".bench_fleet.json"),
                    help="this run's figures are kept here, and the previous run's read from it")
    ap.add_argument("--baseline", type=Path, metavar="DIR",
                    help="a checkout of another version: its reports run too, beside this tree's")
    ap.add_argument("--report-only", action="store_true",
                    help="only the reports (no --by-rule, --by-proposal or store step)")
    args = ap.parse_args()
    baseline = args.baseline.resolve() if args.baseline else None
    if baseline is not None and not (baseline / "advisor" / "fleet.py").is_file():
        ap.error(f"--baseline {baseline} is not a checkout of xfs-advisor")
    try:
        previous: dict[str, float] = json.loads(Path(args.figures).read_text())
    except (OSError, ValueError):
        previous = {}
    now: dict[str, float] = {}
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-fleet."))
    work.mkdir(parents=True, exist_ok=True)
    try:
        protos, order = work / "protos", work / "protos.order"
        made = []
        if order.exists():  # a --keep folder of an earlier run: its hosts are reused
            made = [protos / name for name in order.read_text().split()]
        else:  # a fresh folder, or one an interrupted run left: its hosts are made again
            shutil.rmtree(work / "trees", ignore_errors=True)
            shutil.rmtree(protos, ignore_errors=True)
            for name, tree in _trees(work / "trees").items():
                devices, workload = REQUESTS.get(name, ([], {}))
                made.append(collect(protos, name, tree, devices, workload))
            order.write_text("".join(f"{p.name}\n" for p in made))
        cpus = len(os.sched_getaffinity(0))
        print(f"fixture hosts: {', '.join(p.name for p in made)}; CPUs: {cpus}")
        for n in (args.hosts // 10, args.hosts):
            results = work / f"results-{n}"
            if not results.exists():
                results.mkdir()
                for i in range(n):
                    proto = made[i % len(made)]
                    shutil.copytree(proto, results / f"{proto.name}-{i:05d}", symlinks=True,
                                    copy_function=os.link)
            for jobs in sorted({cpus, 1}, reverse=True):
                load = _load()
                wall, cpu, rss, counts, ours = _measure(results, jobs)
                print(f"{n:6d} hosts, {jobs} worker(s): {wall:6.1f} s "
                      f"{_beside(f'report_{n}_{jobs}_s', wall, previous, now)}, "
                      f"CPU {cpu:5.1f} s {_beside(f'cpu_{n}_{jobs}_s', cpu, previous, now)}, "
                      f"{n / wall:6.1f} hosts/s, peak RSS {rss / 1024:6.1f} MiB "
                      f"{_beside(f'rss_{n}_{jobs}_mib', rss / 1024, previous, now)}; load before "
                      f"{load}, after {_load()}; {counts}")
                if baseline is not None:
                    load = _load()
                    wall, cpu, rss, counts, theirs = _measure(results, jobs, baseline)
                    print(f"{'':6s}  baseline {baseline}: {wall:6.1f} s, CPU {cpu:5.1f} s, "
                          f"{n / wall:6.1f} hosts/s, peak RSS {rss / 1024:6.1f} MiB; load "
                          f"before {load}, after {_load()}; {counts}; the same report: "
                          f"{'yes' if theirs == ours else 'NO'}")
        if args.report_only:
            Path(args.figures).write_text(json.dumps(now, indent=1) + "\n")
            return 0
        for view in ("--by-rule", "--by-proposal"):
            wall, rss, text = _timed([str(TOOL), "fleet", view, str(results)])
            print(f"{n:6d} hosts, fleet {view}: {wall:6.1f} s "
                  f"{_beside(f'{view}_{n}_s', wall, previous, now)}, peak RSS "
                  f"{rss / 1024:6.1f} MiB; first lines:")
            print("    " + "\n    ".join(text.splitlines()[:6]))
        _stores(made, work, max(1, args.hosts // 10), previous, now)
        Path(args.figures).write_text(json.dumps(now, indent=1) + "\n")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
