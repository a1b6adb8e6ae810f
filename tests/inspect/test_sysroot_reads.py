"""SysRoot.read_many (the scan's batched reader) against plain files: same text as read()."""

from __future__ import annotations

from pathlib import Path

from advisor.system.sysroot import SysRoot


def test_read_many_matches_read_and_records(tmp_path: Path) -> None:
    (tmp_path / "sys" / "block" / "sda" / "queue").mkdir(parents=True)
    (tmp_path / "sys" / "block" / "sda" / "size").write_text("2048\n")
    (tmp_path / "sys" / "block" / "sda" / "queue" / "rotational").write_text("1\n")
    big = "y" * 200_000  # longer than one 64 KiB read
    (tmp_path / "sys" / "block" / "sda" / "big").write_text(big)
    root = SysRoot(tmp_path, recorded=set())
    names = ["size", "queue/rotational", "missing", "big"]
    assert root.read_many("sys/block/sda", names) == ["2048", "1", None, big]
    assert [root.read(f"sys/block/sda/{n}") for n in names] == ["2048", "1", None, big]
    assert root.recorded == {f"sys/block/sda/{n}" for n in names}
    assert root.read_many("sys/block/sdz", ["size", "ro"]) == [None, None]


def test_only_regular_files_are_read(tmp_path: Path) -> None:
    """A captured tree may hold anything: a FIFO, a device node, a folder where an attribute
    should be read as missing (never block, never read a device), an empty file as empty."""
    import os

    folder = tmp_path / "sys" / "block" / "sda"
    folder.mkdir(parents=True)
    (folder / "size").write_text("2048\n")
    (folder / "empty").write_text("")
    os.mkfifo(folder / "fifo")
    (folder / "zero").symlink_to("/dev/zero")
    (folder / "null").symlink_to("/dev/null")
    (folder / "folder").mkdir()
    root = SysRoot(tmp_path)
    names = ["size", "empty", "fifo", "zero", "null", "folder", "missing"]
    assert root.read_many("sys/block/sda", names) == ["2048", "", None, None, None, None, None]
    assert [root.read(f"sys/block/sda/{n}") for n in names] == [
        "2048", "", None, None, None, None, None]


def test_only_the_root_itself_is_the_live_system(tmp_path: Path) -> None:
    (tmp_path / "capture" / "sys" / "block").mkdir(parents=True)
    (tmp_path / "to-slash").symlink_to("/")
    (tmp_path / "to-capture").symlink_to(tmp_path / "capture")
    assert SysRoot.open("/").live and SysRoot.open(None).live
    assert SysRoot.open(str(tmp_path / "to-slash")).live
    assert SysRoot.open(str(tmp_path / "to-slash" / "sys" / "..")).live
    assert not SysRoot.open(str(tmp_path / "capture")).live
    assert not SysRoot.open(str(tmp_path / "to-capture")).live


def test_iter_names_gives_listdir_entries_one_at_a_time(tmp_path: Path) -> None:
    block = tmp_path / "sys" / "block"
    block.mkdir(parents=True)
    for name in ("sdb", "sda", "dm-0", "loop7"):
        (block / name).mkdir()
    (block / "gone").symlink_to("nowhere")  # a dangling link is an entry too
    root = SysRoot(tmp_path, recorded=set())
    scanned = root.iter_names("sys/block")
    first = next(scanned)  # one at a time: the rest are still to come
    assert sorted([first, *scanned]) == root.listdir("sys/block")
    assert sorted(root.iter_names("sys/block")) == root.listdir("sys/block") == [
        "dm-0", "gone", "loop7", "sda", "sdb"]
    assert list(root.iter_names("sys/nothing")) == [] == root.listdir("sys/nothing")
    assert list(root.iter_names("sys/block/sda/size")) == []  # not a folder
    assert root.recorded == {"sys/block", "sys/nothing", "sys/block/sda/size"}  # as listdir


def test_has_entry_is_membership_of_the_listing(tmp_path: Path) -> None:
    block = tmp_path / "sys" / "block"
    (block / "sda" / "sda1").mkdir(parents=True)
    (block / "gone").symlink_to("nowhere")
    (tmp_path / "sys" / "elsewhere").mkdir()
    root = SysRoot(tmp_path, recorded=set())
    names = ["sda", "gone", "sdb", "", ".", "..", "sda/sda1", "../elsewhere", "sd\0a", "sd"]
    assert [root.has_entry("sys/block", n) for n in names] == [
        n in root.listdir("sys/block") for n in names] == [
        True, True, False, False, False, False, False, False, False, False]
    assert not root.has_entry("sys/nothing", "sda")
    assert root.recorded == {"sys/block", "sys/nothing"}  # the folder asked of, as listdir
