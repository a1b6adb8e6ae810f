#!/usr/bin/env python3
"""Benchmark the guard's whole-host scan for processes holding a device open or mapped
(advisor.system.openers.scan, the guard's full live look: every loop device's binding plus that
scan, and `devices`' inventory with usage.held_open) against fuser and lsof asked about the same
device, in one run, on a host made busy for it.

The busy host: LOOPS loop devices over sparse files, and PROCS processes holding FDS file
descriptors each (regular files, pipes, sockets, /dev/null, and a few of the loop devices); one
of them holds the target device open read-write. Each tool must find that process (checked every
run), then all are timed interleaved, RUNS times. Needs root (losetup). Not a test: figures
to read; everything made is removed at the end, whatever happens.

    .venv/bin/python scripts/bench_user_scan.py [--procs 200] [--fds 500] [--loops 16] [--runs 5]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.bench.guard import live_links
from advisor.inspect.devices import inspect_devices
from advisor.system.openers import scan
from advisor.system.sysroot import SysRoot


def _holder(paths: list[str], fds: int, ready: int) -> None:
    """A child: hold `fds` descriptors (the paths in turn, plus pipes and sockets), say so on
    `ready`, then wait to be killed."""
    kept: list[object] = [os.open(paths[0], os.O_RDWR)]
    for i in range(1, fds):
        kind = i % 4
        if kind == 0:
            kept.extend(os.pipe())
        elif kind == 1:
            kept.append(socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM))
        else:
            kept.append(os.open(paths[i % len(paths)], os.O_RDWR))
    os.write(ready, b"x")
    signal.pause()


@contextlib.contextmanager
def busy_host(work: Path, procs: int, fds: int, loops: int) -> Iterator[tuple[str, int]]:
    """The loop devices and the processes; yields (target device, pid holding it)."""
    devices: list[str] = []
    children: list[int] = []
    before = set(os.listdir("/sys/block"))
    try:
        for i in range(loops):
            image = work / f"l{i}.img"
            with open(image, "wb") as f:
                f.truncate(64 << 20)
            devices.append(subprocess.run(["losetup", "--find", "--show", str(image)],
                                          check=True, capture_output=True,
                                          text=True).stdout.strip())
        plain = work / "data.bin"
        plain.write_bytes(b"0" * 4096)
        others = [str(plain), "/dev/null", *devices[1:]]
        target = devices[0]
        for n in range(procs):
            paths = [target] if n == procs // 2 else others
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                try:
                    _holder(paths, fds if n != procs // 2 else 1, w)
                finally:
                    os._exit(0)
            os.close(w)
            os.read(r, 1)
            os.close(r)
            children.append(pid)
        yield target, children[procs // 2]
    finally:
        for pid in children:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
        for dev in devices:
            subprocess.run(["losetup", "-d", dev], check=False)
        _remove_new_loop_nodes(devices, before)


#: ioctl on /dev/loop-control that removes an unbound loop device (linux/loop.h).
LOOP_CTL_REMOVE = 0x4C81


def _remove_new_loop_nodes(devices: list[str], before: set[str]) -> None:
    """Loop devices losetup had to create stay in /sys/block after their detach: remove those
    this run created (each only while nothing has bound it again), so that a 200-loop run
    leaves the host's device list as it found it."""
    import fcntl

    made = [d for d in devices if os.path.basename(d) not in before]
    if not made:
        return
    fd = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
    try:
        for dev in made:
            with contextlib.suppress(OSError, ValueError):  # bound again meanwhile: kept
                fcntl.ioctl(fd, LOOP_CTL_REMOVE, int(os.path.basename(dev).removeprefix("loop")))
    finally:
        os.close(fd)


def _timed(action: Callable[[], set[int]]) -> tuple[float, set[int]]:
    start = time.perf_counter()
    found = action()
    return time.perf_counter() - start, found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procs", type=int, default=200)
    parser.add_argument("--fds", type=int, default=500)
    parser.add_argument("--loops", type=int, default=16)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("needs root (loop devices)", file=sys.stderr)
        return 2
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if args.fds + 16 > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, args.fds + 64), hard))
    me = frozenset({os.getpid()})
    with tempfile.TemporaryDirectory(prefix="bench-user-scan-") as tmp, \
            busy_host(Path(tmp), args.procs, args.fds, args.loops) as (target, holder):
        rdev = os.stat(target).st_rdev
        host_procs = sum(1 for p in os.listdir("/proc") if p.isdigit())
        host_fds = sum(len(os.listdir(f"/proc/{p}/fd")) for p in os.listdir("/proc")
                       if p.isdigit() and os.path.isdir(f"/proc/{p}/fd"))

        def ours() -> set[int]:
            return {o.pid for o in scan(skip=me).devices.get(rdev, [])}

        def guard_look() -> set[int]:
            links = live_links(inspect_devices(SysRoot(), probe=False))
            assert links.openers is not None
            return {o.pid for o in links.openers.devices.get(rdev, [])}

        def devices_users() -> set[int]:
            # What `devices` adds as root: the loop bindings and one scan, as usage.held_open.
            inv = inspect_devices(SysRoot(), probe=False, users=True)
            found = next(d for d in inv.devices if d.path == target)
            return {o.pid for o in found.usage.held_open or []}

        def fuser() -> set[int]:
            out = subprocess.run(["fuser", target], capture_output=True, text=True).stdout
            return {int(p) for p in out.split() if p.isdigit()}

        def lsof() -> set[int]:
            out = subprocess.run(["lsof", "-t", target], capture_output=True, text=True).stdout
            return {int(p) for p in out.split() if p.isdigit()}

        tools = {"openers.scan": ours, "guard live_links": guard_look,
                 "devices held_open": devices_users, "fuser DEV": fuser, "lsof -t DEV": lsof}
        times: dict[str, list[float]] = {name: [] for name in tools}
        for _ in range(args.runs):
            for name, action in tools.items():
                seconds, found = _timed(action)
                if holder not in found:
                    print(f"{name} missed pid {holder}: found {sorted(found)}", file=sys.stderr)
                    return 1
                times[name].append(seconds)
        print(f"host: {host_procs} processes, {host_fds} open fds, {args.loops} loop devices "
              f"made here; target {target} held by pid {holder}; {args.runs} interleaved runs; "
              f"load average {os.getloadavg()[0]:.1f}")
        for name, values in times.items():
            print(f"{name:<18} median {statistics.median(values) * 1000:8.1f} ms  "
                  f"min {min(values) * 1000:8.1f} ms  max {max(values) * 1000:8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
