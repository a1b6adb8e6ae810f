#!/usr/bin/env python3
"""Benchmark `xfs-advisor devices --json --sysroot` against lsblk on a generated SAN host.

Three commands, interleaved: every fact (the default --json), the same columns as lsblk is asked
for (`--fields`, issue 10's comparison), and lsblk itself.

The host: LUNS LUNs seen over PATHS paths each (LUNS*PATHS sd devices) plus one multipath dm device
per LUN, with slaves/holders links, the way the kernel lays them out. Both tools read the same
tree in the same run; lsblk is asked for the same facts. Prints wall times, the ratio and the peak
RSS of each (children's getrusage). Not a test: figures to read.

    .venv/bin/python scripts/bench_devices.py [--luns 1024] [--paths 4] [--runs 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LSBLK_COLUMNS = ("NAME,KNAME,SIZE,ROTA,MIN-IO,OPT-IO,PHY-SEC,LOG-SEC,ALIGNMENT,RQ-SIZE,"
                 "DISC-GRAN,DISC-MAX")
#: The same columns as `devices --json --fields` names them (NAME and KNAME are always given).
FIELDS_FOR_COLUMNS = ("size_bytes", "rotational", "min_io", "opt_io", "physical_sector",
                      "logical_sector", "alignment_offset", "nr_requests", "discard_granularity",
                      "discard_max_bytes")


def _write(path: Path, text: str) -> None:
    path.write_text(text + "\n")


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
    minor = ((index & 0xF) << 4) | ((index & 0xFFF00) << 12)
    return f"{SD_MAJORS[(index >> 4) & 0xF]}:{minor}"


def _queue(qdir: Path, *, rotational: int, nr_requests: int) -> None:
    qdir.mkdir(parents=True)
    for name, value in (
        ("rotational", rotational), ("nr_requests", nr_requests), ("write_cache", "write through"),
        ("fua", 1), ("dax", 0), ("zoned", "none"), ("scheduler", "[mq-deadline] none"),
        ("discard_granularity", 0), ("discard_max_bytes", 0), ("logical_block_size", 512),
        ("physical_block_size", 512), ("minimum_io_size", 65536), ("optimal_io_size", 524288),
    ):
        _write(qdir / name, str(value))


def generate(root: Path, luns: int, paths: int) -> int:
    """Write the SAN host under root; returns the number of block devices."""
    sys_block = root / "sys" / "block"
    dev_block = root / "sys" / "dev" / "block"
    sys_block.mkdir(parents=True)
    dev_block.mkdir(parents=True)
    (root / "proc" / "self").mkdir(parents=True)
    _write(root / "proc" / "self" / "mountinfo", "1 0 253:0 / / rw - xfs /dev/mapper/mpatha rw")
    _write(root / "proc" / "swaps", "Filename\tType\tSize\tUsed\tPriority")
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
                _write(d / fname, value)
            _queue(d / "queue", rotational=0, nr_requests=256)
            (d / "mq" / "0").mkdir(parents=True)
            _write(d / "mq" / "0" / "nr_tags", "256")
            (d / "slaves").mkdir()
            (d / "holders").mkdir()
            os.symlink(f"../../../../../virtual/block/{dm}", d / "holders" / dm)
            dev_dir = root / "sys" / "devices" / devpath
            _write(dev_dir / "queue_depth", "64")
            _write(dev_dir / "model", "SAN LUN")
            _write(dev_dir / "wwid", f"naa.600a0b80000000000000000000{lun:05d}")
            os.symlink(f"../../../{host}:0:0:{target}", d / "device")
            os.symlink(f"../devices/{devpath}/block/{name}", sys_block / name)
            os.symlink(f"../../devices/{devpath}/block/{name}", dev_block / maj_min)
            slaves.append((devpath, name))
            n += 1
        dm_dir.mkdir(parents=True)
        for fname, value in (("dev", f"253:{lun}"), ("size", lun_size), ("ro", "0"),
                             ("removable", "0"), ("alignment_offset", "0")):
            _write(dm_dir / fname, value)
        _queue(dm_dir / "queue", rotational=0, nr_requests=128)
        (dm_dir / "dm").mkdir()
        _write(dm_dir / "dm" / "name", f"mpath{lun}")
        _write(dm_dir / "dm" / "uuid", f"mpath-3600a0b80000000000000000000{lun:05d}")
        (dm_dir / "slaves").mkdir()
        (dm_dir / "holders").mkdir()
        for devpath, name in slaves:
            os.symlink(f"../../../../{devpath}/block/{name}", dm_dir / "slaves" / name)
        os.symlink(f"../devices/virtual/block/{dm}", sys_block / dm)
        os.symlink(f"../../devices/virtual/block/{dm}", dev_block / f"253:{lun}")
        n += 1
    return n


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system: steadier on a shared machine) and stdout size."""
    cpu = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{argv[0]} failed: {proc.stderr.decode()[:300]}")
    return wall, _children_cpu() - cpu, len(proc.stdout)


#: Run one command from a fresh interpreter and print its children's peak RSS: getrusage
#: (RUSAGE_CHILDREN) keeps the maximum over every child so far, so each tool needs its own parent.
_PEAK = ("import resource, subprocess, sys; "
         "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True); "
         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def peak_rss_kib(argv: list[str]) -> int:
    out = subprocess.run([sys.executable, "-c", _PEAK, *argv], capture_output=True, text=True,
                         check=True)
    return int(out.stdout.strip())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--luns", type=int, default=1024)
    ap.add_argument("--paths", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3, help="timed runs per tool (best is reported)")
    ap.add_argument("--keep", metavar="DIR",
                    help="generate into DIR and keep it (reused when it already holds a tree)")
    args = ap.parse_args()

    advisor = shutil.which("xfs-advisor", path=str(Path(sys.executable).parent)) or "xfs-advisor"
    lsblk = shutil.which("lsblk") or "/usr/bin/lsblk"
    # sysfs lives in memory: a tmpfs is the fair stand-in (and generates 10x faster than a disk).
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="xfs-advisor-bench-",
                                                                   dir=shm))
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
        commands = {
            "full": [advisor, "devices", "--json", "--sysroot", str(work)],
            "same": [advisor, "devices", "--json", "--fields", same, "--sysroot", str(work)],
            "lsblk": [lsblk, "--sysroot", str(work), "-J", "-b", "-o", LSBLK_COLUMNS],
        }
        for argv in commands.values():  # warm the page cache once for each, then interleave
            subprocess.run(argv, capture_output=True)
        walls: dict[str, list[float]] = {k: [] for k in commands}
        cpus: dict[str, list[float]] = {k: [] for k in commands}
        out: dict[str, int] = {}
        for _ in range(args.runs):
            for key, argv in commands.items():
                wall, cpu, out[key] = timed(argv)
                walls[key].append(wall)
                cpus[key].append(cpu)
        rss = {key: peak_rss_kib(argv) for key, argv in commands.items()}
        best = {key: min(w) for key, w in walls.items()}
        labels = {"full": "xfs-advisor devices --json (every fact)",
                  "same": f"xfs-advisor devices --json --fields {same}",
                  "lsblk": f"lsblk -J -b -o {LSBLK_COLUMNS}"}
        for key, label in labels.items():
            print(f"{label}: best {best[key]:.2f} s of {args.runs} "
                  f"({', '.join(f'{t:.2f}' for t in walls[key])}), CPU {min(cpus[key]):.2f} s, "
                  f"{out[key] / 1e6:.1f} MB of JSON, peak RSS {rss[key] / 1024:.0f} MiB")
        same_ratio, full_ratio = best["same"] / best["lsblk"], best["full"] / best["lsblk"]
        print(f"time / lsblk's: same columns {same_ratio:.2f}x, every fact {full_ratio:.2f}x")
        goals = same_ratio < 0.8 and best["full"] < 2.0 and rss["full"] < 200 * 1024
        print("goals (same columns below 0.8x lsblk's time; every fact < 2 s and < 200 MB):",
              "met" if goals else "NOT met")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
