#!/usr/bin/env python3
"""Rules beyond the 2014 guide: one measured example per rule, on loop devices over sparse
files this script makes (root). Each case formats and mounts an A (the default) and a B (the
rule's option) and prints what differs: extents per file (xfs_bmap), allocation counters
(/sys/fs/xfs/<dev>/stats/stats), st_blksize, df, inode counts. Counts, not timings, so the
figures do not depend on the machine's load. Not a test: figures to read.

    .venv/bin/python scripts/bench_rules_beyond.py [CASE ...]   (no CASE: all; --list)

Cases are registered in CASES, one function per rule, so that a new rule adds its own beside
the others.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

MiB = 1 << 20
Case = Callable[[Path], None]
CASES: dict[str, Case] = {}


def case(fn: Case) -> Case:
    CASES[fn.__name__.replace("_", "-")] = fn
    return fn


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), check=check, capture_output=True, text=True)


@contextlib.contextmanager
def loop_device(backing: Path, size: int) -> Iterator[str]:
    """A loop device over a new sparse file; detached (and the file removed) whatever happens."""
    with open(backing, "wb") as f:
        f.truncate(size)
    dev = sh("losetup", "--find", "--show", str(backing)).stdout.strip()
    try:
        yield dev
    finally:
        sh("umount", "--quiet", dev, check=False)
        sh("losetup", "-d", dev, check=False)
        backing.unlink(missing_ok=True)


@contextlib.contextmanager
def fresh(work: Path, label: str, mkfs: list[str], mount: list[str],
          size: int = 2 << 30) -> Iterator[tuple[str, Path]]:
    """A new filesystem made with `mkfs` options, mounted with `mount` options."""
    with loop_device(work / f"{label}.img", size) as dev:
        sh("mkfs.xfs", "-q", "-f", "-K", *mkfs, dev)
        mnt = work / f"mnt-{label}"
        mnt.mkdir(exist_ok=True)
        sh("mount", *(["-o", ",".join(mount)] if mount else []), dev, str(mnt))
        try:
            yield dev, mnt
        finally:
            sh("umount", str(mnt), check=False)


def extents(path: Path) -> int:
    """Data extents of a file (xfs_bmap lines, holes left out)."""
    out = sh("xfs_bmap", str(path)).stdout.splitlines()[1:]
    return sum(1 for line in out if "hole" not in line)


def stat_line(dev: str, name: str) -> list[int]:
    base = os.path.basename(os.path.realpath(dev))
    for line in Path(f"/sys/fs/xfs/{base}/stats/stats").read_text().splitlines():
        parts = line.split()
        if parts[0] == name:
            return [int(p) for p in parts[1:]]
    return []


def streams(mnt: Path, writers: int, size: int, chunk: int = MiB) -> list[Path]:
    """`writers` files of `size` written at once, sequentially in `chunk` buffered writes."""
    files = [mnt / f"stream{i}" for i in range(writers)]
    data = os.urandom(chunk)

    def write(path: Path) -> None:
        with open(path, "wb") as f:
            for _ in range(size // chunk):
                f.write(data)
                f.flush()
                os.fsync(f.fileno()) if random.random() < 0.02 else None

    threads = [threading.Thread(target=write, args=(p,)) for p in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sh("sync")
    return files


def show(label: str, **figures: object) -> None:
    print(f"  {label:<28}" + "  ".join(f"{k}={v}" for k, v in figures.items()))


# ---- mkfs and mount options: swalloc, allocsize, largeio, extent hints, quotas, maxpct, rmapbt

@case
def allocsize(work: Path) -> None:
    """8 writers stream 128 MiB files at once: extents per file, default vs allocsize=64m."""
    for label, mount in (("A default", []), ("B allocsize=64m", ["allocsize=64m"])):
        with fresh(work, "alloc", [], mount) as (dev, mnt):
            random.seed(1)
            files = streams(mnt, 8, 128 * MiB)
            counts = [extents(f) for f in files]
            fd = os.open(mnt / "small", os.O_CREAT | os.O_WRONLY)
            try:  # what a small file holds while it is open (its preallocation past EOF)
                os.write(fd, b"s" * 4096)
                os.fsync(fd)
                held = os.fstat(fd).st_blocks * 512
            finally:
                os.close(fd)
            show(label, extents_per_file=f"{sum(counts) / len(counts):.1f}",
                 max=max(counts), extent_allocs=stat_line(dev, "extent_alloc")[0],
                 small_file_open_kib=held // 1024,
                 closed_kib=allocated(mnt / "small") // 1024)


def direct_streams(mnt: Path, writers: int, size: int, chunk: int) -> list[Path]:
    """`writers` files of `size` appended at once in O_DIRECT writes of `chunk`."""
    import mmap
    files = [mnt / f"direct{i}" for i in range(writers)]
    buf = mmap.mmap(-1, chunk)
    buf.write(os.urandom(chunk))

    def write(path: Path) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_DIRECT)
        try:
            for i in range(size // chunk):
                os.pwritev(fd, [buf], i * chunk)
        finally:
            os.close(fd)

    threads = [threading.Thread(target=write, args=(p,)) for p in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return files


@case
def swalloc(work: Path) -> None:
    """A 64 KiB x 4 stripe (256 KiB wide): 4 writers append 64 MiB files in 192 KiB O_DIRECT
    writes; extents, and extents starting on a stripe width."""
    for label, mount in (("A default", []), ("B swalloc", ["swalloc"])):
        with fresh(work, "swal", ["-d", "su=64k,sw=4"], mount) as (dev, mnt):
            before = stat_line(dev, "extent_alloc")[0]
            files = direct_streams(mnt, 4, 64 * MiB, 192 * 1024)
            allocs = stat_line(dev, "extent_alloc")[0] - before
            starts, total = 0, 0
            for f in files:
                for line in sh("xfs_bmap", "-v", str(f)).stdout.splitlines()[2:]:
                    cols = line.split()
                    if len(cols) >= 7 and "hole" not in line:
                        total += 1  # FLAGS 000010: begins off a stripe width (xfs_bmap(8))
                        starts += cols[-1][-2] == "0"
            show(label, extents=total, on_stripe_width=f"{starts}/{total}",
                 extent_allocs_per_mib=f"{allocs / (4 * 64):.2f}")


@case
def largeio(work: Path) -> None:
    """st_blksize a program sees: page size, or the 256 KiB stripe width with largeio."""
    for label, mount in (("A default", []), ("B largeio", ["largeio"])):
        with fresh(work, "lio", ["-d", "su=64k,sw=4"], mount) as (_, mnt):
            (mnt / "f").write_bytes(b"x")
            show(label, st_blksize=os.stat(mnt / "f").st_blksize)


def random_writes(path: Path, size: int, count: int, chunk: int = 4096) -> None:
    """`count` fsync'd `chunk` writes at random offsets of a sparse file of `size`."""
    rng = random.Random(7)
    data = os.urandom(chunk)
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        os.ftruncate(fd, size)
        for _ in range(count):
            os.pwrite(fd, data, rng.randrange(size // chunk) * chunk)
            os.fdatasync(fd)
    finally:
        os.close(fd)


def allocated(path: Path) -> int:
    """Bytes allocated to a file (st_blocks)."""
    return os.stat(path).st_blocks * 512


@case
def extent_size_hint(work: Path) -> None:
    """A sparse 1 GiB VM image filled by 2000 random fsync'd 4 KiB writes, and 500 small files
    written once: default vs a 1 MiB hint (-d extszinherit=256)."""
    for label, mkfs in (("A default", []), ("B extszinherit=256", ["-d", "extszinherit=256"])):
        with fresh(work, "esh", mkfs, []) as (dev, mnt):
            before = stat_line(dev, "extent_alloc")[0]
            random_writes(mnt / "vm.img", 1 << 30, 2000)
            allocs = stat_line(dev, "extent_alloc")[0] - before
            small = mnt / "small"
            small.mkdir()
            for i in range(500):
                (small / f"f{i}").write_bytes(b"y" * 4096)
            sh("sync")
            show(label, extent_allocs_per_1k_writes=f"{allocs * 1000 / 2000:.0f}",
                 image_allocated_mib=allocated(mnt / "vm.img") // MiB,
                 small_files_allocated_kib=sum(allocated(small / f"f{i}")
                                               for i in range(500)) // 1024)


@case
def cow_extent_size_hint(work: Path) -> None:
    """Two 16 MiB reflink clones of one file rewritten at once, in turns of fsync'd 4 KiB writes
    (two VMs' snapshots written back): default (32 blocks) vs -d cowextsize=256 (1 MiB);
    extents per clone. And 3000 random 4 KiB writes into a third clone."""
    for label, mkfs in (("A default", []), ("B cowextsize=256", ["-d", "cowextsize=256"])):
        with fresh(work, "cow", mkfs, []) as (_, mnt):
            with open(mnt / "base", "wb") as f:
                for _ in range(16):
                    f.write(os.urandom(MiB))
            clones = [mnt / f"clone{i}" for i in range(3)]
            for c in clones:
                sh("cp", "--reflink=always", str(mnt / "base"), str(c))
            hint = sh("xfs_io", "-c", "cowextsize", str(clones[0])).stdout.split()[0]
            data = os.urandom(4096)
            fds = [os.open(c, os.O_WRONLY) for c in clones[:2]]
            try:
                for block in range(16 * MiB // 4096):
                    for fd in fds:
                        os.pwrite(fd, data, block * 4096)
                        os.fdatasync(fd)
            finally:
                for fd in fds:
                    os.close(fd)
            random_writes(clones[2], 16 * MiB, 3000)
            show(label, cowextsize=hint, interleaved_extents=[extents(c) for c in clones[:2]],
                 random_extents=extents(clones[2]))


@case
def inode_space(work: Path) -> None:
    """Empty files created until ENOSPC on 512 MiB: maxpct=1 vs maxpct=2 (the cap, not the
    space, decides)."""
    for label, mkfs in (("A maxpct=1", ["-i", "maxpct=1"]), ("B maxpct=2", ["-i", "maxpct=2"])):
        with fresh(work, "ino", mkfs, [], size=512 * MiB) as (_, mnt):
            made = 0
            try:
                while True:
                    os.close(os.open(mnt / f"{made}", os.O_CREAT | os.O_WRONLY))
                    made += 1
            except OSError as err:
                free = sh("df", "-B1", "--output=avail", str(mnt)).stdout.split()[1]
                show(label, files=made, error=err.strerror, free_mib=int(free) // MiB)


@case
def rmapbt(work: Path) -> None:
    """The cost of rmapbt: df on a fresh 10 GiB filesystem, and reverse-mapping records changed
    for 2000 files of 64 KiB."""
    for label, mkfs in (("A rmapbt=0", ["-m", "rmapbt=0"]), ("B rmapbt=1", ["-m", "rmapbt=1"])):
        with fresh(work, "rmap", mkfs, [], size=10 << 30) as (dev, mnt):
            used = int(sh("df", "-B1", "--output=used", str(mnt)).stdout.split()[1])
            for i in range(2000):
                (mnt / f"f{i}").write_bytes(b"z" * 65536)
            sh("sync")
            rmap = stat_line(dev, "rmapbt")
            show(label, fresh_used_mib=used // MiB,
                 rmap_records=(rmap[2] + rmap[3]) if rmap else "n/a")


@case
def project_quota(work: Path) -> None:
    """prjquota: mounts where the kernel has quota support (CONFIG_XFS_QUOTA), with a 10 MiB
    limit on one tree that a bigger write then hits; otherwise the kernel's refusal."""
    with loop_device(work / "pq.img", 1 << 30) as dev:
        sh("mkfs.xfs", "-q", "-f", "-K", dev)
        mnt = work / "mnt-pq"
        mnt.mkdir(exist_ok=True)
        res = sh("mount", "-o", "prjquota", dev, str(mnt), check=False)
        if res.returncode:
            show("prjquota", mount="refused", why=res.stderr.strip().splitlines()[0][:80])
            return
        try:
            (mnt / "tenant").mkdir()
            sh("xfs_quota", "-x", "-c", f"project -s -p {mnt}/tenant 42", str(mnt))
            sh("xfs_quota", "-x", "-c", "limit -p bhard=10m 42", str(mnt))
            res = sh("dd", "if=/dev/zero", f"of={mnt}/tenant/big", "bs=1M", "count=20",
                     check=False)
            show("prjquota", mount="ok", dd_20mib=res.stderr.strip().splitlines()[0][:60])
        finally:
            sh("umount", str(mnt), check=False)


# ---- below the filesystem: external log, block size, DAX layout, discard on thin storage ---------

def block_stat(dev: str) -> dict[str, int]:
    """/sys/block/<dev>/stat: write IOs, write sectors, discard IOs, discard sectors, flushes."""
    fields = Path(f"/sys/block/{os.path.basename(os.path.realpath(dev))}/stat").read_text().split()
    return {"writes": int(fields[4]), "write_sectors": int(fields[6]),
            "discards": int(fields[11]), "discard_sectors": int(fields[13]),
            "flushes": int(fields[15])}


def grown(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in before}


def fsync_writes(path: Path, count: int, size: int = 4096, span: int = 0) -> None:
    """`count` writes of `size` bytes, each followed by fsync: appended, or (span > 0) at
    random block-aligned offsets of a preallocated file of `span` bytes."""
    data = os.urandom(size)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        if span:
            os.posix_fallocate(fd, 0, span)
            os.fsync(fd)
        rng = random.Random(15)
        for _ in range(count):
            if span:
                os.pwrite(fd, data, rng.randrange(span // size) * size)
            else:
                os.write(fd, data)
            os.fsync(fd)
    finally:
        os.close(fd)


@case
def external_log(work: Path) -> None:
    """1000 fsync'd 4 KiB writes, appended and overwriting a preallocated file: KiB written per
    fsync on the data device and on the log device, and cache flushes on each, log internal (A)
    or on a second loop device (B, -l logdev= and logdev=). KiB, not write IOs: the block layer
    counts empty flush requests among the writes."""
    count = 1000
    for mode in ("append", "overwrite"):
        for label in ("A internal log", "B external log"):
            with loop_device(work / "data.img", 2 << 30) as dev, \
                    loop_device(work / "log.img", 256 * MiB) as logdev:
                external = label.startswith("B")
                sh("mkfs.xfs", "-q", "-f", "-K", *(["-l", f"logdev={logdev},size=64m"]
                                                      if external else []), dev)
                mnt = work / "mnt-log"
                mnt.mkdir(exist_ok=True)
                sh("mount", *(["-o", f"logdev={logdev}"] if external else []), dev, str(mnt))
                span = 64 * MiB if mode == "overwrite" else 0
                try:
                    if span:
                        fsync_writes(mnt / "journal", 0, span=span)
                    data0, log0 = block_stat(dev), block_stat(logdev)
                    fsync_writes(mnt / "journal", count, span=span)
                    data, log = grown(data0, block_stat(dev)), grown(log0, block_stat(logdev))
                finally:
                    sh("umount", str(mnt), check=False)
            show(f"{mode}: {label}",
                 data_dev_kib=f"{data['write_sectors'] / 2 / count:.1f}",
                 data_dev_flushes=f"{data['flushes'] / count:.2f}",
                 log_dev_kib=f"{log['write_sectors'] / 2 / count:.1f}" if external else "-",
                 log_dev_flushes=f"{log['flushes'] / count:.2f}" if external else "-")


@case
def block_size(work: Path) -> None:
    """1000 fsync'd 4 KiB overwrites at random in a 64 MiB file: KiB the device writes per fsync
    and per write IO, 4 KiB blocks (A) or 16 KiB (B; mounts on Linux 6.12+ or 16 KiB pages)."""
    count = 1000
    for label, mkfs in (("A -b size=4k", []), ("B -b size=16k", ["-b", "size=16k"])):
        try:
            ctx = fresh(work, "bs", mkfs, [], size=1 << 30)
            dev, mnt = ctx.__enter__()
        except subprocess.CalledProcessError as err:
            show(label, mount="refused: " + (err.stderr or "").strip()[:60])
            continue
        try:
            fsync_writes(mnt / "db", 0, span=64 * MiB)
            before = block_stat(dev)
            fsync_writes(mnt / "db", count, span=64 * MiB)
            got = grown(before, block_stat(dev))
        finally:
            ctx.__exit__(None, None, None)
        kib = got["write_sectors"] / 2
        show(label, device_kib_per_fsync=f"{kib / count:.1f}",
             kib_per_write_io=f"{kib / max(got['writes'], 1):.1f}")


def extent_starts(path: Path) -> list[int]:
    """Device byte offsets where a file's data extents start (xfs_bmap -v BLOCK-RANGE)."""
    lines = sh("xfs_bmap", "-v", str(path)).stdout.splitlines()[2:]
    starts = []
    for line in lines:
        parts = line.split()
        if len(parts) >= 3 and parts[2] != "hole":
            starts.append(int(parts[2].split("..")[0]) * 512)
    return starts


@case
def dax(work: Path) -> None:
    """DAX layout: 16 files of 6 MiB written in turns, 1 MiB at a time, and 16 fallocated ones of
    6 MiB: extents starting on 2 MiB (a huge page), default (A) or -d su=2m,sw=1 -m reflink=0
    (B). A loop device is not DAX, so only the layout shows, not the page faults it saves."""
    for label, mkfs in (("A default", []), ("B su=2m,sw=1", ["-d", "su=2m,sw=1", "-m",
                                                             "reflink=0"])):
        with fresh(work, "dax", mkfs, []) as (_, mnt):
            files = [open(mnt / f"f{i}", "wb") for i in range(16)]  # noqa: SIM115
            chunk = os.urandom(MiB)
            for _ in range(6):
                for f in files:
                    f.write(chunk)
                    f.flush()
                    os.fsync(f.fileno())
            for f in files:
                f.close()
            for i in range(16):
                fd = os.open(mnt / f"g{i}", os.O_WRONLY | os.O_CREAT, 0o644)
                os.posix_fallocate(fd, 0, 6 * MiB)
                os.close(fd)
            figures = {}
            for kind in ("f", "g"):
                starts = [extent_starts(mnt / f"{kind}{i}") for i in range(16)]
                on = sum(1 for s in starts for x in s if x % (2 * MiB) == 0)
                first = sum(1 for s in starts if s and s[0] % (2 * MiB) == 0)
                name = "written" if kind == "f" else "fallocated"
                figures[f"{name}_extents_on_2m"] = f"{on}/{sum(len(s) for s in starts)}"
                figures[f"{name}_files_starting_on_2m"] = f"{first}/16"
            show(label, **figures)


@case
def discard(work: Path) -> None:
    """Thin storage: 2000 files of 64 KiB made, synced and deleted: discard IOs during the
    deletes and the space the backing file (standing in for a thin pool) got back, nodiscard (A,
    before a weekly fstrim) or discard (B)."""
    for label, mount in (("A nodiscard", []), ("B discard", ["discard"])):
        with fresh(work, "thin", [], mount) as (dev, mnt):
            data = os.urandom(64 << 10)
            for i in range(2000):
                (mnt / f"f{i}").write_bytes(data)
            sh("sync")
            image = work / "thin.img"
            used = image.stat().st_blocks * 512
            before = block_stat(dev)
            for i in range(2000):
                (mnt / f"f{i}").unlink()
            sh("sync")
            sh("xfs_io", "-c", "fsync", str(mnt))
            freed = used - image.stat().st_blocks * 512
            got = grown(before, block_stat(dev))
            show(label, discard_ios=got["discards"],
                 pool_space_back_mib=f"{freed / MiB:.0f}")



def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cases", nargs="*", help="cases to run (default: all)")
    p.add_argument("--list", action="store_true", help="list the cases")
    args = p.parse_args()
    if args.list:
        for name, fn in CASES.items():
            print(f"{name}: {(fn.__doc__ or '').splitlines()[0]}")
        return 0
    unknown = [c for c in args.cases if c not in CASES]
    if unknown:
        print(f"unknown case(s): {', '.join(unknown)} (--list)", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print("needs root (loop devices, mkfs.xfs, mount)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-beyond-") as tmp:
        for name in args.cases or list(CASES):
            print(f"{name}: {(CASES[name].__doc__ or '').split(chr(10))[0]}")
            CASES[name](Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
