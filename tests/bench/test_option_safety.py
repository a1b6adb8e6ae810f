"""Options that name another device, on real loop devices: a victim carrying ext4 with a file, and
a blank scratch device. Every option that would make mkfs.xfs or mount touch the victim (or a
file) is refused with exit 2 before anything is made, and the checksum of every backing file
proves that not one byte changed; nothing of ours stays attached or mounted. The run itself
(advisor.bench.run.execute) refuses such sides too, whoever built the plan."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.bench.options import parse_mkfs, parse_mount
from advisor.bench.plan import Plan
from advisor.bench.run import execute
from advisor.cli import main
from advisor.errors import BadInput
from advisor.models.bench import SideConfig
from advisor.models.workload import Workload
from tests.bench.test_guard import attached, checksum
from tests.conftest import REPO, mounted, require_root_tools, sh

GIB = 1 << 30
#: A refusal happens before the guard, the loop device and mkfs: a few seconds at most.
FAST = 30.0


@dataclass
class Devices:
    victim: str
    """A loop device with ext4 and a file on it: nothing may write to it."""
    scratch: str
    """A blank loop device: the one --device names."""
    precious: Path
    """A regular file an option could name (-d file,name=, -p)."""
    folder: Path
    """Where the backing files are: our loop devices are the ones backed by files here."""

    def backing_files(self) -> list[Path]:
        return [*sorted(self.folder.glob("*.img")), self.precious]

    def checksums(self) -> dict[Path, str]:
        sh("blockdev", "--flushbufs", self.victim, check=False)
        sh("blockdev", "--flushbufs", self.scratch, check=False)
        sh("sync")
        return {p: checksum(p) for p in self.backing_files()}


def ours_attached(folder: Path) -> list[str]:
    """Loop devices backed by a file under `folder` (`losetup -a`)."""
    listing = sh("losetup", "-a").stdout
    return [line for line in listing.splitlines() if str(folder) in line]


def ours_mounted(folder: Path) -> list[str]:
    text = Path("/proc/self/mountinfo").read_text()
    return [line for line in text.splitlines() if str(folder) in line]


@contextlib.contextmanager
def victim_and_scratch(folder: Path) -> Iterator[Devices]:
    require_root_tools("losetup", "mkfs.xfs", "mkfs.ext4", "fio", "blockdev")
    folder.mkdir(exist_ok=True)
    precious = folder / "precious.file"
    precious.write_bytes(b"do not lose me\n" * 4096)
    with attached(folder / "victim.img", GIB) as victim, \
            attached(folder / "scratch.img", GIB) as scratch:
        sh("mkfs.ext4", "-q", victim)
        with mounted(victim, folder / "m") as mnt:
            (mnt / "precious.txt").write_text("do not lose me\n")
        yield Devices(victim, scratch, precious, folder)
    assert ours_attached(folder) == [] and ours_mounted(folder) == []


@pytest.fixture
def devices(tmp_path: Path) -> Iterator[Devices]:
    with victim_and_scratch(tmp_path / "devs") as found:
        yield found


def validate(state: Path, *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "XFS_ADVISOR_STATE_DIR": str(state)}
    env.pop("XFS_ADVISOR_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "advisor", "validate", *args],
                          capture_output=True, cwd=REPO, env=env, timeout=120)


def _cases(d: Devices) -> list[tuple[list[str], str]]:
    proto = d.folder / "proto"
    proto.write_text(f"x\n0 0\nd--755 0 0\nprecious ---644 0 0 {d.precious}\n$\n")
    v = d.victim
    return [
        (["--mkfs-options", f"-l logdev={v},size=64m"], f"-l logdev={v},size=64m names another"),
        (["--mount-options", f"logdev={v}"], f"logdev={v} names another device"),
        (["--mount-options", f"rtdev={v}"], f"rtdev={v} names another device"),
        (["--mkfs-options", f"-r rtdev={v}"], f"-r rtdev={v} makes a realtime section"),
        (["--mkfs-options", f"-d name={v}"], f"-d name={v} names the file or device"),
        (["--mkfs-options", f"-d file,name={d.precious},size=1g"], "-d file,name="),
        (["--mkfs-options", f"-p {proto}"], f"-p {proto} names a protofile"),
        (["--mkfs-options", f"-n size=64k {v}"], f"{v} is not an option"),
        (["--mkfs-options=-N"], "-N is a dry run"),
        (["--mount-options", "ro"], "ro mounts read-only"),
    ]


def test_options_naming_another_device_are_refused(devices: Devices, tmp_path: Path) -> None:
    before = devices.checksums()
    for args, named in _cases(devices):
        started = time.monotonic()
        proc = validate(tmp_path / "state", "--device", devices.scratch, "--yes", *args)
        elapsed = time.monotonic() - started
        err = proc.stderr.decode()
        assert proc.returncode == 2, (args, err)
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert named in err, (named, err)
        assert elapsed < FAST, (args, elapsed)
        assert devices.checksums() == before, args
        assert ours_mounted(tmp_path) == []
        assert len(ours_attached(tmp_path)) == 2  # the victim and the scratch device only


def test_the_loop_default_refuses_an_external_log_before_making_anything(
        devices: Devices, tmp_path: Path) -> None:
    before = devices.checksums()
    work = tmp_path / "work"
    proc = validate(tmp_path / "state", "--loop-dir", str(work), "--loop-size", "1GiB",
                    "--mkfs-options", f"-l logdev={devices.victim},size=64m")
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert f"-l logdev={devices.victim},size=64m names another device" in err
    assert not work.exists()  # no folder, no backing file, no loop device
    assert devices.checksums() == before
    assert len(ours_attached(tmp_path)) == 2 and ours_mounted(tmp_path) == []


def test_execute_checks_both_sides_before_making_anything(
        devices: Devices, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Defense in depth: a plan built without the CLI (the TUI builds its own) is checked by the
    run itself, for either side, and again for side B once the loop default resolves it."""
    monkeypatch.setenv("XFS_ADVISOR_STATE_DIR", str(tmp_path / "state"))
    before = devices.checksums()
    work = tmp_path / "work"
    logdev = ["-l", f"logdev={devices.victim}"]
    for a, b in ((SideConfig(label="A", mkfs_options=logdev), SideConfig(label="B")),
                 (SideConfig(label="A"), SideConfig(label="B", mkfs_options=logdev))):
        plan = Plan(a=a, b=b, workload=Workload(), device=devices.scratch, loop_dir=str(work))
        with pytest.raises(BadInput, match=r"side [AB] mkfs\.xfs options: -l logdev="):
            execute(plan)
        assert not work.exists()

    def resolve(device: str) -> SideConfig:
        return SideConfig(label="B", mount_options=[f"logdev={devices.victim}"])

    plan = Plan(a=SideConfig(label="A"), b=SideConfig(label="B", source="proposal"),
                workload=Workload(), device_bytes=GIB, loop_dir=str(work))
    with pytest.raises(BadInput, match="side B mount options: logdev="):
        execute(plan, resolve_b=resolve)
    # The loop folder was made for the run: it is gone with its backing file and loop device.
    assert not work.exists()
    assert devices.checksums() == before
    assert len(ours_attached(tmp_path)) == 2 and ours_mounted(tmp_path) == []


def test_a_nul_byte_is_bad_input_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    # argv cannot carry a NUL, but a caller of main() can.
    assert main(["validate", "--mkfs-options", "-n size=64k\x00-N"]) == 2
    assert main(["validate", "--mount-options", "noatime\x00,ro"]) == 2
    err = capsys.readouterr().err
    assert err.count("control character") == 2, err


# ---- fuzz through the command line ------------------------------------------------------------

def _mkfs_words(d: Devices) -> st.SearchStrategy[str]:
    v, f = d.victim, d.precious
    return st.sampled_from([
        "-n size=64k", "-d su=64k,sw=4", "-l size=64m", "-l internal", "-i size=512", "-m crc=1",
        "-L lbl", "-f", "-K", "-q", "-N", "-V", "-p", "-r", "-d", "--", "-fK",
        f"-l logdev={v}", f"-l logdev={v},size=64m", f"-r rtdev={v}", f"-d name={v}",
        f"-dname={v}", f"-d file,name={f},size=1g", f"-p {f}", f"-c options={f}", v, str(f),
        f"logdev={v}", "internal=0", "'", '"', "\\", ",", "=", " ", "$(id)", ";",
    ])


def _mount_words(d: Devices) -> st.SearchStrategy[str]:
    v = d.victim
    return st.sampled_from([
        "noatime", "logbsize=256k", "inode64", "ro", "norecovery", f"logdev={v}", f"rtdev={v}",
        "loop", "bind", "remount", "x-mount.mkdir", f"x-mount.mkdir={d.folder}/new", "", "=",
        '"', "\\",
    ])


def _argument(words: st.SearchStrategy[str], sep: str) -> st.SearchStrategy[bytes]:
    """Words of the grammar and junk (any text, or bytes that are not UTF-8; never a NUL, which
    argv cannot carry), joined, as the bytes a shell would pass."""
    junk = st.one_of(st.text(max_size=6).map(os.fsencode),
                     st.binary(min_size=1, max_size=4).map(lambda b: b + b"\xff"))
    parts = st.lists(st.one_of(words.map(os.fsencode), words.map(os.fsencode), junk),
                     max_size=6)
    return parts.map(lambda p: sep.encode().join(p).replace(b"\0", b""))


def _accepted(mkfs: bytes, mount: bytes) -> list[str] | None:
    """The mkfs.xfs arguments when the checker accepts both strings, else None."""
    try:
        args = parse_mkfs(os.fsdecode(mkfs)).argv()
        parse_mount(os.fsdecode(mount))
    except BadInput:
        return None
    return args


def test_fuzz_option_strings_never_exit_1_hang_or_write_elsewhere(tmp_path: Path) -> None:
    """validate --device VICTIM with fuzzed option strings: a refused option is exit 2; accepted
    ones reach the guard, which refuses the victim's ext4 (exit 3). Accepted mkfs options are
    also given to `mkfs.xfs -N` against the scratch device. Never exit 1, never a hang (timeout),
    and the victim, the scratch device and the file never change."""
    with victim_and_scratch(tmp_path / "devs") as d:
        before = d.checksums()
        seen: dict[int, int] = {}

        @settings(max_examples=30, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow])
        @given(mkfs=_argument(_mkfs_words(d), " ") | _argument(_mkfs_words(d), ""),
               mount=_argument(_mount_words(d), ","))
        def one(mkfs: bytes, mount: bytes) -> None:
            proc = validate(tmp_path / "state", "--device", d.victim, "--yes",
                            b"--mkfs-options=" + mkfs, b"--mount-options=" + mount)
            err = proc.stderr.decode(errors="replace")
            seen[proc.returncode] = seen.get(proc.returncode, 0) + 1
            assert proc.returncode in (2, 3), (mkfs, mount, proc.returncode, err)
            assert err.count("\n") == 1 and "Traceback" not in err, err
            args = _accepted(mkfs, mount)
            if proc.returncode == 2:
                assert args is None and ("--mkfs-options" in err or "--mount-options" in err), err
            else:
                assert args is not None, (mkfs, mount, err)
                dry = subprocess.run(["mkfs.xfs", "-N", "-f", *args, d.scratch],
                                     capture_output=True, timeout=60)
                assert dry.returncode in (0, 1), dry
            assert d.checksums() == before, (mkfs, mount)

        one()
        assert seen.get(2) and seen.get(3), seen  # both refusals and the guard are reached
    assert ours_attached(tmp_path) == [] and ours_mounted(tmp_path) == []
