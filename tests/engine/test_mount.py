"""For real, as root: a proposal for a loop device is run with mkfs.xfs, the filesystem it makes
matches the dry run, and the proposed mount options mount."""

from __future__ import annotations

import re
from pathlib import Path

from advisor.advice import propose
from advisor.answers import load_workload
from advisor.inspect.devices import find_device, inspect_devices
from advisor.models.workload import Workload
from advisor.system.mkfs import parse_mkfs_output
from advisor.system.sysroot import SysRoot
from tests.conftest import loop_device, mounted, require_root_tools, sh
from tests.engine.helpers import TiB, device, environment

DATA = Path(__file__).parent / "data"


def mount_options_of(mnt: Path) -> set[str]:
    for line in Path("/proc/mounts").read_text().splitlines():
        fields = line.split()
        if fields[1] == str(mnt):
            return set(fields[3].split(","))
    raise AssertionError(f"{mnt} is not mounted")


def test_proposal_for_a_loop_device_formats_and_mounts(tmp_path: Path) -> None:
    require_root_tools("losetup", "mkfs.xfs", "mount", "xfs_info")
    with loop_device(tmp_path / "disk.img", 2 << 30) as dev:
        name = Path(dev).name
        Path(f"/sys/block/{name}/queue/rotational").write_text("0")
        inventory = inspect_devices(SysRoot(), probe=True)
        loop = find_device(inventory, dev)
        workload = load_workload(DATA / "workloads" / "fileserver.toml")
        p = propose(loop, workload.model_copy(update={"largest_directory_entries": 5_000_000}),
                    env=environment())
        assert p.mkfs_argv[-1] == dev and "-n" in p.mkfs_options
        assert p.check is not None
        out = sh(*p.mkfs_argv)
        made = parse_mkfs_output(out.stdout)
        dry = p.check.geometry
        assert (made.agcount, made.agsize_blocks, made.log_blocks, made.naming_block_size,
                made.inode_size) == (dry.agcount, dry.agsize_blocks, dry.log_blocks,
                                     dry.naming_block_size, dry.inode_size)
        with mounted(dev, tmp_path / "mnt", *p.mount_options) as mnt:
            active = mount_options_of(mnt)
            assert {"noatime", "logbsize=256k"} <= active, active
            assert set(p.mount_options) <= active


def test_every_mount_option_the_rules_emit_mounts(tmp_path: Path) -> None:
    require_root_tools("losetup", "mkfs.xfs", "mount")
    big = device(4 * TiB, rotational=True, write_cache="write back", fua=False)
    p = propose(big, Workload(nfs_32bit_clients=True, concurrent_writers=16,
                              writer_activity="metadata", atime_needed=False),
                env=environment())
    assert set(p.mount_options) == {"inode32", "logbsize=256k", "noatime"}
    with loop_device(tmp_path / "disk.img", 1 << 30) as dev:
        sh("mkfs.xfs", "-q", dev)
        with mounted(dev, tmp_path / "mnt", *p.mount_options) as mnt:
            active = mount_options_of(mnt)
            assert {"inode32", "logbsize=256k", "noatime"} <= active, active
            assert not any(re.fullmatch(r"nobarrier|barrier", o) for o in active)
