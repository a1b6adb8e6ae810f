"""advisor.system.spill: lists whose chunks live in an unlinked temporary file read like the
lists they replace, whatever the order of reads and writes; nothing is left on disk; without a
usable folder everything stays in memory."""

from __future__ import annotations

import bisect
import errno
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.system.spill import Chunks, SpillFile, Store, sorted_strings

# Chunks of 4 items, 2 of them in memory: a few dozen items spill most of the time.
_TINY: dict[str, Any] = {"bits": 2, "keep": 2}

_OPS = st.lists(st.tuples(st.sampled_from(["get", "set", "append", "slice"]),
                          st.integers(0, 200), st.integers(-(2 ** 31), 2 ** 31 - 1)),
                max_size=300)


@settings(max_examples=150, deadline=None)
@given(start=st.lists(st.integers(-(2 ** 31), 2 ** 31 - 1), max_size=80), ops=_OPS)
def test_an_int_list_reads_as_the_list_it_replaces(start: list[int],
                                                    ops: list[tuple[str, int, int]]) -> None:
    store = Store(**_TINY)
    chunks, ref = store.chunks("i", start), list(start)
    for op, at, value in ops:
        if op == "append":
            chunks.append(value)
            ref.append(value)
        elif not ref:
            continue
        elif op == "get":
            assert chunks[at % len(ref)] == ref[at % len(ref)]
            assert chunks[-1 - at % len(ref)] == ref[-1 - at % len(ref)]
        elif op == "set":
            chunks[at % len(ref)] = value
            ref[at % len(ref)] = value
        else:
            lo, hi = sorted((at % (len(ref) + 1), value % (len(ref) + 1)))
            assert chunks[lo:hi] == ref[lo:hi]
    assert list(chunks) == ref and len(chunks) == len(ref)


def test_most_chunks_are_in_the_file_and_changes_survive_being_written_and_read() -> None:
    store = Store(**_TINY)
    strings = store.chunks("s", (f"dev{i}" for i in range(100)))
    objects = store.chunks("s", ({"n": i} for i in range(100)))
    assert strings.spilled() >= 20 and objects.spilled() >= 20  # 25 chunks, 2 kept
    for i in range(0, 100, 7):
        strings[i] = f"new{i}"
        objects[i] = ("changed", i)
    for i in range(100):  # every chunk read back in turn, the changed ones written again
        assert strings[i] == (f"new{i}" if i % 7 == 0 else f"dev{i}")
        assert objects[i] == (("changed", i) if i % 7 == 0 else {"n": i})


def test_an_index_past_the_end_is_an_index_error() -> None:
    chunks = Store(**_TINY).chunks("B", range(9))
    for bad in (9, 100, -10):
        try:
            chunks[bad]
        except IndexError:
            continue
        raise AssertionError(f"{bad} was read")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet="ab1-", max_size=5), max_size=120),
       st.lists(st.text(alphabet="ab1-", max_size=5), max_size=10))
def test_sorted_strings_sorts_as_sorted_and_bisects_as_bisect(names: list[str],
                                                              probes: list[str]) -> None:
    found = sorted_strings(iter(names), Store(**_TINY))
    ref = sorted(names)
    assert list(found) == ref
    assert isinstance(found, Chunks) == (len(names) > 8)  # a plain list up to the cap
    for x in probes + names:
        at = found.bisect_left(x) if isinstance(found, Chunks) else bisect.bisect_left(found, x)
        assert at == bisect.bisect_left(ref, x)


def test_a_sparse_map_reads_as_a_dict() -> None:
    store = Store(**_TINY)
    sparse: Any = store.sparse()
    ref: dict[int, Any] = {}
    for i, value in ((40, "a"), (3, None), (17, ["x"]), (40, "b"), (5, ("t", 1))):
        sparse[i] = value
        ref[i] = value
    assert sparse.pop(17) == ["x"] and ref.pop(17) == ["x"]
    assert sorted(sparse) == sorted(ref)
    for i in range(45):
        assert (i in sparse) == (i in ref) and sparse.get(i, "none") == ref.get(i, "none")
    assert sparse.pop(17, "gone") == "gone"


def test_the_file_is_unlinked_and_nothing_is_left(tmp_path: Path) -> None:
    store = Store(**_TINY, folder=str(tmp_path))
    chunks = store.chunks("q", range(1000))
    assert store.spill.size > 0 and chunks.spilled() > 100
    assert list(tmp_path.iterdir()) == []
    assert chunks[999] == 999 and chunks[0] == 0


def test_without_a_usable_folder_everything_stays_in_memory(tmp_path: Path) -> None:
    spill = SpillFile(str(tmp_path / "missing"))
    chunks = Chunks("I", spill, range(1000), bits=2, keep=2)
    names = sorted_strings((f"n{i}" for i in reversed(range(50))), Store(
        **_TINY, folder=str(tmp_path / "missing")))
    assert not spill.usable() and spill.size == 0 and chunks.spilled() == 0
    assert list(chunks) == list(range(1000))
    assert list(names) == sorted(f"n{i}" for i in range(50))


def test_a_forked_child_reading_the_file_does_not_move_the_parents_reads() -> None:
    """pread and pwrite only: a child that reads the same file (a fork shares the offset)
    changes nothing the parent reads."""
    store = Store(**_TINY)
    chunks = store.chunks("i", range(64))
    pid = os.fork()
    if pid == 0:
        code = 0 if sum(chunks) == sum(range(64)) else 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert list(chunks) == list(range(64))


def test_a_forked_child_never_writes_where_the_parent_does() -> None:
    """A child forked with chunks not yet in the file (the listing a scan's read child cuts its
    pieces from, the graph its render child reads) keeps them in its memory: its appends would
    land on what the parent writes after the fork."""
    store = Store(**_TINY)
    shared = store.chunks("i", range(40))  # the last chunks in memory only
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_w)
        os.read(ready_r, 1)  # the parent has written after the fork
        shared[3] = -3  # a changed chunk, then every chunk read in turn
        code = 0 if list(shared) == [-3 if i == 3 else i for i in range(40)] else 1
        os._exit(code)
    os.close(ready_r)
    later = store.chunks("i", range(1000, 1100))  # the parent's writes after the fork
    assert later.spilled() > 0
    os.write(ready_w, b"x")
    os.close(ready_w)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert list(later) == list(range(1000, 1100)) and list(shared) == list(range(40))


def _disk_fills_after(monkeypatch: pytest.MonkeyPatch, writes: int) -> None:
    """pwrite fails with ENOSPC after `writes` calls, as on a full disk."""
    real, done = os.pwrite, [0]

    def pwrite(fd: int, data: Any, at: int) -> int:
        done[0] += 1
        if done[0] > writes:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data, at)

    monkeypatch.setattr(os, "pwrite", pwrite)


@pytest.mark.parametrize("writes", [0, 3, 10])
def test_a_full_disk_keeps_the_rest_in_memory(monkeypatch: pytest.MonkeyPatch,
                                              writes: int) -> None:
    """Once the file takes no more, what is in it is read from there, the rest stays in memory:
    every list reads the same, and nothing more is written."""
    store = Store(**_TINY)
    assert store.spill.usable()
    _disk_fills_after(monkeypatch, writes)
    ints = store.chunks("i", range(100))
    ints[1] = -1  # a chunk in the file changed, perhaps written again
    names = sorted_strings((f"n{i:03}" for i in reversed(range(60))), store)
    assert not store.spill.usable()
    assert list(ints) == [-1 if i == 1 else i for i in range(100)]
    assert list(names) == [f"n{i:03}" for i in range(60)]
    assert [ints[i] for i in (99, 0, 50, 1)] == [99, 0, 50, -1]
