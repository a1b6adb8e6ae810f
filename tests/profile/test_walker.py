"""The walker on generated trees with known answers, with du as an oracle where it applies."""

from __future__ import annotations

import gc
import json
import os
import resource
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from advisor.errors import BadInput
from advisor.profile.report import render_text
from advisor.profile.walker import CHUNK, Walker, display_path, stored_xattr_size
from tests.profile.conftest import BIG_DIRECTORY_ENTRIES


def du(*args: str) -> int:
    out = subprocess.run(["du", "-s", *args], check=True, capture_output=True, text=True).stdout
    return int(out.split()[0])


def test_a_directory_of_100000_entries(big_directory: Path) -> None:
    p = Walker().walk(big_directory)
    assert p.files == BIG_DIRECTORY_ENTRIES + 3
    assert p.directories == 3
    assert p.largest_directories[0].entries == BIG_DIRECTORY_ENTRIES
    assert p.largest_directories[0].path == str(big_directory / "big")
    assert [d.entries for d in p.largest_directories] == [BIG_DIRECTORY_ENTRIES, 3, 2]
    assert p.answers.largest_directory_entries == BIG_DIRECTORY_ENTRIES
    assert p.answers.median_file_size == 0
    assert p.file_sizes.maximum == 100 and p.apparent_bytes == 300
    assert p.inodes == du("--inodes", str(big_directory))
    assert not p.partial and p.problems.vanished == 0
    # The xattr sample is capped: 10,000 of the 100,005 files and directories.
    assert p.xattrs.population == BIG_DIRECTORY_ENTRIES + 3 + 3
    assert p.xattrs.sample_size == 10_000


def test_entries_examined_in_chunks_count_what_one_at_a_time_counts(memory_tmp: Path) -> None:
    """Directories larger than a chunk, with files of every size class, sparse files, symlinks,
    subdirectories, and in some chunks what only the entry-by-entry examination handles (a file
    with two names, a FIFO; a directory's listing order decides which chunk): the figures are
    those of a walk examining each entry in turn (the `before_examine` hook makes it do so), the
    xattr sample included."""
    top = memory_tmp / "tree"
    # d0 and d1 hold subdirectories and symlinks, d2 subdirectories, d3 only files, d4 files and
    # symlinks (no subdirectory)
    for d in range(5):
        directory = top / f"d{d}"
        directory.mkdir(parents=True)
        for i in range(1, CHUNK * 2 + 100):
            path = directory / f"e{i:05d}"
            if i % 97 == 0 and d < 3:
                path.mkdir()
                (path / "inner").write_bytes(b"i" * i)
            elif i % 89 == 0 and d in (0, 1, 4):
                os.symlink(f"e{i - 1:05d}", path)
            elif i % 83 == 0:
                with open(path, "wb") as f:
                    f.truncate(1 << 16)
            else:
                path.write_bytes(b"f" * ((i * 7919) % 5000 if i % 5 else i * 40))
                if i % 11 == 0:  # which paths the sample holds shows in the xattr figures
                    os.setxattr(path, "user.tag", b"x" * (i % 300))
    os.link(top / "d1" / "e00001", top / "d1" / "l")  # a file with two names
    os.link(top / "d2" / "e00002", top / "d2" / "l")
    os.mkfifo(top / "d0" / "p")  # a special file

    def figures(**how: Any) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(
            Walker(processes=1, xattr_sample=300, **how).walk(top).model_dump_json())
        doc.pop("elapsed_seconds")
        return doc

    chunks, one_at_a_time = figures(), figures(before_examine=lambda path: None)
    assert {k: (v, one_at_a_time[k]) for k, v in chunks.items() if v != one_at_a_time[k]} == {}
    assert chunks["inodes"] == du("--inodes", str(top))
    assert chunks["allocated_bytes"] == du("-B1", str(top))
    assert chunks["hard_links"] == {"inodes": 2, "extra_names": 2}
    assert chunks["sparse_files"] == 5 * len(range(83, CHUNK * 2 + 100, 83))
    assert chunks["symlinks"] == 3 * len(range(89, CHUNK * 2 + 100, 89))
    assert chunks["special_files"]["fifos"] == 1
    assert chunks["xattrs"]["population"] > chunks["xattrs"]["sample_size"] == 300
    assert 0 < chunks["xattrs"]["inodes_with_xattrs"] < 300


def make_nested(top: Path, depth: int, fanout: int, sizes: tuple[int, ...]) -> int:
    """A tree `depth` levels deep, `fanout` subdirectories and one file per size in each
    directory. Returns the number of directories."""
    dirs = 1
    for i, size in enumerate(sizes):
        (top / f"f{i}").write_bytes(b"z" * size)
    if depth:
        for j in range(fanout):
            sub = top / f"d{j}"
            sub.mkdir()
            dirs += make_nested(sub, depth - 1, fanout, sizes)
    return dirs


def test_nested_tree_known_answers(tmp_path: Path) -> None:
    sizes = (0, 100, 4096, 65536)
    dirs = make_nested(tmp_path, 3, 3, sizes)
    assert dirs == 1 + 3 + 9 + 27
    p = Walker().walk(tmp_path)
    assert p.directories == dirs
    assert p.files == dirs * len(sizes)
    assert p.apparent_bytes == dirs * sum(sizes)
    # 40 files of each size: ranks 41-80 are the 100-byte files, the 144th is 64 KiB.
    assert (p.file_sizes.p10, p.file_sizes.median, p.file_sizes.p90) == (0, 100, 65536)
    assert p.file_sizes.percentiles_exact
    assert p.answers.median_file_size == 100
    assert [(b.low, b.count) for b in p.file_sizes.buckets] == [
        (0, 40), (64, 40), (4096, 40), (65536, 40)]
    # Inner directories hold 3 subdirectories and 4 files, leaves 4 files.
    assert p.answers.largest_directory_entries == 7
    assert p.directory_sizes.count == dirs
    assert [(b.low, b.count) for b in p.directory_sizes.buckets] == [(4, dirs)]
    assert len(p.largest_directories) == 10
    assert p.inodes == du("--inodes", str(tmp_path))
    assert p.allocated_bytes == du("-B1", str(tmp_path))


def test_deeper_than_the_recursion_limit(tmp_path: Path) -> None:
    depth = sys.getrecursionlimit() + 200
    fd = os.open(tmp_path, os.O_RDONLY)
    try:  # built level by level: pathlib and os.makedirs recurse themselves
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            parent, fd = fd, os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(parent)
        os.close(os.open("leaf", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    try:
        p = Walker().walk(tmp_path)
    finally:  # rm copes with any depth; pytest's clean-up (shutil.rmtree) would recurse too deep
        subprocess.run(["rm", "-rf", str(tmp_path / "d")], check=True)
    assert p.directories == depth + 1
    assert p.files == 1
    assert p.problems.unreadable_directories == 0


def test_paths_longer_than_path_max(tmp_path: Path) -> None:
    levels, name = 30, "n" * 200  # 6,000 characters below tmp_path; PATH_MAX is 4,096
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=fd)
            parent, fd = fd, os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(parent)
        os.close(os.open("leaf", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    try:
        p = Walker().walk(tmp_path)
        assert p.inodes == du("--inodes", str(tmp_path))
    finally:
        subprocess.run(["rm", "-rf", str(tmp_path / name)], check=True)
    assert p.problems.unreadable_directories == 0, p.problems.examples
    assert p.directories == levels + 1
    assert p.files == 1


def test_hard_links_sparse_and_special_files(tmp_path: Path) -> None:
    (tmp_path / "data").write_bytes(b"d" * 5000)
    (tmp_path / "sub").mkdir()
    os.link(tmp_path / "data", tmp_path / "data2")
    os.link(tmp_path / "data", tmp_path / "sub" / "data3")
    with open(tmp_path / "sparse", "wb") as f:
        f.truncate(10 << 20)
        f.seek(5 << 20)
        f.write(b"x" * 4096)
    os.mkfifo(tmp_path / "fifo")
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "sock"))
        os.symlink("data", tmp_path / "link")
        devices = 0
        if os.geteuid() == 0:  # only root may create device nodes
            os.mknod(tmp_path / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
            devices = 1
        p = Walker().walk(tmp_path)
    finally:
        sock.close()
    assert p.files == 2  # data (3 names, counted once) and sparse
    assert (p.hard_links.inodes, p.hard_links.extra_names) == (1, 2)
    assert p.apparent_bytes == 5000 + (10 << 20)
    assert p.sparse_files == 1
    assert p.symlinks == 1
    specials = p.special_files
    assert (specials.fifos, specials.sockets, specials.character_devices) == (1, 1, devices)
    assert p.entries == 1 + 8 + devices  # the root, 7 names (+ the device) in it, 1 in sub
    assert p.inodes == du("--inodes", str(tmp_path))
    assert p.allocated_bytes == du("-B1", str(tmp_path))


def test_symlink_loops_are_not_followed(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    os.symlink("..", tmp_path / "sub" / "up")
    os.symlink(".", tmp_path / "self")
    os.symlink(str(tmp_path), tmp_path / "sub" / "absolute")
    p = Walker().walk(tmp_path)
    assert p.symlinks == 5
    assert p.directories == 2
    assert p.files == 0
    assert p.problems.unreadable_entries == 0


def test_non_utf8_names_are_shown_with_escapes(tmp_path: Path) -> None:
    odd = os.fsencode(tmp_path) + b"/caf\xe9-\xff"
    os.mkdir(odd)
    for name in (b"\xfe1", b"\xfe2", b"ok", b"\xc3\xa9t\xc3\xa9"):  # the last one is valid UTF-8
        os.mknod(odd + b"/" + name)
    p = Walker().walk(tmp_path)
    assert p.files == 4
    assert p.largest_directories[0].path == f"{tmp_path}/caf\\xe9-\\xff"
    text = render_text(p)
    assert "caf\\xe9-\\xff" in text
    text.encode("utf-8")  # no lone surrogates left to break a UTF-8 terminal or JSON
    doc = json.loads(p.model_dump_json())
    assert doc["largest_directories"][0]["path"].endswith("caf\\xe9-\\xff")
    assert display_path(os.fsdecode(b"/\xc3\xa9t\xc3\xa9")) == "/été"


def test_files_deleted_during_the_scan(tmp_path: Path) -> None:
    for i in range(20):
        (tmp_path / f"keep{i}").write_bytes(b"k")
        (tmp_path / f"doomed{i}").write_bytes(b"d")

    def delete_doomed(path: str) -> None:
        if os.path.basename(path).startswith("doomed"):
            os.unlink(path)

    p = Walker(before_examine=delete_doomed).walk(tmp_path)
    assert p.problems.vanished == 20
    assert p.files == 20 and p.apparent_bytes == 20
    assert p.entries == 41  # every name listed counts, vanished or not
    assert any(e.startswith("vanished: ") and "doomed" in e for e in p.problems.examples)
    assert len(p.problems.examples) <= 20


def test_a_directory_removed_before_it_is_read(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "x").write_bytes(b"x")
    removed: list[str] = []

    def remove_the_other(path: str) -> None:
        # The first file seen in a or b removes the other one, already listed but not yet read.
        if not removed and path.endswith("/x"):
            other = "b" if path.endswith("/a/x") else "a"
            shutil.rmtree(tmp_path / other)
            removed.append(other)

    p = Walker(before_examine=remove_the_other).walk(tmp_path)
    assert removed
    assert p.problems.vanished == 1
    assert p.files == 1
    assert p.problems.examples == [f"vanished: {tmp_path / removed[0]}"]


def test_ctrl_c_returns_what_was_seen(tmp_path: Path) -> None:
    for i in range(1000):
        os.mknod(tmp_path / f"f{i}")
    calls = 0

    def interrupt_at_500(path: str) -> None:
        nonlocal calls
        calls += 1
        if calls == 500:
            raise KeyboardInterrupt

    p = Walker(before_examine=interrupt_at_500).walk(tmp_path)
    assert p.partial
    assert p.files == 499
    assert p.entries == 1 + 500
    assert p.largest_directories[0].entries == 500
    assert "PARTIAL" in render_text(p)


def test_the_root_must_be_a_readable_directory(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="No such file"):
        Walker().walk(tmp_path / "missing")
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(BadInput, match="not a directory"):
        Walker().walk(tmp_path / "file")
    os.symlink(tmp_path, tmp_path / "via-link")
    (tmp_path / "x").mkdir()
    # A symlink given as the root is followed (the user named it); below it nothing is.
    assert Walker().walk(tmp_path / "via-link").directories == 2


def in_a_child(work: Callable[[], str]) -> str:
    """What `work` returns, run in a forked child: its own privileges and its own peak RSS."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 1
        try:
            os.close(read_end)
            with os.fdopen(write_end, "w") as out:
                out.write(work())
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end) as result:
        text = result.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return text


def walk_as_nobody(top: Path) -> dict[str, Any]:
    """The walk in a forked child that dropped root: as root, permissions stop no one."""

    def walk() -> str:
        os.setgid(65534)
        os.setuid(65534)
        return Walker().walk(top).model_dump_json()

    doc: dict[str, Any] = json.loads(in_a_child(walk))
    return doc


def test_unreadable_directories_are_counted_not_fatal() -> None:
    # In /tmp, not the test run's own TMPDIR: that one is root's alone, and nobody walks this.
    top = Path(tempfile.mkdtemp(prefix="xfs-advisor-unreadable-", dir="/tmp"))
    try:
        os.chmod(top, 0o755)
        for name in ("open", "closed"):
            (top / name).mkdir()
            (top / name / "f").write_bytes(b"f")
        (top / "closed" / "inner").mkdir()
        if os.geteuid() == 0:
            os.chmod(top / "closed", 0o700)
            doc = walk_as_nobody(top)
        else:
            os.chmod(top / "closed", 0o000)
            doc = json.loads(Walker().walk(top).model_dump_json())
    finally:
        os.chmod(top / "closed", 0o700)
        shutil.rmtree(top)
    assert doc["problems"]["unreadable_directories"] == 1
    assert doc["problems"]["examples"] == [f"unreadable (Permission denied): {top}/closed"]
    assert doc["files"] == 1  # open/f; closed/f is out of sight
    assert doc["directories"] == 3  # top, open, closed (listed in top, unreadable itself)
    assert not doc["partial"]


def peak_growth_kib(path: Path) -> int:
    """How much the peak RSS of a fresh child grows while it walks `path`."""

    def walk() -> str:
        gc.collect()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        Walker(xattr_sample=100).walk(path)
        return str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)

    return int(in_a_child(walk))


def test_memory_does_not_grow_with_the_number_of_files(big_directory: Path,
                                                       tmp_path: Path) -> None:
    for i in range(1000):
        os.mknod(tmp_path / f"f{i}")
    small, large = peak_growth_kib(tmp_path), peak_growth_kib(big_directory)
    # 100 times the files: keeping even 20 bytes per file would add 2 MiB.
    assert large - small < 1024, (small, large)


def test_xattr_sizes_as_xfs_stores_them() -> None:
    assert stored_xattr_size("user.comment", 10) == (7, 10)
    assert stored_xattr_size("security.selinux", 30) == (7, 30)
    assert stored_xattr_size("system.posix_acl_access", 4 + 8 * 5) == (12, 4 + 12 * 5)
