"""What a scan keeps of each piece of devices between the read and the writing, and what the
read's child sends of it: in a temporary file (advisor.system.spill.SpillFile), read back equal
to what was put there; the same inventory when no file can be made; and a child whose account
of that file is garbled never changes the answer."""

from __future__ import annotations

import array
import marshal
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

import pytest

from advisor.inspect import devices, parallel
from advisor.inspect.specs import make_fact
from advisor.system.spill import SpillFile
from advisor.system.sysroot import SysRoot
from tests.conftest import memory_folder
from tests.inspect.test_packed import _rendered
from tests.inspect.test_parallel import (
    CLASSES,
    NAMES,
    _generator,
    _pid_reader,
    _read,
    _two_cpus,
)


@pytest.fixture(scope="module")
def san() -> Iterator[Path]:
    """128 LUNs over 4 paths: 640 entries, read by two processes."""
    with memory_folder("san") as root:
        assert _generator().generate(root, 128, 4) == 640 > parallel.MIN_ENTRIES
        yield root


@pytest.fixture(scope="module")
def whole(san: Path) -> bytes:
    """`devices --json`'s devices of the SAN host, a line each, as a scan that spills makes them."""
    return _rendered(san)


GROUPS = [(b"header", b"", b"ends" * 300), (b"\x00" * 5000, b"x", b"y"), (b"", b"", b"")]


@pytest.mark.parametrize("where", ["file", "memory"])
def test_a_piece_put_away_is_got_back_equal(tmp_path: Path, where: str) -> None:
    """Each group of bytes comes back as it was put, in any order and as often as asked, from
    the file (only its place and sizes held) or, when none can be made, from memory; take gives
    it once more and lets it go."""
    folder = tmp_path if where == "file" else tmp_path / "no-such-folder"
    shelf = parallel.Shelf(SpillFile(str(folder)), 3)
    assert shelf.writing is (where == "file")
    numbers = [shelf.put(g) for g in GROUPS * (parallel.RECENT + 1)]
    assert numbers == list(range(len(GROUPS) * (parallel.RECENT + 1)))
    for k in reversed(numbers):  # more than RECENT: read back from the file again
        assert shelf.get(k) == GROUPS[k % len(GROUPS)]
        assert all(type(part) is bytes for part in shelf.get(k))
    assert shelf.take(4) == GROUPS[1]
    if where == "file":
        assert shelf.spill is not None and shelf.spill.size == sum(
            len(b"".join(g)) for g in GROUPS) * (parallel.RECENT + 1)
        assert shelf.get(4) == GROUPS[1]  # still in the file
    else:
        with pytest.raises(AssertionError):  # in memory: gone
            shelf.get(4)


def test_a_file_that_stops_taking_pieces_leaves_the_rest_in_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk (ENOSPC) while the scan writes: what is in the file is read from there, the
    rest kept in memory, every group the same."""
    import errno

    spill = SpillFile(str(tmp_path))
    shelf = parallel.Shelf(spill, 3)
    first = shelf.put(GROUPS[0])
    real_put = spill.put

    def full(data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(spill, "put", full)
    second = shelf.put(GROUPS[1])
    monkeypatch.setattr(spill, "put", real_put)
    third = shelf.put(GROUPS[2])  # not tried again: in memory too
    assert not shelf.writing and spill.size == len(b"".join(GROUPS[0]))
    assert [shelf.get(k) for k in (first, second, third)] == GROUPS[:3]


def test_a_packed_piece_spilled_unpacks_to_the_devices_read(san: Path, tmp_path: Path) -> None:
    """A scan's pieces, packed, written to its file and read back: every device the same."""
    root = SysRoot.open(san)
    shelf = parallel.Shelf(SpillFile(str(tmp_path)), 3)
    pieces = parallel.cut(root.listdir("sys/block"), 4096)
    hosts: dict[str, str] = {}
    read = [[f for name in piece for f in devices.read_device(root, name, None, hosts)]
            for piece in pieces]
    numbers = [shelf.put(parallel.pack(piece, devices.HELD_CLASSES)) for piece in read]
    for k, piece in zip(numbers, read, strict=True):
        got = parallel.unpack(shelf.get(k), devices.HELD_CLASSES,  # type: ignore[arg-type]
                              devices.make_fact)
        assert [f.fields() for f in got] == [f.fields() for f in piece]


def test_a_scan_spills_its_pieces_and_without_a_file_gives_the_same_devices(
        san: Path, whole: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan's pieces are in its file, none held in memory; pointed at a folder that takes
    no file (neither the scan's nor the child's), it keeps them in memory, and every device is
    the same."""
    made: list[devices._Scan] = []
    real_init = devices._Scan.__init__

    def recorded(scan: devices._Scan, *args: Any, **kwargs: Any) -> None:
        real_init(scan, *args, **kwargs)
        made.append(scan)

    monkeypatch.setattr(devices._Scan, "__init__", recorded)
    monkeypatch.setattr(parallel, "SPILL_FOLDER", str(tmp_path))
    assert _rendered(san) == whole
    assert made[-1].facts.writing and not made[-1].facts._kept
    assert len(made[-1].facts) == len(made[-1].pieces) > 1
    monkeypatch.setattr(parallel, "SPILL_FOLDER", str(tmp_path / "no-such-folder"))
    assert _rendered(san) == whole
    assert not made[-1].facts.writing and len(made[-1].facts._kept) == len(made[-1].pieces)


def _garbling(how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The child's account of its file, garbled `how` from its second piece on."""
    real = parallel._read_share

    def garbled(*args: Any) -> Any:
        payload = real(*args)
        assert payload[0] == "spilled"
        records = array.array("q")
        records.frombytes(payload[1])
        second = parallel._RECORD  # where the second piece's record starts
        assert len(records) >= 2 * second, "the child read one piece only"
        if how == "offset":
            records[second + 1] = 0  # where its first piece is
        elif how == "number":
            records[second] = 10**6
        elif how == "crc":
            records[second + 6] ^= 1
        elif how == "size":  # past the file's end: nothing of the child's is taken
            records[second + 3] = 1 << 40
        return (payload[0], records.tobytes())

    monkeypatch.setattr(parallel, "_read_share", garbled)


@pytest.mark.parametrize("how", ["offset", "number", "crc", "size"])
def test_a_child_s_garbled_account_of_its_file_leaves_the_rest_to_the_parent(
        forks: list[int], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, how: str) -> None:
    """The child's pieces are taken up to the first whose place, number or bytes are not what it
    wrote (all of them, when its account does not end where its file does), and this process
    reads the others itself: the same devices, in order."""
    _two_cpus()
    monkeypatch.setattr(parallel, "SPILL_FOLDER", str(tmp_path))
    _garbling(how, monkeypatch)
    out = _read(_pid_reader(delay=0.002))
    assert [d["name"] for d in out] == NAMES
    assert all(d["size"].value == 6 for d in out)
    by_child = sum(d["pid"] == forks[0] for d in out)
    assert {d["pid"] for d in out} <= {os.getpid(), forks[0]}
    assert by_child == 0 if how == "size" else 0 < by_child <= parallel.CHUNK  # its first piece


def test_a_child_without_a_file_sends_its_pieces_whole(
        forks: list[int], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No file for the child (the folder takes none): it sends its pieces themselves, as it did
    before it had one, and they are taken."""
    _two_cpus()
    monkeypatch.setattr(parallel, "SPILL_FOLDER", str(tmp_path / "no-such-folder"))
    sent: list[str] = []
    real = parallel._received

    def seen(raw: list[bytes], spill: SpillFile | None, count: int) -> Any:
        sent.append(marshal.loads(raw[0])[0])
        return real(raw, spill, count)

    monkeypatch.setattr(parallel, "_received", seen)
    out = _read(_pid_reader(delay=0.002))
    assert [d["name"] for d in out] == NAMES and sent == ["ok"]
    assert {d["pid"] for d in out} == {os.getpid(), forks[0]}


def test_a_scan_with_a_garbled_child_gives_the_same_devices(
        san: Path, whole: bytes, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _two_cpus()
    monkeypatch.setattr(parallel, "SPILL_FOLDER", str(tmp_path))
    monkeypatch.setattr(parallel, "CHUNK", 16)  # the child reads more than one piece
    _garbling("offset", monkeypatch)
    assert _rendered(san) == whole


class _Names(Sequence[str]):
    """A listing that is not a list, which records the largest slice taken of it and refuses
    to be read an item at a time (as iterating it whole would)."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.largest = 0

    def __len__(self) -> int:
        return len(self.names)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        assert isinstance(i, slice), "an item at a time"
        got = self.names[i]
        self.largest = max(self.largest, len(got))
        return got


@pytest.mark.parametrize("count", [100, 700])
def test_pieces_are_sliced_from_any_sequence_when_taken(count: int) -> None:
    """read_pieces takes any sequence of names, alone (100) or on two CPUs (700), and slices one
    piece of it at a time: the same devices as from a list."""
    names = _Names(NAMES[:count])
    pieces = parallel.read_pieces(SysRoot(Path("/")), names, _pid_reader(), CLASSES, make_fact,
                                  lambda devices, packed, summaries: devices)
    assert [f["name"] for piece in pieces for f in piece] == NAMES[:count]
    assert 0 < names.largest <= parallel.CHUNK
    cut = parallel.cut(names, 4096)
    assert [n for piece in cut for n in piece] == NAMES[:count]
    assert len(cut) == -(-count // parallel.CHUNK) and cut[-1] == cut[len(cut) - 1]
