"""The dry run: parsing mkfs.xfs -N, stand-ins for huge devices, devices mkfs.xfs refuses."""

from __future__ import annotations

import pytest

from advisor.errors import DeviceProblem
from advisor.system.mkfs import dry_run, emulation_options, parse_mkfs_output
from tests.engine.helpers import GiB, TiB, device, md_stripe

MKFS_N = """meta-data=t1.img                 isize=512    agcount=4, agsize=65536 blks
         =                       sectsz=512   attr=2, projid32bit=1
         =                       crc=1        finobt=1, sparse=1, rmapbt=0
         =                       reflink=1    bigtime=1 inobtcount=1 nrext64=0
data     =                       bsize=4096   blocks=262144, imaxpct=25
         =                       sunit=16     swidth=64 blks
naming   =version 2              bsize=16384  ascii-ci=0, ftype=1
log      =internal log           bsize=4096   blocks=16384, version=2
         =                       sectsz=512   sunit=1 blks, lazy-count=1
realtime =none                   extsz=4096   blocks=0, rtextents=0
"""


def test_parse_mkfs_output() -> None:
    g = parse_mkfs_output(MKFS_N, "Warning: something\n")
    assert (g.inode_size, g.agcount, g.agsize_blocks, g.block_size) == (512, 4, 65536, 4096)
    assert (g.sunit_blocks, g.swidth_blocks, g.naming_block_size) == (16, 64, 16384)
    assert (g.log_blocks, g.log_sunit_blocks, g.sector_size) == (16384, 1, 512)
    assert g.features["reflink"] == 1 and g.features["rmapbt"] == 0 and g.features["ftype"] == 1
    assert g.mkfs_warnings == ["Warning: something"]


def test_dry_run_defaults_match_the_guide_sheet() -> None:
    check = dry_run(device(100 * GiB), [])
    assert check.method == "sparse file"
    assert (check.geometry.agcount, check.geometry.log_blocks) == (4, 16384)
    assert check.argv[-1] == "FILE"


def test_dry_run_beyond_the_ext4_file_limit() -> None:
    # 64 TiB: more than ext4 can hold in one file; tmpfs can, so only the agcount is asserted
    # unless the fallback was taken.
    check = dry_run(device(64 * TiB), [])
    assert check.geometry.agcount == 64
    assert check.geometry.size_bytes <= 64 * TiB
    assert check.method in ("sparse file", "mkfs -d file,size")


def test_dry_run_fallback_when_the_file_cannot_be_that_large(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    # /dev/shm-like roots hold huge sparse files; the root filesystem (ext4) stops at 16 TiB.
    monkeypatch.setattr(tempfile, "tempdir", "/var/tmp")
    check = dry_run(device(20 * TiB), ["-n", "size=64k"])
    assert check.method == "mkfs -d file,size"
    assert check.argv[-2:] == ["-d", f"file,name=FILE,size={20 * TiB}"]
    assert check.geometry.naming_block_size == 65536 and check.geometry.agcount == 20


def test_dry_run_sees_the_detected_stripe() -> None:
    dev = device(100 * GiB, stripe=md_stripe(256 * 1024, 8))
    assert emulation_options(dev) == ["-d", "su=262144,sw=8"]
    check = dry_run(dev, [])
    assert (check.geometry.agcount, check.geometry.sunit_blocks) == (16, 64)
    # A proposal that sets the stripe itself replaces the emulated one.
    assert emulation_options(dev, ["-d", "su=64k,sw=4"]) == []


def test_dry_run_uses_the_physical_sector() -> None:
    check = dry_run(device(10 * GiB, physical_sector=4096), [])
    assert check.geometry.sector_size == 4096


def test_too_small_device_is_a_device_problem() -> None:
    with pytest.raises(DeviceProblem, match=r"mkfs\.xfs rejects"):
        dry_run(device(64 << 20), [], defaults=True)


def test_unknown_size_is_a_device_problem() -> None:
    with pytest.raises(DeviceProblem, match="size unknown"):
        dry_run(device(0), [])


def test_a_dry_run_ahead_raises_its_error_in_the_caller() -> None:
    """The defaults asked ahead run in a thread named for advisor.fleet's wait; what fails there
    (a device too small for mkfs.xfs) is raised by defaults(), in the caller's thread."""
    import threading

    from advisor.system.mkfs import AHEAD_THREADS, HostMkfs

    host = HostMkfs()
    host.defaults_ahead(device(1 << 20))
    assert host._ahead["/dev/sdx"].name.startswith(AHEAD_THREADS)
    with pytest.raises(DeviceProblem, match="rejects a filesystem of this device"):
        host.defaults(device(1 << 20))
    assert not any(t.name.startswith(AHEAD_THREADS) for t in threading.enumerate())
    ok = HostMkfs()
    ok.defaults_ahead(device(10 * GiB))
    assert ok.defaults(device(10 * GiB)).geometry.agcount >= 4


def test_one_dry_run_per_distinct_option_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate on the whole draft is the engine's last dry run (same options): mkfs.xfs runs
    once for the defaults, once per changed mkfs setting, and not again for the gate; asked
    ahead, the defaults run once too."""
    from advisor.advice import propose
    from advisor.engine.rulebook import load_rulebook
    from advisor.models.workload import Workload
    from advisor.system import mkfs
    from tests.engine.helpers import environment

    runs: list[tuple[str, ...]] = []
    real = mkfs.attempt

    def counted(dev: object, options: list[str]) -> object:
        runs.append(tuple(options))
        return real(dev, options)  # type: ignore[arg-type]

    monkeypatch.setattr(mkfs, "attempt", counted)
    host = mkfs.HostMkfs()
    dev = device(100 * GiB)
    host.defaults_ahead(dev)
    p = propose(dev, Workload(largest_directory_entries=5_000_000, concurrent_writers=64,
                              xattr_bytes_per_file=600),
                env=environment(), rulebook=load_rulebook(), mkfs=host)
    changed = [d for d in p.decisions if d.changed and d.setting.startswith("-")]
    assert len(changed) >= 2, [d.setting for d in changed]
    assert len(runs) == 1 + len(changed) == len(set(runs)), runs
    assert runs[-1] == tuple(p.mkfs_options) and p.check is not None
