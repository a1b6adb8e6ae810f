"""Issue 15, below the filesystem (external log, what sits under the device, thin provisioning,
block size and DAX): for real, as root, each proposal formats and mounts on loop devices the
test makes, and the setting is read back from the filesystem (xfs_info, /proc/self/mountinfo)."""

from __future__ import annotations

from pathlib import Path

from advisor.advice import propose
from advisor.inspect.devices import find_device, inspect_devices
from advisor.models.workload import Storage, Workload
from advisor.system.mkfs import parse_mkfs_output
from advisor.system.sysroot import SysRoot
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
        assert refused.returncode != 0  # without logdev= it does not mount (the warning's claim)
        with mounted(dev, tmp_path / "mnt", *p.mount_options) as mnt:
            assert f"logdev={logdev}" in mountinfo_options(mnt)
            assert f"log      ={logdev}" in sh("xfs_info", str(mnt)).stdout
