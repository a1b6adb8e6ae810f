"""Every user of a device, found before the guard calls it free, on real loop devices: loop devices
bound over it at any offset (and what is built on those), processes holding it or its backing file
open, data libblkid cannot name. Each victim is a loop device over a file whose checksum must not
change."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.bench import guard
from advisor.bench.plan import MIN_DEVICE_BYTES
from advisor.inspect.devices import find_device, inspect_devices
from advisor.system.loopdev import dev_name
from advisor.system.sysroot import SysRoot
from tests.bench.test_guard import GIB, attached, checksum, refused, validate
from tests.conftest import REPO, mounted, require_root_tools, sh

MIB = 1 << 20


@pytest.fixture
def root_tools() -> None:
    require_root_tools("losetup", "mkfs.xfs", "fio", "xfs_freeze")


@contextlib.contextmanager
def frozen(mnt: Path) -> Iterator[None]:
    """XFS frozen writes nothing, so any change to its backing file is the guard's fault."""
    sh("xfs_freeze", "-f", str(mnt))
    try:
        yield
    finally:
        sh("xfs_freeze", "-u", str(mnt), check=False)


def devices_line(dev: str) -> str:
    """The `devices` tree's line for `dev`."""
    proc = subprocess.run([sys.executable, "-m", "advisor", "devices"], capture_output=True,
                          text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    name = os.path.basename(dev)
    lines = [ln for ln in proc.stdout.splitlines() if ln.split() and
             ln.split()[0].lstrip("├└─│ ") == name]
    assert lines, proc.stdout
    return lines[0]


def test_a_loop_at_an_offset_over_the_device_is_found(tmp_path: Path, root_tools: None) -> None:
    """V is the backing of W (a loop device at offset 1 MiB), W of X; X holds a mounted XFS. The
    kernel shows no holder for either: only the loop status says W and X write to V."""
    backing = tmp_path / "r1.img"
    with attached(backing, GIB) as v, \
            attached(Path(v), 0, "-o", str(MIB)) as w, \
            attached(Path(w), 0) as x:
        sh("mkfs.xfs", "-q", x)
        with mounted(x, tmp_path / "m") as mnt:
            (mnt / "payroll.txt").write_text("precious\n")
            sh("sync")
            with frozen(mnt):
                inv = inspect_devices(SysRoot(), probe=True)
                reasons = guard.refusals(inv, find_device(inv, v), MIN_DEVICE_BYTES)
                wn, xn = os.path.basename(w), os.path.basename(x)
                assert f"it is the backing of loop device {wn}" in reasons, reasons
                assert f"{xn} is a loop device over {wn}, which is built on it" in reasons
                assert f"{xn} on it is mounted on {mnt}" in reasons, reasons
                assert f"backs {wn}" in devices_line(v)
                refused(backing, v, f"it is the backing of loop device {wn}")


@contextlib.contextmanager
def holding_open(path: Path | str, tmp_path: Path, name: str = "sleep") -> Iterator[int]:
    """A process (named `name`: its comm) that holds `path` open read-write, as a VM or a
    database holds a raw disk: no O_EXCL, so nothing in the kernel refuses a second opener."""
    program = tmp_path / name
    program.symlink_to("/bin/sleep")
    with open(path, "r+b") as f:
        proc = subprocess.Popen([str(program), "600"], stdin=f)
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_a_process_holding_the_device_open_is_found(tmp_path: Path, root_tools: None) -> None:
    """Its command name is the process's own choice: shown escaped, never raw."""
    backing = tmp_path / "raw.img"
    with attached(backing, GIB) as dev, \
            holding_open(dev, tmp_path, "vm\x1b[2J\x07") as pid:
        proc = validate(dev, "--yes")
        assert proc.returncode == 3, proc.stderr
        assert f"pid {pid} (vm\\x1b[2J\\x07) holds it open" in proc.stderr, proc.stderr
        assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr
        refused(backing, dev, f"pid {pid}")


def test_a_process_holding_the_backing_file_open_is_found(tmp_path: Path,
                                                          root_tools: None) -> None:
    backing = tmp_path / "db.img"
    with attached(backing, GIB) as dev, holding_open(backing, tmp_path) as pid:
        refused(backing, dev, f"pid {pid} (sleep) holds its backing file")


def test_a_process_holding_a_loop_over_the_device_open_is_found(tmp_path: Path,
                                                                root_tools: None) -> None:
    backing = tmp_path / "under.img"
    with attached(backing, GIB) as v, attached(Path(v), 0, "-o", str(MIB)) as w, \
            holding_open(w, tmp_path) as pid:
        refused(backing, v, f"pid {pid} (sleep) holds {os.path.basename(w)} open, which is "
                "built on it")


#: A process that maps a device (or file) and closes its descriptor: only /proc/PID/maps shows
#: it still holds it. Its comm is `mapper`.
_MAPPER = """
import ctypes, os, sys, time
with open("/proc/self/comm", "w") as f:
    f.write("mapper")
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
fd = os.open(sys.argv[1], os.O_RDWR)
if libc.mmap(None, 4096, 3, 1, fd, 0) in (None, ctypes.c_void_p(-1).value):
    sys.exit("mmap failed")
os.close(fd)
print("ready", flush=True)
time.sleep(600)
"""


@contextlib.contextmanager
def mapping(path: Path | str) -> Iterator[int]:
    proc = subprocess.Popen([sys.executable, "-c", _MAPPER, str(path)], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        assert not any(os.path.realpath(f"/proc/{proc.pid}/fd/{fd}") == os.path.realpath(path)
                       for fd in os.listdir(f"/proc/{proc.pid}/fd"))
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_a_process_that_only_maps_the_device_is_found(tmp_path: Path, root_tools: None) -> None:
    """mmap, then close: no descriptor is left, the mapping still reads and writes the device."""
    backing = tmp_path / "mapped.img"
    with attached(backing, GIB) as dev, mapping(dev) as pid:
        refused(backing, dev, f"pid {pid} (mapper, mapped) holds it open")
        assert f"held open by pid {pid} (mapper, mapped)" in devices_line(dev)
    with attached(backing, GIB) as dev, mapping(backing) as pid:
        refused(backing, dev, f"pid {pid} (mapper, mapped) holds its backing file")
        assert f"held open by pid {pid} (mapper, mapped, its backing file)" in devices_line(dev)


def test_devices_names_who_holds_a_device_open(tmp_path: Path, root_tools: None) -> None:
    """`devices` said `free` for a device a VM or a `dd` held open: it looks at every process
    once per run and names them (the command escaped), in the tree, DEVICE's details and the
    JSON."""
    backing = tmp_path / "raw.img"
    with attached(backing, GIB) as dev, \
            holding_open(dev, tmp_path, "vm\x1b[2J\x07") as pid, \
            holding_open(backing, tmp_path, "db") as db:
        line = devices_line(dev)
        assert f"held open by pid {pid} (vm\\x1b[2J\\x07) +1" in line or \
            f"held open by pid {db} (db, its backing file) +1" in line, line
        proc = subprocess.run([sys.executable, "-m", "advisor", "devices", dev],
                              capture_output=True, text=True, cwd=REPO, timeout=120)
        assert proc.returncode == 0, proc.stderr
        name = os.path.basename(dev)
        assert f"{name} is held open by pid {pid} (vm\\x1b[2J\\x07)" in proc.stdout
        assert f"{name} is held open by pid {db} (db, its backing file)" in proc.stdout
        assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
        proc = subprocess.run([sys.executable, "-m", "advisor", "devices", "--json"],
                              capture_output=True, text=True, cwd=REPO, timeout=120)
        assert proc.returncode == 0, proc.stderr
        found = next(d for d in json.loads(proc.stdout)["devices"] if d["name"] == name)
        assert found["usage"]["held_open"] == [
            {"pid": p, "command": c, "mapped": False, "backing_file": b}
            for p, c, b in sorted([(pid, "vm\\x1b[2J\\x07", False), (db, "db", True)])]


def test_the_default_loop_device_is_used_only_when_bound_to_its_file(tmp_path: Path,
                                                                    root_tools: None) -> None:
    """losetup attaches the run's scratch.img but prints another loop device's name (what a
    re-bind between its attach and its answer looks like): the run must notice before writing,
    leave that device alone, and still detach its own loop device, found by its file."""
    real = shutil.which("losetup") or "/usr/sbin/losetup"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    liar = bin_dir / "losetup"
    liar.write_text("#!/bin/sh\n"
                    'case " $* " in *" --show "*)\n'
                    f'  {real} "$@" >/dev/null || exit $?\n'
                    '  echo "$VICTIM"; exit 0;;\n'
                    "esac\n"
                    f'exec {real} "$@"\n')
    liar.chmod(0o755)
    victim_file = tmp_path / "victim.img"
    loops = tmp_path / "loops"
    loops.mkdir()
    with attached(victim_file, GIB) as victim:
        before = checksum(victim_file)
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "VICTIM": victim,
               "XFS_ADVISOR_STATE_DIR": str(tmp_path / "state")}
        env.pop("XFS_ADVISOR_DEBUG", None)
        proc = subprocess.run([sys.executable, "-m", "advisor", "validate", "--loop-size",
                               "1GiB", "--loop-dir", str(loops), "--mkfs-options", "-n size=8k"],
                              capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
        assert proc.returncode == 3, proc.stderr
        assert f"refusing to use {victim}" in proc.stderr and "bound to" in proc.stderr
        assert "Traceback" not in proc.stderr
        assert checksum(victim_file) == before
        listed = sh(real, "--list", "--noheadings", "--output", "BACK-FILE").stdout
        assert str(loops) not in listed, listed
        assert list(loops.iterdir()) == []


def _zero(dev: str, offset: int, length: int) -> None:
    with open(dev, "r+b") as f:
        f.seek(offset)
        f.write(b"\0" * length)
        f.flush()
        os.fsync(f.fileno())


def _write(dev: str, offset: int, data: bytes) -> None:
    with open(dev, "r+b") as f:
        f.seek(offset)
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _filesystem_with_a_file(dev: str, tmp_path: Path, *mkfs: str) -> None:
    sh(*mkfs, dev)
    with mounted(dev, tmp_path / "m") as mnt:
        (mnt / "payroll.txt").write_text("precious\n" * 1000)


#: A GPT header as it starts (signature, revision 1.0, header size 92), the rest made up.
GPT_HEADER = b"EFI PART\x00\x00\x01\x00\x5c\x00\x00\x00" + bytes(range(1, 77))


def _ext4_primary_zeroed(dev: str, tmp_path: Path) -> None:
    _filesystem_with_a_file(dev, tmp_path, "mkfs.ext4", "-q", "-F")
    _zero(dev, 1024, 1024)


def _ext4_first_mib_zeroed(dev: str, tmp_path: Path) -> None:
    _filesystem_with_a_file(dev, tmp_path, "mkfs.ext4", "-q", "-F", "-b", "4096")
    _zero(dev, 0, MIB)


def _xfs_sector0_zeroed(dev: str, tmp_path: Path) -> None:
    _filesystem_with_a_file(dev, tmp_path, "mkfs.xfs", "-q", "-f")
    _zero(dev, 0, 512)


def _xfs_first_mib_zeroed(dev: str, tmp_path: Path) -> None:
    _filesystem_with_a_file(dev, tmp_path, "mkfs.xfs", "-q", "-f")
    _zero(dev, 0, MIB)


def _gpt_without_protective_mbr(dev: str, tmp_path: Path) -> None:
    _write(dev, 512, GPT_HEADER)


def _gpt_backup_header_only(dev: str, tmp_path: Path) -> None:
    _write(dev, GIB - 512, GPT_HEADER)


@pytest.mark.parametrize(("damage", "found"), [
    (_ext4_primary_zeroed, "its first MiB is not empty"),
    (_ext4_first_mib_zeroed, "an ext2/3/4 backup superblock at byte 134217728"),
    (_xfs_sector0_zeroed, "its first MiB is not empty"),
    (_xfs_first_mib_zeroed, f"an XFS secondary superblock at byte {GIB // 4}"),
    (_gpt_without_protective_mbr, "its first MiB is not empty (non-zero bytes from byte 512)"),
    (_gpt_backup_header_only, f"its last MiB is not empty (non-zero bytes at byte {GIB - 512}"),
], ids=lambda v: v.__name__.strip("_") if callable(v) else "")
def test_data_no_signature_names_is_refused(tmp_path: Path, root_tools: None,
                                            damage: object, found: str) -> None:
    """libblkid (and mkfs.xfs) see nothing on these; the bytes are there all the same."""
    require_root_tools("mkfs.ext4", "wipefs")
    backing = tmp_path / "damaged.img"
    with attached(backing, GIB) as dev:
        assert callable(damage)
        damage(dev, tmp_path)
        assert sh("wipefs", "--no-act", dev).stdout.strip() == ""  # nothing libblkid names
        refused(backing, dev, found)


def test_unrecognized_data_may_be_destroyed_when_the_user_says_so(tmp_path: Path,
                                                                 root_tools: None) -> None:
    """--destroy-unrecognized-data passes that one check (the run then asks for the device's
    name, as for any device: answered wrong here, so nothing is written)."""
    backing = tmp_path / "damaged.img"
    with attached(backing, GIB) as dev:
        _xfs_sector0_zeroed(dev, tmp_path)
        before = checksum(backing)
        proc = validate(dev, "--destroy-unrecognized-data", stdin="not-the-name\n")
        assert proc.returncode == 2, proc.stderr
        assert "not confirmed" in proc.stderr and "refusing" not in proc.stderr
        assert checksum(backing) == before


def test_a_partition_of_a_loop_over_the_device_is_found(tmp_path: Path,
                                                        root_tools: None) -> None:
    """W (with partition scanning) is bound over V at offset 1 MiB and holds a partition table;
    W's first partition holds a mounted XFS."""
    from tests.bench.test_guard import _write_mbr

    backing = tmp_path / "v.img"
    with attached(backing, GIB) as v, attached(Path(v), 0, "-P", "-o", str(MIB)) as w:
        _write_mbr(w, (GIB - MIB) // 512)
        sh("blockdev", "--flushbufs", w)
        sh("partx", "-a", w, check=False)  # the kernel does not always rescan on its own
        part = f"{w}p1"
        assert Path(part).exists()
        sh("mkfs.xfs", "-q", part)
        with mounted(part, tmp_path / "m") as mnt:
            sh("sync")
            with frozen(mnt):
                refused(backing, v, f"{os.path.basename(part)} on it is mounted on {mnt}")


def test_a_mount_point_with_line_breaks_python_knows_is_still_a_mount(tmp_path: Path,
                                                                    root_tools: None) -> None:
    """The kernel escapes only space, tab, newline and backslash in mountinfo: a mount point
    holding a carriage return, NEL or U+2028 is written raw, and reading the table by Python's
    idea of a line (or of whitespace) lost the mount: `devices` called the device `holds xfs`."""
    backing = tmp_path / "odd.img"
    with attached(backing, GIB) as dev:
        sh("mkfs.xfs", "-q", dev)
        with mounted(dev, tmp_path / "m\r\x85\u2028\u3000x") as mnt:
            assert "mounted " in devices_line(dev), devices_line(dev)
            inv = inspect_devices(SysRoot(), probe=True)
            reasons = guard.refusals(inv, find_device(inv, dev), MIN_DEVICE_BYTES)
            assert f"it is mounted on {mnt}" in reasons, reasons


@contextlib.contextmanager
def partitioned(backing: Path) -> Iterator[tuple[str, str]]:
    """A loop device over a new 2 GiB file holding one partition from 1 MiB to the end (big
    enough to be a scratch device itself): (the disk, its partition)."""
    from tests.bench.test_guard import _write_mbr

    with attached(backing, 2 * GIB, "-P") as disk:
        _write_mbr(disk, 2 * GIB // 512)
        sh("blockdev", "--flushbufs", disk)
        sh("partx", "-a", disk, check=False)  # the kernel does not always rescan on its own
        part = f"{disk}p1"
        assert Path(part).exists()
        yield disk, part


def test_a_partition_whose_disk_is_held_open_is_refused(tmp_path: Path,
                                                        root_tools: None) -> None:
    """Whoever holds the whole disk open (a VM on the raw disk) writes the partition's blocks
    too: the kernel refuses only exclusive openers, so only the processes' file tables tell."""
    backing = tmp_path / "disk.img"
    with partitioned(backing) as (disk, part), holding_open(disk, tmp_path, "vm") as pid:
        refused(backing, part,
                f"pid {pid} (vm) holds {os.path.basename(disk)} open, which it is part of")


def test_a_partition_whose_disk_a_loop_device_is_bound_over_is_refused(tmp_path: Path,
                                                                       root_tools: None) -> None:
    """A loop device over the whole disk shows the partition's blocks through another node."""
    backing = tmp_path / "disk.img"
    with partitioned(backing) as (disk, part), attached(Path(disk), 0) as w:
        refused(backing, part, f"{os.path.basename(w)} is a loop device over "
                f"{os.path.basename(disk)}, which it is part of")


def test_a_device_node_naming_another_device_is_refused(tmp_path: Path,
                                                        root_tools: None) -> None:
    """A stale or hand-made node: /dev/NAME opens another device than the NAME sysfs describes,
    so the checks and the writes would be of different devices. Built in a mount namespace of
    its own (V's node bound over partition P's), so this host's /dev is not touched. (A
    partition: a loop device's node is also asked for its binding, which would differ.)"""
    require_root_tools("unshare")
    victim = tmp_path / "victim.img"
    with partitioned(tmp_path / "disk.img") as (_disk, part), attached(victim, GIB) as v:
        before = checksum(victim)
        script = 'mount --bind "$1" "$2" && shift 2 && exec "$@"'
        proc = subprocess.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", v, part,
             sys.executable, "-m", "advisor", "validate", "--device", part, "--yes",
             "--mkfs-options", "-n size=8k"],
            capture_output=True, text=True, cwd=REPO, timeout=120,
            env={**os.environ, "XFS_ADVISOR_STATE_DIR": str(tmp_path / "state")})
        assert proc.returncode == 3, proc.stderr
        want = f"{part} is device {dev_name(os.stat(v).st_rdev)}, not {os.path.basename(part)}"
        assert want in proc.stderr and "a stale device node" in proc.stderr, proc.stderr
        assert checksum(victim) == before


@pytest.mark.slow
def test_a_free_partition_is_validated(tmp_path: Path, root_tools: None) -> None:
    """A partition passes the guard and the run reads its counters where the kernel keeps a
    partition's (/sys/class/block/NAME/stat: /sys/block holds whole disks only)."""
    with partitioned(tmp_path / "disk.img") as (_disk, part):
        proc = validate(part, "--yes", "--budget", "30", "--report", str(tmp_path / "r.json"))
        assert proc.returncode in (0, 5), proc.stderr
        assert "Verdict:" in proc.stdout, proc.stdout


def test_a_partition_of_a_loop_device_whose_file_is_in_use_is_refused(tmp_path: Path,
                                                                     root_tools: None) -> None:
    """A partition of a loop device writes into the loop device's backing file: a process
    holding that file open (a VM whose disk image it is) or another loop device bound to it
    uses the partition's blocks too."""
    backing = tmp_path / "vm-disk.img"
    with partitioned(backing) as (disk, part):
        name = os.path.basename(disk)
        with holding_open(backing, tmp_path, "qemu") as pid:
            refused(backing, part, f"it is part of {name}: pid {pid} (qemu) holds its backing "
                    f"file ({backing}) open")
        with attached(backing, 0) as other:
            refused(backing, part, f"it is part of {name}: {os.path.basename(other)} is bound "
                    f"to the same backing file")
