"""Reading a large host's /sys/block on two CPUs: this process and a forked child take pieces of
the entries from a shared queue (a pipe) until none is left; the child writes each piece it
reads packed (pack: what a scan keeps of a device until it is made) to a temporary file made
before the fork (advisor.system.spill.SpillFile), and sends over another pipe only where each
one is, read back here one piece at a time (with no such file, the pieces themselves).
Making and rendering the devices once read (in_order) is shared the same way, with a second
child: it sends each piece rendered, and this process gives the pieces in order.

Why: a SAN host has thousands of block devices and ~12-25 sysfs attributes each; the scan is
system calls and small Python work in equal parts, and threads only fight over the GIL (two
threads took twice as long as one). A child process halves the reading; its results cross the
pipe with marshal (facts as plain tuples), which costs a tenth of what it saves.

When it is not used: few devices (a fork costs more than it saves), one usable CPU, a recording
SysRoot (`capture` must see every path read), or other threads running (the TUI: forking a
threaded process can copy a lock some other thread holds). Anything going wrong on the child's
side other than a vanished device (which is an answer: the scan stops with DeviceProblem, as it
does when reading alone) makes this process read that half itself, so the result never depends
on the child. Ctrl-C or any exception here kills and reaps the child before it propagates.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import itertools
import marshal
import os
import signal
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence, Sized
from typing import Any, BinaryIO, Final, TypeVar, overload

from advisor.errors import DeviceProblem
from advisor.inspect.specs import HELD_CLASSES, Held, Layout, Reading, fact_tuple, layout_of
from advisor.models.device import Fact, MdInfo
from advisor.system.spill import SpillFile
from advisor.system.sysroot import SysRoot

#: Below this many /sys/block entries one process reads them all: forking and merging cost
#: ~10 ms, which a few hundred devices do not repay.
MIN_ENTRIES = 512

ReadOne = Callable[[str], list[dict[str, Any]]]
T = TypeVar("T")


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def worth_forking(root: SysRoot, names: Sized) -> bool:
    return (len(names) >= MIN_ENTRIES and usable_cpus() >= 2 and root.recorded is None
            and threading.active_count() == 1 and hasattr(os, "fork"))


#: /sys/block entries per piece of work: small enough that neither process waits long for the
#: other at the end, large enough that taking a piece (a 2-byte pipe read) costs nothing.
CHUNK = 64


def cut(names: Sequence[str], capacity: int) -> Pieces[str]:
    """`names` in pieces of CHUNK or more, few enough that every piece's 2-byte number fits in
    a pipe of `capacity` bytes at once (written before the fork, with no reader yet: a pipe is
    64 KiB, but one page once its user holds more pipe pages than fs.pipe-user-pages-soft)."""
    return _cut(names, CHUNK, capacity)


#: Where the scan's temporary files go (advisor.system.spill.SpillFile's `folder`: None is
#: TMPDIR, else /var/tmp). A folder that takes no file keeps everything in memory, as on a host
#: without one (what the tests of that case point it at).
SPILL_FOLDER: str | None = None


def read_pieces(root: SysRoot, names: Sequence[str], read_one: ReadOne,
                fact_classes: tuple[type[Fact[Any]], ...], make_fact: Callable[..., Fact[Any]],
                keep: Callable[[list[dict[str, Any]] | None, Packed | None, bytes | None], T],
                summary: Callable[[dict[str, Any]], Any] | None = None) -> list[T]:
    """keep(devices, packed, summaries) of each piece of `names` in order, where `devices` is
    [*read_one(name) for name in the piece] and `packed` what pack() made of them when the child
    read them (None when this process did): on two CPUs when worth_forking.
    `fact_classes`: the class of every Fact and Reading read_one makes (they cross the pipe as
    an index); `make_fact(cls, value, source, path, raw, note)`: how this side builds a Fact
    back. keep is called as each piece is read (this process's) or received (the
    child's), so what it lets go of is never held for the whole host at once. `summary`: what
    the caller reads of a device (some of its fields, as plain data): given, the child sends
    summarize() of each piece beside it packed, and keep gets those `summaries` (checked whole)
    instead of the devices (None: not unpacked here, then); None otherwise.

    The entries are cut into pieces of CHUNK (sliced from `names` when taken: any sequence, never
    copied whole), whose numbers wait in a pipe; both processes take the next number until none
    is left, so a busy CPU or a slow child only means this process does more of the pieces (all
    of them, if the child never runs). The child packs each piece it reads (pack: ~70 bytes a
    device) and writes it to a SpillFile made before the fork, at once: once the queue is empty
    it sends only where each piece is, and this process reads them back one at a time (with no
    SpillFile, it sends the pieces themselves, all at once)."""
    if not worth_forking(root, names):
        return [keep(_read_piece(piece, read_one), None, None)
                for piece in _cut(names, CHUNK, 1 << 30)]
    queue_r, queue_w = os.pipe()
    pieces = cut(names, fcntl.fcntl(queue_w, fcntl.F_GETPIPE_SZ))
    os.write(queue_w, b"".join(i.to_bytes(2, "little") for i in range(len(pieces))))
    os.close(queue_w)
    out_r, out_w = os.pipe()
    spill = SpillFile(SPILL_FOLDER)  # the child's: this process reads what it wrote there
    written = spill if spill.usable() else None
    parent = os.getpid()
    pid = _fork(queue_r, out_r, out_w)
    if pid is None:
        spill.close()
        return [keep(_read_piece(piece, read_one), None, None) for piece in pieces]
    if pid == 0:  # the child: read, send, exit without running anything of the parent's
        _child(out_w, out_r, queue_r, pieces, read_one, fact_classes, summary, parent, written)
    os.close(out_w)
    done: dict[int, T] = {}
    reaped = False
    try:
        for i in _take(queue_r):
            done[i] = keep(_read_piece(pieces[i], read_one), None, None)
        with os.fdopen(out_r, "rb") as pipe:
            sent = [pipe.read()]
        os.waitpid(pid, 0)
        reaped = True
        for i, packed, summaries in _received(sent, written, len(pieces)):
            try:
                devices = _sent_devices(packed, summaries, fact_classes, make_fact)
            except UNPACK_ERRORS:
                break  # garbled: this piece and the rest of the child's are read here
            done[i] = keep(devices, packed, summaries)
        for i in range(len(pieces)):  # what a failed child took and did not send
            if i not in done:
                done[i] = keep(_read_piece(pieces[i], read_one), None, None)
        return [done[i] for i in range(len(pieces))]
    finally:
        os.close(queue_r)
        spill.close()
        if not reaped:
            _kill(pid)


def _read_piece(piece: Sequence[str], read_one: ReadOne) -> list[dict[str, Any]]:
    return [f for name in piece for f in read_one(name)]


class Pieces(Sequence[Sequence[T]]):
    """`items` cut into pieces of `size` (the last may be shorter): piece i is sliced from
    `items` when it is asked for, so that no piece but the one at hand is ever a copy."""

    def __init__(self, items: Sequence[T], size: int) -> None:
        self.items, self.size = items, size

    def __len__(self) -> int:
        return -(-len(self.items) // self.size)

    @overload
    def __getitem__(self, i: int) -> Sequence[T]: ...

    @overload
    def __getitem__(self, i: slice) -> list[Sequence[T]]: ...

    def __getitem__(self, i: int | slice) -> Sequence[T] | list[Sequence[T]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("piece index out of range")
        return self.items[i * self.size:(i + 1) * self.size]


#: Pieces whose bytes a Shelf keeps after reading them back (get): devices are made nearly in
#: the order they were read, a piece's a few times over (its partitions, the devices above).
RECENT = 8


class Shelf:
    """Groups of `parts` bytes objects each (a piece's packed facts, its summaries), put away as
    they come and got back by number: in `spill` (one write a group, only where each is and how
    long each part held here, 12 + 4 * `parts` bytes), the last RECENT got kept; in memory when
    the file cannot be had (or stops taking them: a full disk), as a scan held them before."""

    def __init__(self, spill: SpillFile | None, parts: int) -> None:
        self.spill = spill
        self.parts = parts
        self.writing = spill is not None and spill.usable()
        #: Each group's offset in the file (-1: in memory, in `kept`), and its parts' sizes.
        self._at = array.array("q")
        self._sizes = array.array("I")
        self._kept: dict[int, tuple[bytes, ...]] = {}
        self._recent: dict[int, tuple[bytes, ...]] = {}

    def __len__(self) -> int:
        return len(self._at)

    def put(self, group: Sequence[bytes]) -> int:
        """`group` put away; its number."""
        assert len(group) == self.parts
        k = len(self._at)
        if self.writing and self.spill is not None:
            try:
                self._at.append(self.spill.put(b"".join(group)))
                self._sizes.extend(map(len, group))
                return k
            except OSError:  # ENOSPC: the rest stays in memory
                self.writing = False
        self._at.append(-1)
        self._sizes.extend([0] * self.parts)
        self._kept[k] = tuple(group)
        return k

    def get(self, k: int) -> tuple[bytes, ...]:
        """Group k's bytes."""
        found = self._kept.get(k) or self._recent.get(k)
        if found is not None:
            return found
        sizes = self._sizes[k * self.parts:(k + 1) * self.parts]
        assert self.spill is not None
        data = self.spill.get(self._at[k], sum(sizes))
        ends = list(itertools.accumulate(sizes, initial=0))
        found = tuple(data[ends[n]:ends[n + 1]] for n in range(self.parts))
        if len(self._recent) >= RECENT:
            del self._recent[next(iter(self._recent))]
        self._recent[k] = found
        return found

    def take(self, k: int) -> tuple[bytes, ...]:
        """Group k's bytes, not kept after (in memory neither: read once)."""
        found = self._kept.pop(k, None)
        if found is not None:
            return found
        found = self.get(k)
        del self._recent[k]
        return found


#: Devices per piece a scan makes and renders (in_order): ~180 KB of a SAN host's JSON. While
#: the devices are written, the scan holds a few pieces at once (the one it renders, its
#: devices' JSON, the child's it reads, the one waiting its turn): pieces of 128 devices
#: added ~4 MiB to the peak RSS of a 5,120-device host, of 32 about 1.
RENDER_CHUNK = 32

#: The pipe the rendered pieces come back through holds a few pieces when the system lets it
#: (F_SETPIPE_SZ; up to fs.pipe-max-size, 1 MiB by default): the child then goes on to its next
#: piece instead of waiting for this process to take the last.
RENDER_PIPE = 1 << 20


def in_order(root: SysRoot, items: Sequence[T], render: Callable[[Sequence[T]], bytes]
             ) -> Iterator[bytes]:
    """render(piece) of each piece of `items` (RENDER_CHUNK of them or more), in order; on two
    CPUs when worth_forking: this process and a forked child take the next piece's number from a
    shared queue (as read_pieces' do), the child sends what it renders through a pipe, and this
    process gives each piece in turn, its own or the child's. `render` must not change what the
    other pieces read (the child sees `items` as they were at the fork). When the child fails
    or stops sending, this process renders what it did not send, so the result never depends
    on the child; the child is killed and reaped when the caller stops early, or on any
    exception."""
    if not worth_forking(root, items) or len(items) <= RENDER_CHUNK:
        yield from _alone(items, render)
        return
    queue_r, queue_w = os.pipe()
    pieces = _cut(items, RENDER_CHUNK, fcntl.fcntl(queue_w, fcntl.F_GETPIPE_SZ))
    os.write(queue_w, b"".join(i.to_bytes(2, "little") for i in range(len(pieces))))
    os.close(queue_w)
    out_r, out_w = os.pipe()
    with contextlib.suppress(OSError):  # a smaller pipe only makes the child wait more
        fcntl.fcntl(out_w, fcntl.F_SETPIPE_SZ, RENDER_PIPE)
    parent = os.getpid()
    pid = _fork(queue_r, out_r, out_w)
    if pid is None:
        yield from _alone(items, render)
        return
    if pid == 0:  # the child: render, send, exit without running anything of the parent's
        _render_child(out_w, out_r, queue_r, pieces, render, parent)
    os.close(out_w)
    try:
        with os.fdopen(out_r, "rb") as pipe:
            yield from _in_turn(pieces, render, _take(queue_r), pipe)
    finally:
        os.close(queue_r)
        _kill(pid)  # done sending (or failed, or not wanted any more): reaped either way


def _alone(items: Sequence[T], render: Callable[[Sequence[T]], bytes]) -> Iterator[bytes]:
    for i in range(0, len(items), RENDER_CHUNK):
        yield render(items[i:i + RENDER_CHUNK])


def _fork(*fds: int) -> int | None:
    """os.fork(), or None when the system refuses one (EAGAIN at the user's process limit,
    ENOMEM): the caller then does the work alone, as on one CPU, after closing `fds` (the pipes
    made for the child). A host short of processes still gets its inventory."""
    try:
        return os.fork()
    except OSError:
        for fd in fds:
            os.close(fd)
        return None


def _in_turn(pieces: Sequence[Sequence[T]], render: Callable[[Sequence[T]], bytes],
             take: Iterator[int], pipe: BinaryIO) -> Iterator[bytes]:
    """The pieces in order: those this process takes from the queue rendered here, the others
    read from the child as they come (in the order it took them, which is theirs)."""
    mine: dict[int, bytes] = {}  # rendered here before its turn: one piece at most
    taken = -1  # the last number this process took: every one before it is given out
    sending = True
    for turn, piece in enumerate(pieces):
        while turn not in mine and turn > taken:
            taken = next(take, len(pieces))  # the queue is empty: the rest is the child's
            if taken < len(pieces):
                mine[taken] = render(pieces[taken])
        if turn in mine:
            yield mine.pop(turn)
            continue
        sent = _frame(pipe) if sending else None
        if sent is not None and sent[0] == turn:
            yield sent[1]
            continue
        sending = False  # it failed, or sent out of turn: what is left of its share is done here
        yield render(piece)


def _cut(items: Sequence[T], chunk: int, capacity: int) -> Pieces[T]:
    """cut, for pieces of `chunk` items or more."""
    return Pieces(items, max(chunk, -(-len(items) // (capacity // 2))))


def _frame(pipe: BinaryIO) -> tuple[int, bytes] | None:
    """The next piece the child sent (its number, its length, then the bytes); None when it
    sent no more."""
    head = pipe.read(12)
    if len(head) < 12:
        return None
    size = int.from_bytes(head[4:], "little")
    data = pipe.read(size)
    return (int.from_bytes(head[:4], "little"), data) if len(data) == size else None


def _render_child(wfd: int, rfd: int, queue: int, pieces: Sequence[Sequence[T]],
                  render: Callable[[Sequence[T]], bytes], parent: int) -> None:
    """The pieces it takes, rendered and sent in the order taken. Never returns (as _child)."""
    code = 1
    try:
        os.close(rfd)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: the parent reports it
        for i in _take(queue):
            if os.getppid() != parent:
                return
            data = render(pieces[i])
            _write_all(wfd, i.to_bytes(4, "little") + len(data).to_bytes(8, "little"))
            _write_all(wfd, data)
        code = 0
    finally:
        os._exit(code)


def _write_all(fd: int, data: bytes) -> None:
    """os.write until all of `data` is in the pipe (a write to a pipe may take part of it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _take(queue: int) -> Iterator[int]:
    """The numbers of the pieces to read, until the queue is empty (a read of two bytes from a
    pipe is taken whole: the two processes never split one)."""
    while True:
        raw = os.read(queue, 2)
        if len(raw) < 2:
            return
        yield int.from_bytes(raw, "little")


def _child(wfd: int, rfd: int, queue: int, pieces: Sequence[Sequence[str]], read_one: ReadOne,
           fact_classes: tuple[type[Fact[Any]], ...],
           summary: Callable[[dict[str, Any]], Any] | None, parent: int,
           spill: SpillFile | None) -> None:
    """Never returns: os._exit, so no atexit handler, buffered stdout or finally of the
    parent's runs twice. Stops at the next piece when the parent is gone (killed by SIGTERM or
    SIGHUP, which it does not catch): nothing would read what it sends."""
    code = 1
    try:
        os.close(rfd)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: the parent reports it
        payload: Any
        try:
            payload = _read_share(queue, pieces, read_one, fact_classes, summary, parent, spill)
        except DeviceProblem as err:
            payload = ("vanished", str(err))
        if payload is not None:
            _write_all(wfd, marshal.dumps(payload))
            code = 0
    finally:
        os._exit(code)


#: What the child sends of each piece it wrote to its SpillFile (int64s): the piece's number,
#: where it starts in the file, the sizes of pack()'s three parts and of its summaries (-1:
#: none), and the CRC-32 of all of it.
_RECORD: Final = 7


def _read_share(queue: int, pieces: Sequence[Sequence[str]], read_one: ReadOne,
                fact_classes: tuple[type[Fact[Any]], ...],
                summary: Callable[[dict[str, Any]], Any] | None, parent: int,
                spill: SpillFile | None) -> Any:
    """The child's pieces, read, packed and summarized: ("spilled", its _RECORDs) once each is
    written to `spill` (one after the other from its start, with pwrite at offsets counted here:
    the file's own offset is shared with the parent), or ("ok", [(number, packed, summaries)])
    without one; None when the parent is gone."""
    # Each piece's summaries compressed too: loaded all at once in the parent, they would be
    # ~1 KB a device (50 MB of a host with 100,000 devices) before keep lets go of them.
    done: list[tuple[int, Packed, bytes | None]] = []
    records = array.array("q")
    at = 0
    for i in _take(queue):
        if os.getppid() != parent:
            return None
        devices = _read_piece(pieces[i], read_one)
        packed = pack(devices, fact_classes)
        summaries = None if summary is None else summarize(devices, summary)
        if spill is None:
            done.append((i, packed, summaries))
            continue
        data = b"".join((*packed, summaries or b""))
        spill.put_at(at, data)
        records.extend((i, at, *map(len, packed), -1 if summaries is None else len(summaries),
                        zlib.crc32(data)))
        at += len(data)
    return ("ok", done) if spill is None else ("spilled", records.tobytes())


def _sent_devices(packed: Packed, summaries: bytes | None, classes: tuple[type[Fact[Any]], ...],
                  make_fact: Callable[..., Fact[Any]]) -> list[dict[str, Any]] | None:
    """The devices of a piece the child sent, unpacked; None when it sent their summaries,
    which are only checked (the caller reads them when it needs them). UNPACK_ERRORS when
    either is garbled."""
    if summaries is None:
        return unpack(packed, classes, make_fact)
    if type(marshal.loads(zlib.decompress(summaries))) is not list:
        raise ValueError("not a list of summaries")
    return None


def summarize(devices: list[dict[str, Any]], summary: Callable[[dict[str, Any]], Any]) -> bytes:
    """summary(device) of each device (plain data), as one compressed piece of bytes (~30 bytes
    a device on a SAN host; summaries_of gives them back)."""
    return zlib.compress(marshal.dumps([summary(f) for f in devices]), 1)


def summaries_of(data: bytes) -> list[Any]:
    """The summaries summarize() made."""
    summaries: list[Any] = marshal.loads(zlib.decompress(data))
    return summaries


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _encode(fields: dict[str, Any], classes: tuple[type[Fact[Any]], ...]) -> Any:
    """A device dict with its Readings as ("r", class index, value, source, folder, file, raw,
    note) tuples, its Facts as (class index, value, source, path, raw, note) tuples and an MdInfo
    as ("md", {field: tuple}): what marshal carries. A Held device is ("held", its layout's
    entries, that dict, its packed list): devices laid out alike share one entries tuple, which
    marshal writes once. TypeError for anything else that is not plain data (then the parent
    reads this half itself)."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if value is None or type(value) in _PLAIN:  # most of a device's fields: first
            out[key] = value
        elif type(value) is Reading:
            out[key] = ("r", classes.index(value.cls), value.value, value.source, value.folder,
                        value.file, value.raw, value.note)
        elif isinstance(value, Fact):
            out[key] = fact_tuple(value, classes)
        elif isinstance(value, MdInfo):
            out[key] = ("md", {k: fact_tuple(getattr(value, k), classes)
                               for k in MdInfo.model_fields})
        elif isinstance(value, (str, int, list)):  # a subclass (bool is one of int's)
            out[key] = value
        else:
            raise TypeError(f"{key}: {type(value).__name__} cannot cross the pipe")
    if type(fields) is Held:
        if classes != HELD_CLASSES:
            raise TypeError("a held device's facts are laid out by HELD_CLASSES")
        return ("held", fields.layout.entries, out, fields.packed)
    return out


#: Types _encode gives as they are without asking more (a Fact's isinstance check is slow).
_PLAIN = frozenset({str, int, bool, list})


#: A piece of devices packed (pack): its header (zlib: the layouts of its Held devices and the
#: first device's marshal bytes), the others' marshal bytes each deflated on their own with the
#: first as dictionary, one after the other, and where each of them ends (uint32s).
Packed = tuple[bytes, bytes, bytes]

#: Where each packed device but the first ends (array typecode) and its size in bytes.
_END: Final = "I"
_END_BYTES = array.array(_END).itemsize

#: What unpacking a piece that is not what pack() made raises (a garbled piece).
UNPACK_ERRORS = (EOFError, ValueError, TypeError, IndexError, KeyError, zlib.error)

#: Raw deflate (no zlib header or checksum: a device's bytes are a few dozen) in a 4 KiB window
#: with a small hash table: a device's record and the first one's fit in it, and a deflater of
#: the default size (256 KiB to set up) took half of pack's time for nothing smaller.
_RAW = -12
_MEMORY = 2


def pack(devices: list[dict[str, Any]], classes: tuple[type[Fact[Any]], ...]) -> Packed:
    """`devices` (dicts of Facts, Readings and plain data, or Held devices) packed: what the
    child sends of each piece it reads, and what a scan keeps of each device until it is made,
    ~70 bytes a device on a SAN host (devices read together are laid out alike and their values
    repeat, so each is deflated against the first). Any one of them is made again on its own
    (unpack_one): devices are not made in the order they are read. TypeError for what _encode
    cannot carry."""
    layouts: dict[int, int] = {}
    entries: list[Any] = []
    records: list[bytes] = []
    for f in devices:
        out = _encode(f, classes)
        if type(out) is tuple:  # ("held", entries, dict, packed): the entries once a piece
            at = layouts.get(id(out[1]))
            if at is None:
                at = layouts[id(out[1])] = len(entries)
                entries.append(out[1])
            out = (at, out[2], out[3])
        records.append(marshal.dumps(out))
    first = records[0] if records else b""
    blob: list[bytes] = []
    ends = array.array(_END)
    end = 0
    for raw in records[1:]:
        deflate = zlib.compressobj(1, zlib.DEFLATED, _RAW, _MEMORY, zdict=first)
        blob.append(deflate.compress(raw) + deflate.flush())
        end += len(blob[-1])
        ends.append(end)
    return (zlib.compress(marshal.dumps((tuple(entries), first)), 1), b"".join(blob),
            ends.tobytes())


#: What unpack_one keeps of the pieces it read last (their headers), by piece.
Headers = dict[int, tuple[list[Layout], bytes]]

#: Pieces whose headers unpack_one keeps.
HEADERS = 16


def unpack(packed: Packed, classes: tuple[type[Fact[Any]], ...],
           make_fact: Callable[..., Fact[Any]]) -> list[dict[str, Any]]:
    """Every device pack() packed, made again (a Held device as a Held)."""
    headers: Headers = {}
    # The first device is in the header; each other one has an end (a uint32) in packed[2].
    count = len(packed[2]) // _END_BYTES + 1 if _header(packed, 0, headers)[1] else 0
    return [unpack_one(packed, k, classes, make_fact, headers, 0) for k in range(count)]


def unpack_one(packed: Sequence[bytes], k: int, classes: tuple[type[Fact[Any]], ...],
               make_fact: Callable[..., Fact[Any]], headers: Headers, piece: int
               ) -> dict[str, Any]:
    """Device `k` of those pack() packed, made again. `headers`: the headers of the last
    pieces read this way, `piece` the number of this one among them."""
    layouts, first = _header(packed, piece, headers)
    if k == 0:
        raw = first
    else:
        ends = memoryview(packed[2]).cast(_END)
        start = ends[k - 2] if k > 1 else 0
        inflate = zlib.decompressobj(_RAW, zdict=first)
        raw = inflate.decompress(memoryview(packed[1])[start:ends[k - 1]]) + inflate.flush()
    device = marshal.loads(raw)
    if type(device) is not tuple:
        return _fields(device, classes, make_fact)
    at, fields, values = device
    held = Held(_fields(fields, classes, make_fact))
    held.layout, held.packed = layouts[at], values
    return held


def _header(packed: Sequence[bytes], piece: int, headers: Headers) -> tuple[list[Layout], bytes]:
    found = headers.get(piece)
    if found is None:
        entries, first = marshal.loads(zlib.decompress(packed[0]))
        if len(headers) >= HEADERS:
            del headers[next(iter(headers))]
        found = headers[piece] = ([layout_of(e) for e in entries], first)
    return found


def _received(sent: list[bytes], spill: SpillFile | None, count: int
              ) -> Iterator[tuple[int, Packed, bytes | None]]:
    """The child's pieces, each packed (with its devices' summaries compressed, or None), from
    `sent` (the one bytes object it sent, let go of once loaded) and, when it wrote them there,
    read back one at a time from `spill`; none (or not all) when it sent nothing usable (it
    failed, or what it wrote is garbled: the caller reads its pieces); DeviceProblem when it saw
    a device vanish."""
    try:
        kind, body = marshal.loads(sent.pop())
    except (EOFError, ValueError, TypeError):
        return
    if kind == "vanished":
        raise DeviceProblem(body)
    if kind == "ok":
        yield from ((i, packed, summaries) for i, packed, summaries in body)
    elif kind == "spilled" and spill is not None and type(body) is bytes:
        yield from _spilled(body, spill, count)


def _spilled(body: bytes, spill: SpillFile, count: int
             ) -> Iterator[tuple[int, Packed, bytes | None]]:
    """The pieces the child wrote to `spill`, as its records say, until one is not what it
    wrote. They follow one another from the file's start and the last ends where the file does
    (checked first: no size read here makes this process allocate more than the child wrote),
    and each one's bytes have the CRC-32 the child sent."""
    records = array.array("q")
    with contextlib.suppress(ValueError):
        records.frombytes(body)
    if len(records) % _RECORD:
        return
    rows = [records[k:k + _RECORD] for k in range(0, len(records), _RECORD)]
    if not rows or any(min(row[2:5]) < 0 or row[5] < -1 for row in rows) \
            or not _ends_at(spill, sum(sum(row[2:5]) + max(row[5], 0) for row in rows)):
        return
    at = 0
    for i, start, a, b, c, d, crc in rows:
        if start != at or not 0 <= i < count:
            return
        data = spill.get(at, a + b + c + max(d, 0))
        if zlib.crc32(data) != crc:
            return
        at += len(data)
        yield i, (data[:a], data[a:a + b], data[a + b:a + b + c]), \
            None if d < 0 else data[a + b + c:]


def _ends_at(spill: SpillFile, end: int) -> bool:
    """Whether `spill`'s last byte is at `end` - 1."""
    try:
        spill.get(end - 1, 1)
    except (OSError, ValueError):  # shorter (ValueError: a negative offset)
        return False
    try:
        spill.get(end, 1)
    except OSError:
        return True
    return False


def _fields(fields: dict[str, Any], classes: tuple[type[Fact[Any]], ...],
            make_fact: Callable[..., Fact[Any]]) -> dict[str, Any]:
    """A device's dict as _encode sent it, its facts made again (in place)."""
    for key, value in fields.items():
        if type(value) is tuple:
            if value[0] == "r":
                fields[key] = Reading(classes[value[1]], *value[2:])
            elif value[0] == "md":
                fields[key] = MdInfo(**{k: make_fact(classes[t[0]], *t[1:])
                                        for k, t in value[1].items()})
            else:
                fields[key] = make_fact(classes[value[0]], *value[1:])
    return fields
