"""Extended attributes with known sizes and --one-file-system, on a test-made XFS loop mount."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from advisor.profile.walker import Walker
from tests.conftest import mounted, require_root_tools, sh


def du(*args: str) -> int:
    out = subprocess.run(["du", "-s", *args], check=True, capture_output=True, text=True).stdout
    return int(out.split()[0])


def test_xattrs_and_one_file_system_on_xfs(loop: str, tmp_path: Path) -> None:
    require_root_tools("mkfs.xfs", "mount", "umount")
    sh("mkfs.xfs", "-q", "-f", "-K", loop)
    outer = tmp_path / "outer"
    outer.mkdir()
    (outer / "local").write_bytes(b"l" * 10)
    for i in range(20):  # enough entries beside the mount point to be examined as a chunk
        (outer / f"f{i}").write_bytes(b"f" * i)
    with mounted(loop, outer / "mnt") as mnt:
        for name in ("a", "b", "c"):
            (mnt / name).write_bytes(b"data")
        (mnt / "dir").mkdir()
        os.setxattr(mnt / "a", "user.tag", b"x" * 100)
        os.setxattr(mnt / "b", "user.big", b"y" * 300)  # over 254: never inline
        os.setxattr(mnt / "b", "user.s", b"z" * 10)
        os.setxattr(mnt / "dir", "user.d", b"")

        p = Walker().walk(mnt)
        x = p.xattrs
        assert x.supported
        assert (x.population, x.sample_size) == (5, 5)  # the root, a, b, c, dir: all of them
        assert x.inodes_with_xattrs == 3
        # Names are counted without "user.": a 3 + 100, b 3 + 300 + 1 + 10, dir 1 + 0.
        assert x.bytes_per_inode.total == 103 + 314 + 1
        assert (x.bytes_per_inode.median, x.bytes_per_inode.p90) == (1, 314)
        assert (x.largest_value, x.largest_value_name) == (300, "user.big")
        assert x.largest_value_path == str(mnt / "b")
        assert (p.answers.xattr_bytes_per_file, p.answers.largest_xattr_value) == (314, 300)
        # Attributes per inode: root 0, a 1, b 2, c 0, dir 1 (each costs 3 bytes inline).
        assert (x.attributes_per_inode.total, x.attributes_per_inode.maximum) == (4, 2)
        assert p.answers.xattrs_per_file == 2

        # Below the root, the mount point is another filesystem.
        everything = Walker().walk(outer)
        assert everything.files == 4 + 20
        assert everything.problems.other_filesystems_skipped == 0
        one = Walker(one_file_system=True).walk(outer)
        assert one.files == 1 + 20 and one.directories == 1
        # Examined an entry at a time (as the hook makes it), the same figures.
        one_by_one = Walker(one_file_system=True, before_examine=lambda path: None).walk(outer)
        assert one_by_one.model_dump(exclude={"elapsed_seconds"}) == one.model_dump(
            exclude={"elapsed_seconds"})
        assert one.problems.other_filesystems_skipped == 1
        assert one.one_file_system
        assert one.inodes == du("-x", "--inodes", str(outer))
        assert one.allocated_bytes == du("-x", "-B1", str(outer))
        assert everything.inodes == du("--inodes", str(outer))


def test_a_large_tree_is_sampled(loop: str, tmp_path: Path) -> None:
    require_root_tools("mkfs.xfs", "mount", "umount")
    sh("mkfs.xfs", "-q", "-f", "-K", loop)
    with mounted(loop, tmp_path / "mnt") as mnt:
        for i in range(300):
            path = mnt / f"f{i}"
            path.write_bytes(b"")
            os.setxattr(path, "user.k", b"v" * 50)
        p = Walker(xattr_sample=40).walk(mnt)
    x = p.xattrs
    assert (x.population, x.sample_size, x.sample_limit) == (301, 40, 40)
    assert set(b.low for b in x.bytes_per_inode.buckets) <= {0, 32}  # 0 (the root) or 1 + 50
    assert x.bytes_per_inode.maximum == 51
    assert x.inodes_with_xattrs >= 38
    assert p.answers.xattr_bytes_per_file == 51
