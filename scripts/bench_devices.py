#!/usr/bin/env python3
"""Benchmark `xfs-advisor devices --json --sysroot` against lsblk on a generated SAN host.

Four commands, interleaved: every fact (the default --json), the same columns as lsblk is asked
for (`--fields`), a proposal for one of the multipath devices (`--json --device dm-0 --workload`,
which reads every device too), and lsblk itself; --commands picks which (full, same, propose,
lsblk: lsblk's time grows faster than the number of devices, and at 100,000 it takes tens of
minutes). With --baseline DIR (a checkout of an earlier version, e.g. `git archive d231dc8 |
tar -x -C DIR`), the advisor's commands also run from DIR's advisor package (same interpreter
and packages), in the same run. Each run gives its wall and CPU time and its peak RSS.

The host: LUNS LUNs seen over PATHS paths each (LUNS*PATHS sd devices) plus one multipath dm device
per LUN, with slaves/holders links, the way the kernel lays them out. Both tools read the same
tree in the same run; lsblk is asked for the same facts. Prints wall and CPU times, the peak RSS
of each (children's getrusage) and the ratios, with the load average before and after. CPU time
(user + system) is the figure a busy machine moves least. Not a test: figures to read.

The 100,000-device host: --luns 20000, with --keep DIR on disk to build it once (it has 3.3
million entries: more than /dev/shm's inode limit, where each hard link counts). Files with the
same text are hard links to one, which leaves ~180,000 pages of file data instead of 2.3 million:
sysfs holds no page per attribute, and a tree that does not fit in the page cache measures the
disk instead of the tools.

    .venv/bin/python scripts/bench_devices.py [--luns 1024] [--paths 4] [--runs 3] [--keep DIR]
                                              [--baseline DIR] [--commands full,lsblk,...]
                                              [--no-warm]

--keep DIR more than once benchmarks each tree in turn (each reused as it is, whatever --luns
says) and ends with each command's peak RSS on each tree and what a device adds to it, e.g.

    scripts/bench_devices.py --keep /var/tmp/trees/10k --keep /var/tmp/trees/100k \\
                             --commands full,propose --runs 1 --baseline DIR
"""

from __future__ import annotations

import argparse
import errno
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

LSBLK_COLUMNS = ("NAME,KNAME,SIZE,ROTA,MIN-IO,OPT-IO,PHY-SEC,LOG-SEC,ALIGNMENT,RQ-SIZE,"
                 "DISC-GRAN,DISC-MAX")
#: The same columns as `devices --json --fields` names them (NAME and KNAME are always given).
FIELDS_FOR_COLUMNS = ("size_bytes", "rotational", "min_io", "opt_io", "physical_sector",
                      "logical_sector", "alignment_offset", "nr_requests", "discard_granularity",
                      "discard_max_bytes")


class _Files:
    """Writes the tree's attribute files, each distinct content once: a file with the same text
    as one written before is a hard link to it. sysfs holds no page per attribute; a tree of
    100,000 devices written file by file holds 2.3 million (9 GB), more than a shared machine's
    page cache keeps, and a scan of it then measures the disk. Linked, it holds ~180,000 (the
    device numbers, names and WWIDs). Both tools read the same files."""

    def __init__(self) -> None:
        self.first: dict[str, Path] = {}

    def __call__(self, path: Path, text: str) -> None:
        seen = self.first.get(text)
        if seen is not None:
            try:
                os.link(seen, path)
                return
            except OSError as err:  # EMLINK: ext4 links an inode 65,000 times at most
                if err.errno != errno.EMLINK:
                    raise
        path.write_text(text + "\n")
        self.first[text] = path


def _sd_name(i: int) -> str:
    """sda..sdz, sdaa..sdzz, sdaaa...: the kernel's sd naming."""
    letters = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        letters = chr(ord("a") + r) + letters
    return "sd" + letters


#: The sixteen majors sd cycles through; minors above 255 use the extended dev_t bits.
SD_MAJORS = (8, 65, 66, 67, 68, 69, 70, 71, 128, 129, 130, 131, 132, 133, 134, 135)


def _sd_devno(index: int) -> str:
    """MAJ:MIN of the index-th sd disk, as drivers/scsi/sd.c numbers them."""
    minor = ((index & 0xF) << 4) | (index & 0xFFF00)
    return f"{SD_MAJORS[(index >> 4) & 0xF]}:{minor}"


def _queue(put: _Files, qdir: Path, *, rotational: int, nr_requests: int) -> None:
    qdir.mkdir(parents=True)
    for name, value in (
        ("rotational", rotational), ("nr_requests", nr_requests), ("write_cache", "write through"),
        ("fua", 1), ("dax", 0), ("zoned", "none"), ("scheduler", "[mq-deadline] none"),
        ("discard_granularity", 0), ("discard_max_bytes", 0), ("logical_block_size", 512),
        ("physical_block_size", 512), ("minimum_io_size", 65536), ("optimal_io_size", 524288),
    ):
        put(qdir / name, str(value))


def generate(root: Path, luns: int, paths: int) -> int:
    """Write the SAN host under root; returns the number of block devices."""
    sys_block = root / "sys" / "block"
    dev_block = root / "sys" / "dev" / "block"
    put = _Files()
    sys_block.mkdir(parents=True)
    dev_block.mkdir(parents=True)
    (root / "proc" / "self").mkdir(parents=True)
    put(root / "proc" / "self" / "mountinfo", "1 0 253:0 / / rw - xfs /dev/mapper/mpatha rw")
    put(root / "proc" / "swaps", "Filename\tType\tSize\tUsed\tPriority")
    lun_size = str((100 << 30) // 512)
    n = 0
    for lun in range(luns):
        dm = f"dm-{lun}"
        dm_dir = root / "sys" / "devices" / "virtual" / "block" / dm
        slaves: list[tuple[str, str]] = []
        for path in range(paths):
            index = lun * paths + path
            name = _sd_name(index)
            host, target = path, lun
            devpath = (f"pci0000:00/0000:00:03.0/host{host}/rport-{host}:0-0/target{host}:0:0/"
                       f"{host}:0:0:{target}")
            d = root / "sys" / "devices" / devpath / "block" / name
            d.mkdir(parents=True)
            maj_min = _sd_devno(index)
            for fname, value in (("dev", maj_min), ("size", lun_size), ("ro", "0"),
                                 ("removable", "0"), ("alignment_offset", "0")):
                put(d / fname, value)
            _queue(put, d / "queue", rotational=0, nr_requests=256)
            (d / "mq" / "0").mkdir(parents=True)
            put(d / "mq" / "0" / "nr_tags", "256")
            (d / "slaves").mkdir()
            (d / "holders").mkdir()
            os.symlink(f"../../../../../virtual/block/{dm}", d / "holders" / dm)
            dev_dir = root / "sys" / "devices" / devpath
            put(dev_dir / "queue_depth", "64")
            put(dev_dir / "model", "SAN LUN")
            put(dev_dir / "wwid", f"naa.600a0b80000000000000000000{lun:05d}")
            os.symlink(f"../../../{host}:0:0:{target}", d / "device")
            os.symlink(f"../devices/{devpath}/block/{name}", sys_block / name)
            os.symlink(f"../../devices/{devpath}/block/{name}", dev_block / maj_min)
            slaves.append((devpath, name))
            n += 1
        dm_dir.mkdir(parents=True)
        for fname, value in (("dev", f"253:{lun}"), ("size", lun_size), ("ro", "0"),
                             ("removable", "0"), ("alignment_offset", "0")):
            put(dm_dir / fname, value)
        _queue(put, dm_dir / "queue", rotational=0, nr_requests=128)
        (dm_dir / "dm").mkdir()
        put(dm_dir / "dm" / "name", f"mpath{lun}")
        put(dm_dir / "dm" / "uuid", f"mpath-3600a0b80000000000000000000{lun:05d}")
        (dm_dir / "slaves").mkdir()
        (dm_dir / "holders").mkdir()
        for devpath, name in slaves:
            os.symlink(f"../../../../{devpath}/block/{name}", dm_dir / "slaves" / name)
        os.symlink(f"../devices/virtual/block/{dm}", sys_block / dm)
        os.symlink(f"../../devices/virtual/block/{dm}", dev_block / f"253:{lun}")
        n += 1
    return n


#: Run one command from a fresh interpreter, its output counted and thrown away, and print its
#: wall seconds, CPU seconds (user + system, the children's: steadier on a shared machine), peak
#: RSS in KiB and output bytes. getrusage (RUSAGE_CHILDREN) keeps the maximum RSS over every
#: child so far, so each run needs its own parent; one run gives all four figures (a run of
#: 100,000 devices takes minutes).
_RUN = """
import resource, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE)
size = 0
while chunk := proc.stdout.read(1 << 20):
    size += len(chunk)
code = proc.wait()
wall = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(code, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, size)
"""


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int, int]:
    """Wall seconds, CPU seconds, peak RSS (KiB) and stdout size of one run."""
    proc = subprocess.run([sys.executable, "-c", _RUN, *argv], capture_output=True, text=True,
                          cwd=cwd, env=env)
    code, wall, cpu, rss, size = proc.stdout.split() if proc.returncode == 0 else ("1",) * 5
    if code != "0":
        sys.exit(f"{' '.join(argv)} failed: {proc.stderr[:300]}")
    return float(wall), float(cpu), int(rss), int(size)


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.1f} (5 min: {five:.1f})"


#: The advisor's commands, by their --commands names.
COMMANDS = ("full", "same", "propose", "lsblk")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--luns", type=int, default=1024)
    ap.add_argument("--paths", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3, help="timed runs per tool (best is reported)")
    ap.add_argument("--keep", metavar="DIR", action="append", default=[],
                    help="generate into DIR and keep it (reused when it already holds a tree); "
                         "more than once: each tree in turn, and the peak RSS of each compared")
    ap.add_argument("--baseline", metavar="DIR",
                    help="a checkout of an earlier version, run beside this one")
    ap.add_argument("--commands", default=",".join(COMMANDS),
                    help=f"which to run, of {','.join(COMMANDS)}")
    ap.add_argument("--no-warm", action="store_true",
                    help="no untimed run of each first (the page cache is warm already)")
    args = ap.parse_args()
    chosen = [c for c in args.commands.split(",") if c]
    if not chosen or set(chosen) - set(COMMANDS):
        sys.exit(f"--commands: choose from {','.join(COMMANDS)}")
    trees = {"": REPO}
    if args.baseline:
        trees["baseline "] = Path(args.baseline).resolve()
        if not (trees["baseline "] / "advisor" / "__init__.py").is_file():
            sys.exit(f"--baseline {args.baseline}: no advisor package there")
    for keep in args.keep:  # a tree half written (an interrupted run) is not written into again
        work = Path(keep)
        if work.is_dir() and any(work.iterdir()) and not (work / "sys" / "block").is_dir():
            sys.exit(f"--keep {keep}: not empty, and no sys/block in it (an unfinished tree?)")
    peaks: list[tuple[int, dict[str, int]]] = []
    for keep in args.keep or [None]:
        if len(args.keep) > 1:
            print(f"== {keep}")
        peaks.append(_bench_tree(args, chosen, trees, keep))
    if len(peaks) > 1:
        _compare_peaks(peaks)
    return 0


def _compare_peaks(peaks: list[tuple[int, dict[str, int]]]) -> None:
    """Each command's peak RSS on each tree, and what a device adds to it from the smallest tree
    to the largest."""
    peaks = sorted(peaks, key=lambda p: p[0])
    (low, first), (high, last) = peaks[0], peaks[-1]
    for key in first:
        sizes = ", ".join(f"{count} devices {rss[key] / 1024:.0f} MiB" for count, rss in peaks)
        grows = (last[key] - first[key]) * 1024 / (high - low) if high > low else 0.0
        print(f"peak RSS of {key}: {sizes}; {last[key] / first[key]:.2f}x from {low} to {high} "
              f"devices, {grows:.0f} bytes a device")


def _bench_tree(args: argparse.Namespace, chosen: list[str], trees: dict[str, Path],
                keep: str | None) -> tuple[int, dict[str, int]]:
    """Benchmark the tree in `keep` (generated there first when it holds none; None: a new one
    in memory, removed afterwards): its block devices and each command's peak RSS (KiB)."""
    lsblk = shutil.which("lsblk") or "/usr/bin/lsblk"
    # sysfs lives in memory: a tmpfs is the fair stand-in (and generates 10x faster than a disk).
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    work = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="xfs-advisor-bench-", dir=shm))
    workload = REPO / "advisor" / "data" / "example-workload.toml"
    try:
        start = time.perf_counter()
        if (work / "sys" / "block").is_dir():  # --keep DIR from an earlier run: reuse it
            count = len(os.listdir(work / "sys" / "block"))
            print(f"reusing {count} block devices in {work}")
        else:
            count = generate(work, args.luns, args.paths)
            print(f"generated {count} block devices ({args.luns} LUNs x {args.paths} paths + "
                  f"{args.luns} multipath dm) in {time.perf_counter() - start:.1f} s: {work}")
        same = ",".join(FIELDS_FOR_COLUMNS)
        python = [sys.executable, "-m", "advisor"]
        root = ["--sysroot", str(work)]
        commands: dict[str, tuple[list[str], Path, dict[str, str]]] = {}
        labels: dict[str, str] = {}
        for prefix, tree in trees.items():
            env = {**os.environ, "PYTHONPATH": str(tree)}
            commands[prefix + "full"] = ([*python, "devices", "--json", *root], tree, env)
            commands[prefix + "same"] = ([*python, "devices", "--json", "--fields", same, *root],
                                         tree, env)
            commands[prefix + "propose"] = ([*python, "--json", "--device", "dm-0", "--workload",
                                             str(workload), *root], tree, env)
            labels[prefix + "full"] = f"{prefix}devices --json (every fact)"
            labels[prefix + "same"] = f"{prefix}devices --json --fields (lsblk's columns)"
            labels[prefix + "propose"] = f"{prefix}--json --device dm-0 --workload (a proposal)"
        commands["lsblk"] = ([lsblk, *root, "-J", "-b", "-o", LSBLK_COLUMNS], REPO,
                             dict(os.environ))
        labels["lsblk"] = f"lsblk -J -b -o {LSBLK_COLUMNS}"
        commands = {k: v for k, v in commands.items()
                    if k.removeprefix("baseline ") in chosen}
        labels = {k: v for k, v in labels.items() if k in commands}
        print(f"load average before: {_load()}")
        if not args.no_warm:
            for argv, cwd, env in commands.values():  # warm the page cache, then interleave
                subprocess.run(argv, capture_output=True, cwd=cwd, env=env)
        walls: dict[str, list[float]] = {k: [] for k in commands}
        cpus: dict[str, list[float]] = {k: [] for k in commands}
        rss: dict[str, int] = dict.fromkeys(commands, 0)
        out: dict[str, int] = {}
        for _ in range(args.runs):
            for key, (argv, cwd, env) in commands.items():
                wall, cpu, peak, out[key] = timed(argv, cwd, env)
                walls[key].append(wall)
                cpus[key].append(cpu)
                rss[key] = max(rss[key], peak)
        best = {key: min(w) for key, w in walls.items()}
        cpu_best = {key: min(c) for key, c in cpus.items()}
        print(f"{count} block devices, {args.runs} interleaved runs each (best of them); "
              f"load average after: {_load()}")
        for key, label in labels.items():
            print(f"{label:<62} wall {best[key]:6.2f} s  CPU {cpu_best[key]:6.2f} s  "
                  f"{out[key] / 1e6:6.1f} MB out  peak RSS {rss[key] / 1024:5.0f} MiB  "
                  f"(walls {', '.join(f'{t:.2f}' for t in walls[key])})")
        for prefix in trees:
            ratios = [f"{what} / lsblk: wall {best[prefix + key] / best['lsblk']:.2f}x, CPU "
                      f"{cpu_best[prefix + key] / cpu_best['lsblk']:.2f}x, peak RSS "
                      f"{rss[prefix + key] / rss['lsblk']:.2f}x"
                      for key, what in (("same", "same columns"), ("full", "every fact"))
                      if prefix + key in commands and "lsblk" in commands]
            if ratios:
                print(f"{prefix or 'this tree: '}{'; '.join(ratios)}")
        if args.baseline:
            for key in (c for c in chosen if c != "lsblk"):
                print(f"{labels[key]}: wall {best[key] / best['baseline ' + key]:.2f}x, CPU "
                      f"{cpu_best[key] / cpu_best['baseline ' + key]:.2f}x, peak RSS "
                      f"{rss[key] / rss['baseline ' + key]:.2f}x the baseline's")
        goals = [f"devices --json under 20 s at 100,000 devices (here {count}: "
                 f"{best['full']:.1f} s)" if "full" in chosen else "",
                 f"a proposal under 20 s ({best['propose']:.1f} s)" if "propose" in chosen else "",
                 f"same columns under 0.5x lsblk's time ({best['same'] / best['lsblk']:.2f}x)"
                 if {"same", "lsblk"} <= set(chosen) else ""]
        print(f"goals: {'; '.join(g for g in goals if g)}")
        return count, rss
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
