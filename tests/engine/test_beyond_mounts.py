"""For real (root): what the rules swalloc, allocsize, largeio,
extent-size-hint, cow-extent-size-hint, inode-space and rmapbt propose is made by this mkfs.xfs,
mounts on this kernel, and reads back from xfs_info, xfs_io, stat() and /proc/self/mountinfo;
rmapbt's measured space cost holds; project-quota's reading of the kernel's config agrees with
what the kernel does with prjquota; what the rmapbt rule says xfs_scrub does is what it does."""

from __future__ import annotations

import os
import re
from pathlib import Path

from advisor.advice import propose
from advisor.bench import counters
from advisor.engine.rulebook import RuleBook
from advisor.models.proposal import Proposal
from advisor.models.workload import Workload
from advisor.system.versions import parse_kernel_config, read_environment
from tests.conftest import loop_device, mounted, require_root_tools, sh
from tests.engine.helpers import GiB, TiB, device, environment, md_stripe

KiB, MiB = 1 << 10, 1 << 20


def options_of(p: Proposal, setting: str) -> list[str]:
    decision = next(d for d in p.decisions if d.setting == setting)
    assert decision.changed, (setting, decision.reason)
    return list(decision.options)


def mountinfo_options(mnt: Path) -> set[str]:
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[4] == str(mnt):
            return set(fields[5].split(",")) | set(line.split(" - ")[1].split()[2].split(","))
    raise AssertionError(f"{mnt} is not mounted")


def test_proposed_allocation_options_are_made_mounted_and_read_back(tmp_path: Path) -> None:
    require_root_tools("losetup", "mkfs.xfs", "mount", "xfs_info", "xfs_io")
    env = environment()
    stripe = md_stripe(64 * KiB, 4)  # the loop device gets the same stripe with -d su=,sw=
    backups = propose(device(8 * TiB, rotational=True, stripe=stripe),
                      Workload(write_pattern="sequential", median_file_size=2 * GiB,
                               concurrent_writers=8), env=env)
    images = propose(device(4 * TiB, rotational=True, stripe=stripe),
                     Workload(write_pattern="random", median_file_size=40 * GiB,
                              reflink_clones=True, online_scrub=True), env=env)
    small = propose(device(2 * TiB, rotational=False), Workload(median_file_size=2 * KiB),
                    env=env)
    mount = [*options_of(backups, "mount swalloc"), *options_of(backups, "mount allocsize"),
             *options_of(backups, "mount largeio")]
    assert mount == ["swalloc", "allocsize=512m", "largeio"]
    extsz = options_of(images, "-d extszinherit")[1]
    cowsz = options_of(images, "-d cowextsize")[1]
    maxpct = options_of(small, "-i maxpct")[1]
    rmap = options_of(images, "-m rmapbt")[1]
    with loop_device(tmp_path / "disk.img", 1 << 30) as dev:
        sh("mkfs.xfs", "-q", "-f", "-K", "-d", f"su=64k,sw=4,{extsz},{cowsz}", "-i", maxpct,
           "-m", rmap, dev)
        with mounted(dev, tmp_path / "mnt", *mount) as mnt:
            active = mountinfo_options(mnt)
            assert {"swalloc", "largeio"} <= active, active
            assert "allocsize=524288k" in active, active  # the kernel shows it in KiB
            info = sh("xfs_info", str(mnt)).stdout
            assert re.search(r"\brmapbt=1\b", info), info
            assert re.search(rf"\bimaxpct={maxpct.split('=')[1]}\b", info), info
            stat = sh("xfs_io", "-c", "stat", str(mnt)).stdout
            block = 4096
            assert f"fsxattr.extsize = {int(extsz.split('=')[1]) * block}" in stat, stat
            assert f"fsxattr.cowextsize = {int(cowsz.split('=')[1]) * block}" in stat, stat
            # Inherited: a new file carries both hints; stat() reports the stripe width.
            (mnt / "vm.img").write_bytes(b"x")
            file_stat = sh("xfs_io", "-c", "stat", str(mnt / "vm.img")).stdout
            assert f"fsxattr.extsize = {int(extsz.split('=')[1]) * block}" in file_stat
            assert os.stat(mnt / "vm.img").st_blksize == 256 * KiB
            # "Existing files keep theirs": a file holding data refuses a new hint.
            kept = sh("xfs_io", "-c", "extsize 2m", str(mnt / "vm.img"), check=False)
            assert kept.returncode != 0, kept.stderr
            # What the rmapbt rule says xfs_scrub does on this kernel, it does.
            scrub = sh("xfs_scrub", "-n", str(mnt), check=False)
            kernel = read_environment().kernel_xfs
            if kernel.get("ONLINE_SCRUB") is False:
                assert scrub.returncode != 0, scrub.stderr
                assert "scrubbing facility is not available" in scrub.stdout + scrub.stderr
            elif kernel.get("ONLINE_SCRUB"):
                assert scrub.returncode == 0, scrub.stdout + scrub.stderr


def _used_after_mkfs(tmp_path: Path, dev: str, rmapbt: int) -> tuple[int, int]:
    sh("mkfs.xfs", "-q", "-f", "-K", "-m", f"rmapbt={rmapbt}", dev)
    with mounted(dev, tmp_path / f"m{rmapbt}") as mnt:
        vfs = os.statvfs(mnt)
        return (vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize, vfs.f_blocks * vfs.f_frsize


def test_rmapbt_costs_what_the_rule_says(tmp_path: Path) -> None:
    """The rule's text: a per-AG reservation of 1.2% of a 10 GiB filesystem."""
    require_root_tools("losetup", "mkfs.xfs", "mount")
    with loop_device(tmp_path / "disk.img", 10 * GiB) as dev:
        without, size = _used_after_mkfs(tmp_path, dev, 0)
        if environment().xfsprogs_version == read_environment().xfsprogs_version:
            # The setting's "changeable later" and the warning: 6.1 cannot add it afterwards.
            added = sh("xfs_admin", "-O", "rmapbt=1", dev, check=False)
            assert added.returncode != 0, added.stderr
        with_rmap, _ = _used_after_mkfs(tmp_path, dev, 1)
    share = (with_rmap - without) / size
    assert 0.011 <= share <= 0.013, share


def test_project_quota_follows_the_kernel(tmp_path: Path) -> None:
    """On a kernel with CONFIG_XFS_QUOTA the proposed prjquota mounts and accounts; on one
    without (the kernel here), the rule keeps the default and warns, and the kernel does refuse
    the option: the config reading matches the kernel's behaviour."""
    require_root_tools("losetup", "mkfs.xfs", "mount", "xfs_quota")
    env = read_environment()
    p = propose(device(100 * GiB, rotational=False),
                Workload(per_tenant_quotas=True, mount_point="/srv/tenants"), env=env)
    decision = next(d for d in p.decisions if d.setting == "mount quota")
    with loop_device(tmp_path / "disk.img", 1 << 30) as dev:
        sh("mkfs.xfs", "-q", "-f", "-K", dev)
        if env.kernel_xfs.get("QUOTA") is False:
            assert not decision.changed
            assert any("CONFIG_XFS_QUOTA" in w.message for w in p.warnings
                       if w.rule == "project-quota")
            (tmp_path / "mnt").mkdir()
            refused = sh("mount", "-o", "prjquota", dev, str(tmp_path / "mnt"), check=False)
            assert refused.returncode != 0, refused.stderr
            return
        assert decision.changed and decision.options == ["prjquota"]
        with mounted(dev, tmp_path / "mnt", *decision.options) as mnt:
            assert "prjquota" in mountinfo_options(mnt)
            state = sh("xfs_quota", "-x", "-c", "state -p", str(mnt)).stdout
            assert re.search(r"Accounting: ON", state), state


def test_kernel_config_is_read_for_the_xfs_options() -> None:
    text = ("CONFIG_XFS_FS=m\nCONFIG_XFS_QUOTA=y\n# CONFIG_XFS_ONLINE_SCRUB is not set\n"
            "CONFIG_XFS_ONLINE_REPAIR=m\n")
    assert parse_kernel_config(text) == {"QUOTA": True, "ONLINE_SCRUB": False,
                                         "ONLINE_REPAIR": True}
    assert parse_kernel_config("CONFIG_EXT4_FS=y\n") == {}


def test_every_mechanism_claim_names_a_counter_validate_measures(book: RuleBook) -> None:
    names = {m.name for m in counters.MECHANISMS}
    claims = [(r.id, c.counter) for r in book.all() for c in r.mechanism]
    assert {"swalloc", "extent-size-hint", "rmapbt", "project-quota"} <= {r for r, _ in claims}
    assert [(r, c) for r, c in claims if c not in names] == []


def test_extent_allocations_are_counted() -> None:
    got = counters.parse_snapshot("extent_alloc 7 100 2 10\nrmapbt 50 60 11 4 0 0 0 0 0 0\n")
    assert got == {"extent_allocs": 7}
