"""Where a scan keeps what it holds per device beyond a few thousand devices: an unlinked
temporary file on disk, read back a chunk at a time, so that a host with 200,000 block devices
is scanned in the memory of one with 10,000.

SpillFile is the file: made on first use, in TMPDIR when it is set and /var/tmp otherwise (a
disk, where /tmp may be memory: tmpfs), unlinked at once, so nothing is left behind whatever
ends the process. Chunks is a list (of ints of one array type, or of strings and other values
marshal carries) cut into chunks of CHUNK items, of which the KEEP used last stay in memory and the
others are in the file: a list of fewer than CHUNK * KEEP items never touches the disk. When no
temporary folder takes a file, everything stays in memory, as before: a scan never fails for
want of a place to spill.
"""

from __future__ import annotations

import array
import bisect
import heapq
import marshal
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final, overload

#: Items per chunk, as a power of two.
BITS: Final = 11
CHUNK: Final = 1 << BITS
#: Chunks of each list held in memory (those used last).
KEEP: Final = 4

#: Where the file goes when TMPDIR does not say (a disk on Debian, where /tmp may be tmpfs).
DEFAULT_FOLDER: Final = "/var/tmp"


class SpillFile:
    """An unlinked temporary file that chunks are appended to and read back from (pread and
    pwrite: the file's offset is never used, so a forked child may hold its own). `folder`:
    where to make it (None: TMPDIR, else /var/tmp, else the temporary folder Python finds)."""

    def __init__(self, folder: str | None = None) -> None:
        self.folder = folder
        #: The process that writes it: a forked child only reads (its appends would land where
        #: the parent's next ones do).
        self._pid = os.getpid()
        self._fd: int | None = None
        self._failed = False
        #: A write failed (a full disk): nothing more is written, what is there is read.
        self._full = False
        self.size = 0

    def usable(self) -> bool:
        """Whether a chunk can go to the file from this process (made now when it was not):
        False when no folder takes one, and everything stays in memory, or in a forked child
        (it reads what is there; what it would write stays in its memory), or once a write has
        failed (a full disk: the same)."""
        if os.getpid() != self._pid or self._full:
            return False
        if self._fd is None and not self._failed:
            self._fd = _unlinked_file(self.folder)
            self._failed = self._fd is None
        return self._fd is not None

    def put(self, data: bytes) -> int:
        """Append `data`; its offset in the file."""
        at = self.size
        self.put_at(at, data)
        self.size += len(data)
        return at

    def put_at(self, at: int, data: bytes) -> None:
        """`data` written at offset `at` (over what was there). OSError when it cannot be (a
        full disk), after which the file is not usable() to write: the caller keeps `data`."""
        assert self._fd is not None, "put before usable()"
        view = memoryview(data)
        try:
            while view:
                view = view[os.pwrite(self._fd, view, at + len(data) - len(view)):]
        except OSError:
            self._full = True
            raise

    def get(self, at: int, size: int) -> bytes:
        """The `size` bytes at offset `at`."""
        assert self._fd is not None
        data = os.pread(self._fd, size, at)
        while len(data) < size:  # a short read: rare, but pread may give part
            more = os.pread(self._fd, size - len(data), at + len(data))
            if not more:
                raise OSError(f"the scan's temporary file ended at {at + len(data)}")
            data += more
        return data

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()


def _unlinked_file(folder: str | None) -> int | None:
    """A new file's descriptor, already unlinked (O_TMPFILE where the file system has it);
    None when no candidate folder takes one."""
    import tempfile  # here: only a large scan spills

    candidates = [folder] if folder is not None else \
        [os.environ.get("TMPDIR") or DEFAULT_FOLDER, tempfile.gettempdir()]
    for where in candidates:
        if not where:
            continue
        try:
            return os.open(where, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
        except (OSError, AttributeError):
            pass
        try:
            fd, path = tempfile.mkstemp(prefix=".xfs-advisor-scan-", dir=where)
        except OSError:
            continue
        os.unlink(path)
        return fd
    return None


class Chunks(Sequence[Any]):
    """A list of `kind` values: an array typecode ("b", "B", "H", "i", "I", "q") or "s"
    (strings, or any value marshal carries: tuples, lists, dicts, ints, None), whose chunks
    past the KEEP used last are in `spill` (read back when used, written again when changed).
    Indexing, slices, len, iteration, append, extend and item assignment, as a list or an
    array."""

    __slots__ = ("_at", "_bits", "_dirty", "_firsts", "_hot", "_hot_k", "_keep", "_len", "_mask",
                 "_mem", "_room", "_size", "_strings", "kind", "spill")

    def __init__(self, kind: str, spill: SpillFile, items: Iterable[Any] = (), *,
                 bits: int = BITS, keep: int = KEEP) -> None:
        self.kind = kind
        self.spill = spill
        self._bits, self._mask, self._keep = bits, (1 << bits) - 1, keep
        self._len = 0
        #: Each chunk's place in the file: its offset (-1: never written), size and room (the
        #: most it ever took there), in arrays: a few bytes a chunk of thousands of items.
        self._at = array.array("q")
        self._size = array.array("I")
        self._room = array.array("I")
        #: The chunks in memory, by number, oldest use first.
        self._mem: dict[int, Any] = {}
        self._dirty: set[int] = set()
        #: Each chunk's first string (bisect_left looks in one chunk only).
        self._firsts: list[Any] = []
        self._strings = kind == "s"
        self._hot: Any = None
        self._hot_k = -1
        self.extend(items)

    def _new(self) -> Any:
        return [] if self._strings else array.array(self.kind)

    # ---- chunks ----

    def _chunk(self, k: int) -> Any:
        """Chunk k, read back when it is not in memory."""
        if k == self._hot_k:
            return self._hot
        chunk = self._mem.get(k)
        if chunk is None:
            if not 0 <= k < len(self._at):
                raise IndexError("list index out of range")
            chunk = self._load(k)
        self._hot, self._hot_k = chunk, k
        return chunk

    def _load(self, k: int) -> Any:
        assert self._at[k] >= 0, "a chunk neither in memory nor in the file"
        data = self.spill.get(self._at[k], self._size[k])
        if self._strings:
            chunk: Any = marshal.loads(data)
        else:
            chunk = array.array(self.kind)
            chunk.frombytes(data)
        self._mem[k] = chunk
        self._evict(k)
        return chunk

    def _evict(self, wanted: int) -> None:
        """Chunks past KEEP out of memory, oldest use first (not `wanted`, the one in use or
        the last, still growing), written first when new or changed; those that cannot be
        written (no file, or a forked child) stay."""
        if len(self._mem) <= self._keep:
            return
        last = len(self._at) - 1
        writable: bool | None = None
        for k in list(self._mem):
            if len(self._mem) <= self._keep:
                return
            if k in (last, wanted, self._hot_k):
                continue
            if self._at[k] < 0 or k in self._dirty:
                if writable is None:
                    writable = self.spill.usable()
                if not writable:
                    continue
                try:
                    self._write(k, self._dump(self._mem[k]))
                except OSError:  # a full disk: this chunk, and any not written yet, stay
                    writable = False
                    continue
                self._dirty.discard(k)
            del self._mem[k]

    def _write(self, k: int, data: bytes) -> None:
        """Chunk k's bytes into the file: over its last copy when they fit in its room (a
        changed array chunk always does), appended otherwise."""
        if self._at[k] >= 0 and len(data) <= self._room[k]:
            self.spill.put_at(self._at[k], data)
        else:
            self._at[k] = self.spill.put(data)
            self._room[k] = len(data)
        self._size[k] = len(data)

    def _dump(self, chunk: Any) -> bytes:
        if self._strings:
            return marshal.dumps(chunk)
        data: bytes = chunk.tobytes()
        return data

    def spilled(self) -> int:
        """How many chunks are in the file only (for tests and the benchmark)."""
        return sum(1 for k in range(len(self._at)) if k not in self._mem)

    # ---- a list ----

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, i: int) -> Any: ...

    @overload
    def __getitem__(self, i: slice) -> list[Any]: ...

    def __getitem__(self, i: int | slice) -> Any:
        if type(i) is int:
            if i >> self._bits == self._hot_k and i >= 0:  # the chunk read last: most reads
                return self._hot[i & self._mask]
            if i < 0:
                i += self._len
                if i < 0:
                    raise IndexError("list index out of range")
            return self._chunk(i >> self._bits)[i & self._mask]
        assert isinstance(i, slice)
        start, stop, step = i.indices(self._len)
        if step != 1:
            return [self[j] for j in range(start, stop, step)]
        out: list[Any] = []
        bits, mask = self._bits, self._mask
        while start < stop:
            k = start >> bits
            end = min(stop, (k + 1) << bits)
            out.extend(self._chunk(k)[start & mask:(end - 1 & mask) + 1])
            start = end
        return out

    def __setitem__(self, i: int, value: Any) -> None:
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError("list assignment index out of range")
        k = i >> self._bits
        self._chunk(k)[i & self._mask] = value
        if i & self._mask == 0 and self._strings:
            self._firsts[k] = value
        if self._at[k] >= 0:
            self._dirty.add(k)

    def __iter__(self) -> Iterator[Any]:
        for k in range(len(self._at)):
            yield from self._chunk(k)[:]

    def bisect_left(self, x: Any) -> int:
        """bisect.bisect_left of a sorted list of strings, reading one chunk (the one `x` would
        be in)."""
        k = bisect.bisect_left(self._firsts, x) - 1  # the last chunk starting below x
        if k < 0:
            return 0
        return (k << self._bits) + bisect.bisect_left(self._chunk(k), x)

    def append(self, value: Any) -> None:
        if self._len & self._mask == 0:
            self._start_chunk()
            if self._strings:
                self._firsts.append(value)
        self._chunk(len(self._at) - 1).append(value)
        self._len += 1

    def _start_chunk(self) -> None:
        self._at.append(-1)
        self._size.append(0)
        self._room.append(0)
        k = len(self._at) - 1
        self._mem[k] = self._new()
        self._evict(k)

    def extend(self, values: Iterable[Any]) -> None:
        for value in values:
            self.append(value)


def _boxed(value: Any) -> Any:
    return (value,)


def _unboxed(box: Any) -> Any:
    return box[0]


class Sparse:
    """A map of device numbers (ints from 0) to values, for a field few devices have, kept as a
    Chunks of every device up to the last one that has it (None for the others): read like the
    dict it replaces (get, in, [], pop, iteration over the numbers that have a value). Values
    are kept as encode(value), which marshal carries and is never None (default: the value in
    a 1-tuple), and read back as decode(that): equal to what was put, not the same object."""

    __slots__ = ("_decode", "_encode", "_values")

    def __init__(self, store: Store, encode: Callable[[Any], Any] = _boxed,
                 decode: Callable[[Any], Any] = _unboxed) -> None:
        self._values = store.chunks("s")
        self._encode, self._decode = encode, decode

    def get(self, i: int, default: Any = None) -> Any:
        if i >= len(self._values):
            return default
        value = self._values[i]
        return default if value is None else self._decode(value)

    def __contains__(self, i: object) -> bool:
        return type(i) is int and i < len(self._values) and self._values[i] is not None

    def __getitem__(self, i: int) -> Any:
        if i not in self:
            raise KeyError(i)
        return self._decode(self._values[i])

    def __setitem__(self, i: int, value: Any) -> None:
        values = self._values
        while len(values) <= i:
            values.append(None)
        values[i] = self._encode(value)

    def pop(self, i: int, default: Any = None) -> Any:
        if i not in self:
            return default
        value = self._decode(self._values[i])
        self._values[i] = None
        return value

    def __iter__(self) -> Iterator[int]:
        return (i for i, value in enumerate(self._values) if value is not None)


class Store:
    """The lists of one scan and the file they spill to: `bits` and `keep` (chunks of 2**bits
    items, `keep` of each list in memory) are small in tests, so that a few devices spill."""

    def __init__(self, *, bits: int = BITS, keep: int = KEEP, folder: str | None = None) -> None:
        self.bits, self.keep = bits, keep
        #: Items a list of it holds in memory at most: a list no longer than this may as well
        #: be a plain one (sorted_strings gives one).
        self.cap = keep << bits
        self.spill = SpillFile(folder)

    def chunks(self, kind: str, items: Iterable[Any] = ()) -> Chunks:
        return Chunks(kind, self.spill, items, bits=self.bits, keep=self.keep)

    def sparse(self, encode: Callable[[Any], Any] = _boxed,
               decode: Callable[[Any], Any] = _unboxed) -> Sparse:
        return Sparse(self, encode, decode)


#: Strings a block of a sorted run holds (sorted_strings reads one block of each run at a time).
_RUN_BLOCK: Final = 256


def sorted_strings(items: Iterable[str], store: Store) -> Sequence[str]:
    """`items` sorted (as sorted() does): a list when there are no more than the store's cap,
    else a Chunks of strings, never all held at once: past the cap, each chunk's worth is sorted
    and written to the file as a run of small blocks, and the runs are merged a block of each
    at a time. Without a file (or when it stops taking runs: a full disk), a list sorted in
    memory."""
    pending: list[str] = []
    runs: list[list[tuple[int, int]]] = []
    size = 1 << store.bits
    items = iter(items)
    for item in items:
        pending.append(item)
        if len(pending) > (size if runs else store.cap) and store.spill.usable():
            if not _add_run(runs, pending, store.spill):
                break
            pending = []
    else:
        if not runs:
            return sorted(pending)
        if not pending or _add_run(runs, pending, store.spill):
            return store.chunks("s", _merged(runs, store.spill))
    return sorted([*_merged(runs, store.spill), *pending, *items])


def _add_run(runs: list[list[tuple[int, int]]], pending: list[str], spill: SpillFile) -> bool:
    """`pending`, sorted, written as the next run; False when the file does not take it."""
    try:
        runs.append(_write_run(sorted(pending), spill))
    except OSError:
        return False
    return True


def _merged(runs: list[list[tuple[int, int]]], spill: SpillFile) -> Iterator[str]:
    return heapq.merge(*(_read_run(run, spill) for run in runs))


def _write_run(run: list[str], spill: SpillFile) -> list[tuple[int, int]]:
    blocks = []
    for start in range(0, len(run), _RUN_BLOCK):
        data = marshal.dumps(run[start:start + _RUN_BLOCK])
        blocks.append((spill.put(data), len(data)))
    return blocks


def _read_run(blocks: list[tuple[int, int]], spill: SpillFile) -> Iterator[str]:
    for at, size in blocks:
        yield from marshal.loads(spill.get(at, size))
