"""Below the filesystem (external log, what sits under the device, thin provisioning,
block size and DAX): for real, as root, each proposal formats and mounts on loop devices the
test makes, and the setting is read back from the filesystem (xfs_info, /proc/self/mountinfo)."""

from __future__ import annotations

from pathlib import Path

from advisor.advice import propose
from advisor.inspect.devices import find_device, inspect_devices
from advisor.models.device import Device, Fact
from advisor.models.environment import parse_version
from advisor.models.workload import Storage, Workload
from advisor.system.mkfs import parse_mkfs_output
from advisor.system.sysroot import SysRoot
from advisor.system.versions import read_environment
from tests.conftest import loop_device, mounted, require_root_tools, sh
from tests.engine.helpers import environment


def mountinfo_options(mnt: Path) -> set[str]:
    """The mount's options in effect, both columns (per-mount and superblock) of mountinfo."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[4] == str(mnt):
            return set(fields[5].split(",")) | set(fields[-1].split(","))
    raise AssertionError(f"{mnt} is not mounted")


def test_external_log_formats_mounts_and_is_needed_to_mount(tmp_path: Path) -> None:
    require_root_tools("losetup", "mkfs.xfs", "mount", "xfs_info")
    with loop_device(tmp_path / "data.img", 2 << 30) as dev, \
            loop_device(tmp_path / "log.img", 128 << 20) as logdev:
        Path(f"/sys/block/{Path(dev).name}/queue/rotational").write_text("1")
        data = find_device(inspect_devices(SysRoot(), probe=True), dev)
        workload = Workload(fsyncs_per_second=500,
                            storage=Storage(kind="hardware-raid", log_device=logdev))
        p = propose(data, workload, env=environment())
        logged = next(d for d in p.decisions if d.setting == "-l logdev")
        assert logged.changed and logged.rule == "external-log", logged.reason
        assert f"logdev={logdev}" in ",".join(p.mkfs_options)
        assert f"logdev={logdev}" in p.mount_options
        assert p.check is not None and "LOGFILE" in " ".join(p.check.argv)
        made = parse_mkfs_output(sh(*p.mkfs_argv).stdout)
        assert made.log_blocks == p.check.geometry.log_blocks  # the dry run's log, for real
        info = sh("xfs_info", dev).stdout
        assert "log      =external" in info, info
        (tmp_path / "mnt").mkdir()
        refused = sh("mount", dev, str(tmp_path / "mnt"), check=False)
        if refused.returncode == 0:  # never leave it mounted, even when the claim is wrong
            sh("umount", str(tmp_path / "mnt"))
        # Without logdev= it does not mount (the warning's claim).
        assert refused.returncode != 0, refused.stderr
        with mounted(dev, tmp_path / "mnt", *p.mount_options) as mnt:
            assert f"logdev={logdev}" in mountinfo_options(mnt)
            assert f"log      ={logdev}" in sh("xfs_info", str(mnt)).stdout


def _loop_as(dev: str, **facts: object) -> Device:
    """The inspected loop device with facts a loop device cannot have set (a drive's 16 KiB
    unit, DAX), as the rules would see them on that hardware."""
    found = find_device(inspect_devices(SysRoot(), probe=True), dev)
    return found.model_copy(update={k: Fact(value=v, source="test") for k, v in facts.items()})


def test_block_size_of_a_16k_unit_formats_and_mounts_on_this_kernel(tmp_path: Path) -> None:
    require_root_tools("losetup", "mkfs.xfs", "mount", "xfs_info")
    env = read_environment()  # this host's kernel and page size: the rule asks them
    with loop_device(tmp_path / "qlc.img", 1 << 30, sector=4096) as dev:
        p = propose(_loop_as(dev, physical_sector=16384, rotational=False), Workload(), env=env)
        if (parse_version(env.kernel) or (0, 0)) < (6, 12) and (env.page_size or 0) < 16384:
            decision = next(d for d in p.decisions if d.setting == "-b size")
            assert not decision.changed and "before Linux 6.12" in decision.reason
            return  # and 16 KiB blocks would not mount here: nothing more to show
        assert p.mkfs_options[:2] == ["-b", "size=16k"], p.mkfs_options
        sh(*p.mkfs_argv)
        with mounted(dev, tmp_path / "mnt", *p.mount_options) as mnt:
            assert "bsize=16384" in sh("xfs_info", str(mnt)).stdout.split("data ")[1]


def test_dax_layout_formats_and_mounts(tmp_path: Path) -> None:
    require_root_tools("losetup", "mkfs.xfs", "mount", "xfs_info")
    with loop_device(tmp_path / "pmem.img", 1 << 30) as dev:
        p = propose(_loop_as(dev, dax=True, rotational=False), Workload(), env=environment())
        assert {"-m", "reflink=0"} <= set(p.mkfs_options), p.mkfs_options
        assert "su=2m,sw=1,extszinherit=512" in p.mkfs_options, p.mkfs_options
        assert "dax=always" in p.mount_options
        sh(*p.mkfs_argv)
        info = sh("xfs_info", dev).stdout
        assert "reflink=0" in info and "sunit=512    swidth=512 blks" in info, info
        with mounted(dev, tmp_path / "mnt", *p.mount_options) as mnt:
            # A loop device is not DAX-capable: the kernel mounts it, with dax=never.
            assert "dax=never" in mountinfo_options(mnt)
            # Every new file inherits the 2 MiB hint of the root directory.
            (mnt / "f").write_bytes(b"x")
            assert "fsxattr.extsize = 2097152" in sh("xfs_io", "-c", "stat", str(mnt / "f")).stdout



def test_thin_storage_deleting_fast_gets_online_discard_which_mounts(tmp_path: Path) -> None:
    require_root_tools("losetup", "mkfs.xfs", "mount")
    with loop_device(tmp_path / "thin.img", 1 << 30) as dev:
        thin = _loop_as(dev, thin="dm-thin", rotational=False)
        assert thin.discard_granularity.value  # a loop device takes discards (hole punching)
        p = propose(thin, Workload(deleted_per_day=1 << 30), env=environment())
        assert "discard" in p.mount_options, p.decisions
        sh(*p.mkfs_argv)
        with mounted(dev, tmp_path / "mnt", *p.mount_options) as mnt:
            assert "discard" in mountinfo_options(mnt)


def test_log_device_answers_are_device_paths() -> None:
    import pytest
    from pydantic import ValidationError

    assert Storage(log_device="/dev/disk/by-id/nvme-eui.0025_part3").log_device
    for bad in ("nvme0n1p3", "/dev/../etc/passwd", "/dev/sdb 1", "/tmp/log.img"):
        with pytest.raises(ValidationError, match="must be a device path"):
            Storage(log_device=bad)
