"""The user's files (advisor.system.files) and `profile --write-workload`: only regular files are
read or written, a write is one atomic rename that keeps the mode (and, as root, the owner), a
symlink is written through to its regular target and stays a link, and a FIFO, a device node or a
folder is refused with exit 2 and left exactly as it was, without ever blocking."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.errors import BadInput
from advisor.system.files import MAX_TEXT_BYTES, read_text, write_target, write_text_atomically
from tests.conftest import REPO, require_root_tools, sh

GIB = 1 << 30


def profile(tree: Path, target: str | Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ}
    env.pop("XFS_ADVISOR_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "advisor", "profile", str(tree),
                           "--write-workload", str(target), *extra], capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=30, stdin=subprocess.DEVNULL)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "d").mkdir(parents=True)
    for i in range(5):
        (root / "d" / f"f{i}").write_bytes(b"x" * 5000)
    return root


def refused(proc: subprocess.CompletedProcess[str], needle: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and needle in proc.stderr, proc.stderr


def test_fifo_target_is_refused_without_blocking(tmp_path: Path, tree: Path) -> None:
    fifo = tmp_path / "answers.toml"
    os.mkfifo(fifo)
    refused(profile(tree, fifo), "it is a FIFO, not a regular file")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_device_node_and_links_to_it_are_refused(tmp_path: Path, tree: Path) -> None:
    refused(profile(tree, "/dev/null"), "character device")
    assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)
    link = tmp_path / "null.toml"
    link.symlink_to("/dev/null")
    refused(profile(tree, link), "character device")
    assert os.readlink(link) == "/dev/null"


def test_block_device_is_never_replaced(tmp_path: Path, tree: Path) -> None:
    """`--write-workload /dev/loopN` and a link to it: refused, the node and its content stay."""
    require_root_tools("losetup")
    from tests.bench.test_guard import attached, checksum

    backing = tmp_path / "scratch.img"
    with attached(backing, GIB) as dev:
        sh("dd", "if=/dev/urandom", f"of={dev}", "bs=64k", "count=4", "conv=fsync")
        before = checksum(backing)
        refused(profile(tree, dev), "block device")
        link = tmp_path / "dev.toml"
        link.symlink_to(dev)
        refused(profile(tree, link), "block device")
        assert stat.S_ISBLK(os.lstat(dev).st_mode) and os.readlink(link) == dev
        sh("blockdev", "--flushbufs", dev, check=False)
        assert checksum(backing) == before
    # Detached, or set to detach at its last close: another program reading the host's devices
    # (a device list, a blkid probe) may hold it open for a moment, and `losetup -d` then only
    # marks it (autoclear).
    left = sh("losetup", "--list", "--noheadings", "--raw", "--output", "AUTOCLEAR,BACK-FILE")
    assert all(line.startswith("1 ") for line in left.stdout.splitlines()
               if line.endswith(f" {backing}")), left.stdout


def test_folder_and_missing_parent_are_refused(tmp_path: Path, tree: Path) -> None:
    refused(profile(tree, tmp_path), "directory")
    refused(profile(tree, tmp_path / "missing" / "w.toml"), "is not a directory")
    dangling = tmp_path / "dangling.toml"
    dangling.symlink_to(tmp_path / "nowhere.toml")
    refused(profile(tree, dangling), "symlink to the missing")
    assert not (tmp_path / "nowhere.toml").exists()


def test_symlink_is_written_through_keeping_mode_and_owner(tmp_path: Path, tree: Path) -> None:
    real = tmp_path / "real.toml"
    real.write_text('access = "mixed"  # mine\n')
    os.chmod(real, 0o640)
    if os.geteuid() == 0:
        os.chown(real, 1234, 4321)
    link = tmp_path / "link.toml"
    link.symlink_to(real.name)
    proc = profile(tree, link)
    assert proc.returncode == 0, proc.stderr
    assert os.readlink(link) == real.name  # still a link
    text = real.read_text()
    assert 'access = "mixed"  # mine' in text and "largest_directory_entries = 5" in text
    st = os.stat(real)
    assert stat.S_IMODE(st.st_mode) == 0o640
    if os.geteuid() == 0:
        assert (st.st_uid, st.st_gid) == (1234, 4321)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.toml", "real.toml", "tree"]


def test_a_new_file_gets_the_umask_mode(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        written = write_text_atomically(tmp_path / "new.toml", "a = 1\n", "workload file")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(written).st_mode) == 0o640
    assert written.read_text() == "a = 1\n"


def test_hard_linked_target_is_replaced_not_written_in_place(tmp_path: Path) -> None:
    """The rename gives the path a new inode: the other name keeps the old text (never half a
    file), which is what an atomic replace means."""
    target = tmp_path / "w.toml"
    target.write_text("old\n")
    os.link(target, tmp_path / "other.toml")
    write_text_atomically(target, "new\n", "workload file")
    assert target.read_text() == "new\n" and (tmp_path / "other.toml").read_text() == "old\n"


def test_read_text_refuses_what_is_not_a_small_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (MAX_TEXT_BYTES + 1))
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"a = '\xff'\n")
    for path, needle in ((fifo, "FIFO"), (tmp_path, "directory"), (Path("/dev/zero"),
                         "character device"), (big, "larger than"), (binary, "not UTF-8"),
                         (tmp_path / "missing", "No such file")):
        with pytest.raises(BadInput, match=needle):
            read_text(path, "workload file")


def test_write_target_under_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(BadInput, match="Not a directory"):
        write_target(tmp_path / "file" / "w.toml", "workload file")
