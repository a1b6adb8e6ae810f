"""Walk a tree and measure it, in memory that does not grow with the number of files.

Iterative (an explicit stack, so deep trees cannot overflow Python's recursion limit), never follows
a symlink below the root, and reads each directory as a stream with os.scandir, CHUNK entries at
a time: one stat per entry (as du), and a chunk's figures summed by loops that run in C rather than
by Python code per entry (Walker._examine_batch; the rarer cases an entry at a time). What it keeps:
fixed-size histograms, the N largest directories, a reservoir of at most `xattr_sample` paths, the
stack of directories still to visit (like du and find, it grows with the depth and the number of
subdirectories per directory, not with the number of files), and the inodes with several names
whose other names have not been seen yet (forgotten once they all have).

Extended attributes are read after the walk, from the reservoir: uniform over the files and
directories, exact when the tree has no more of them than the sample size.

With two CPUs the walk is shared with one forked process (a Python listing and stat of each entry
costs more CPU time than du's, and most of it is the kernel's: two processes are what brings it
near du's wall time). The tree is read breadth-first from the root until SPLIT_DIRECTORIES
directories wait to be read; each process then claims them a group at a time from a queue (a
pipe holding their numbers) and walks each claimed subtree depth-first. The worker sends its
figures back and they are merged exactly: counts and bytes add up; the histograms add up bucket
by bucket with their exact extremes (so the percentiles, the median file size and the largest
directory are those of one process's walk); the largest directories are the largest of both
halves' largest (equal sizes ordered by path, in both); an inode whose names fell in both halves
was counted in each and is counted once. What is not the same as one process's walk: which
paths the xattr sample holds when the tree has more files and directories than the sample (a
uniform sample either way, drawn otherwise), and which problem examples come first.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import random
import select
import signal
import stat
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, MutableSequence
from dataclasses import dataclass, field, fields
from itertools import compress, islice
from operator import attrgetter, gt, itemgetter, methodcaller
from types import FrameType

from advisor.errors import BadInput
from advisor.models.profile import (
    DirectorySize,
    HardLinks,
    MeasuredAnswers,
    Problems,
    Profile,
    SpecialFiles,
    Xattrs,
)
from advisor.profile.stats import (
    Largest,
    Log2Histogram,
    Reservoir,
    exact_distribution,
    merge_samples,
)
from advisor.signals import STOPPING_SIGNALS, install_handlers

DEFAULT_TOP_DIRECTORIES = 10
DEFAULT_XATTR_SAMPLE = 10_000
MAX_EXAMPLES = 20
#: How often (in entries) the progress callback is called; it decides itself whether to print.
PROGRESS_EVERY = 8192
#: A shared walk starts once this many directories wait to be read: enough groups for two
#: processes to keep each other busy until the end.
SPLIT_DIRECTORIES = 64
#: Most groups in the queue two processes claim directories from: 4 bytes each, written whole
#: into the pipe before either reads, so at most a page (the smallest buffer a pipe has).
MAX_CLAIMS = 1024
#: What stops the forked process of a shared walk (SIGINT may be ignored in it, as in a
#: process started in the background).
STOP_HALF = signal.SIGUSR1
#: Entries examined at once (see Walker._examine_batch): enough that the work per chunk is
#: small beside the work per entry, few enough that a chunk's stat results take little memory.
CHUNK = 512
#: Chunks smaller than this are examined an entry at a time: cheaper for a few entries.
MIN_BATCH = 16
_STAT = os.DirEntry.stat
_LSTAT = methodcaller("stat", follow_symlinks=False)
_IS_SYMLINK = os.DirEntry.is_symlink
#: A stat_result is also a tuple of its first ten fields (st_mode, st_ino, st_dev, st_nlink,
#: st_uid, st_gid, st_size and the three times, in that order): one taken by index costs less
#: than by name. st_blocks is only a name.
_MODE, _DEVICE, _LINKS, _SIZE = itemgetter(0), itemgetter(2), itemgetter(3), itemgetter(6)
_BLOCKS = attrgetter("st_blocks")
_BLOCK_BYTES = (512).__mul__
_S_IFMT = stat.S_IFMT
_S_IFREG, _S_IFDIR, _S_IFLNK = stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK
_FILE_OR_DIRECTORY = frozenset((_S_IFREG, _S_IFDIR))
_CLAIM = struct.Struct("=I")
_COUNT = struct.Struct("=q")

#: XFS keeps the namespace as a flag, not in the name.
_NAMESPACES = ("user.", "trusted.", "security.", "system.")
#: POSIX ACLs: XFS stores them under these names, 12 bytes per entry on disk (8 in the xattr API).
_XFS_ACL_NAMES = {"system.posix_acl_access": "SGI_ACL_FILE",
                  "system.posix_acl_default": "SGI_ACL_DEFAULT"}
_NOT_SUPPORTED = {errno.ENOTSUP, errno.EOPNOTSUPP}


def _one_name_each(paths: list[str], twice: set[tuple[int, int]]) -> list[str]:
    """`paths` less the second name of each inode in `twice` (counted by both halves of a shared
    walk, so each may have sampled a name of it)."""
    kept, seen = [], set()
    for path in sorted(paths):
        try:
            st = os.lstat(path)
        except OSError:
            kept.append(path)
            continue
        key = (st.st_dev, st.st_ino)
        if key in twice:
            if key in seen:
                continue
            seen.add(key)
        kept.append(path)
    return kept


def display_path(path: str) -> str:
    """A path safe to print and to put in JSON: bytes that are not UTF-8 (kept by Python as
    surrogate escapes) become backslash escapes like \\xff."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def stored_xattr_size(name: str, value_length: int) -> tuple[int, int]:
    """(name bytes, value bytes) as XFS stores the attribute."""
    if name in _XFS_ACL_NAMES:
        entries = max(0, (value_length - 4) // 8)
        return len(_XFS_ACL_NAMES[name]), 4 + 12 * entries
    encoded = len(os.fsencode(name))
    for prefix in _NAMESPACES:
        if name.startswith(prefix):
            return encoded - len(prefix), value_length
    return encoded, value_length


#: Longest path handed to the kernel in one piece (PATH_MAX is 4096 with the final NUL).
_PATH_PIECE = 4000


def _open_directory(path: str, flags: int) -> int:
    """os.open, also for paths longer than PATH_MAX (a deep tree): those are opened piece by
    piece, each piece relative to the directory the previous one opened."""
    try:
        return os.open(path, flags)
    except OSError as err:
        if err.errno != errno.ENAMETOOLONG:
            raise
    pieces: list[str] = []
    current = "/" if path.startswith("/") else ""
    for name in path.split("/"):
        if not name:
            continue
        if current and len(current) + len(name) + 1 > _PATH_PIECE:
            pieces.append(current)
            current = ""
        current = f"{current}/{name}" if current and current != "/" else current + name
    pieces.append(current)
    fd = os.open(pieces[0], flags)
    for piece in pieces[1:]:
        try:
            inner = os.open(piece, flags, dir_fd=fd)
        finally:
            os.close(fd)
        fd = inner
    return fd


@dataclass
class _Counts:
    entries: int = 0
    files: int = 0
    directories: int = 0
    symlinks: int = 0
    block_devices: int = 0
    character_devices: int = 0
    fifos: int = 0
    sockets: int = 0
    apparent_bytes: int = 0
    allocated_bytes: int = 0
    sparse_files: int = 0
    hard_link_inodes: int = 0
    extra_names: int = 0
    unreadable_directories: int = 0
    unreadable_entries: int = 0
    vanished: int = 0
    other_filesystems_skipped: int = 0
    examples: list[str] = field(default_factory=list)


#: (device, inode) -> (names not seen yet, size, allocated bytes, links) of a file with several
#: names: what an inode counted by both processes needs to be counted once.
Pending = dict[tuple[int, int], tuple[int, int, int, int]]


@dataclass
class _Half:
    """What the forked process of a shared walk measured, sent back to be merged."""

    counts: _Counts
    file_sizes: Log2Histogram
    directory_sizes: Log2Histogram
    largest: list[tuple[int, str]]
    sample: list[str]
    population: int
    pending: Pending
    partial: bool


def _end_with_parent(parent: int) -> None:
    """Be killed when `parent` ends (PR_SET_PDEATHSIG), and end now if it already has: a
    process killed outright (SIGKILL, the OOM killer) would leave this one walking the rest of
    the tree alone, holding the output its caller reads until then."""
    import ctypes

    pr_set_pdeathsig = 1
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def _groups(waiting: list[str]) -> list[list[str]]:
    """The directories waiting to be read, in at most MAX_CLAIMS groups, in the order they were
    found (the shallowest, likely the largest subtrees, first)."""
    size = -(-len(waiting) // MAX_CLAIMS)
    return [waiting[i:i + size] for i in range(0, len(waiting), size)]


@dataclass
class Walker:
    """One scan. `walk()` returns the Profile; Ctrl-C during it returns what was seen, partial."""

    one_file_system: bool = False
    top_directories: int = DEFAULT_TOP_DIRECTORIES
    xattr_sample: int = DEFAULT_XATTR_SAMPLE
    seed: int = 0
    #: Called with (entries seen, seconds elapsed) as the walk starts, then every PROGRESS_EVERY
    #: entries or so.
    progress: Callable[[int, float], None] | None = None
    #: Called with an entry's path after it was listed and before it is examined. For tests: a
    #: file deleted here is one that vanished during the scan.
    before_examine: Callable[[str], None] | None = None
    #: Processes that walk: 2 shares the tree with one forked process, 1 walks alone. None: 2
    #: when this process may use two CPUs and no other thread runs in it (a fork copies the
    #: locks other threads hold).
    processes: int | None = None

    def __post_init__(self) -> None:
        self._counts = _Counts()
        self._file_sizes = Log2Histogram()
        self._directory_sizes = Log2Histogram()
        self._largest: Largest[str] = Largest(self.top_directories)
        self._sample: Reservoir[str] = Reservoir(self.xattr_sample, self.seed)
        self._links_pending: Pending = {}
        self._started = 0.0
        self._top, self._root_dev = "", 0
        #: Files and directories offered to the xattr sample so far.
        self._population = 0
        self._next_progress = PROGRESS_EVERY
        #: In the forked process of a shared walk: where it counts its entries for the progress.
        self._published: mmap.mmap | None = None
        #: In the walk's own process: where the forked one counts its entries.
        self._others: mmap.mmap | None = None
        #: Whether the last walk was shared with a forked process.
        self.shared = False

    def _problem(self, what: str, path: str) -> None:
        if len(self._counts.examples) < MAX_EXAMPLES:
            self._counts.examples.append(f"{what}: {display_path(path)}")

    def walk(self, root: str | os.PathLike[str]) -> Profile:
        top = os.fspath(root)
        try:
            st = os.stat(top)  # the root itself may be a symlink the user named on purpose
        except OSError as err:
            raise BadInput(f"cannot profile {display_path(top)}: {err.strerror}") from None
        if not stat.S_ISDIR(st.st_mode):
            raise BadInput(f"cannot profile {display_path(top)}: not a directory")
        if not os.access(top, os.R_OK | os.X_OK):
            raise BadInput(f"cannot profile {display_path(top)}: permission denied")
        self._started = time.monotonic()
        partial = False
        try:
            partial = self._walk(top, st)
        except KeyboardInterrupt:
            partial = True
        xattrs, cut_short = self._read_xattrs()  # at most xattr_sample paths: quick
        return self._report(top, partial or cut_short, xattrs)

    def _may_share(self) -> bool:
        if not hasattr(os, "fork"):
            return False
        if self.processes is not None:
            return self.processes > 1
        return len(os.sched_getaffinity(0)) > 1 and threading.active_count() == 1

    def _walk(self, top: str, top_stat: os.stat_result) -> bool:
        """Walk the tree below `top`; whether the forked process of a shared walk was cut
        short."""
        c = self._counts
        c.entries = c.directories = 1
        c.allocated_bytes = top_stat.st_blocks * 512
        self._top, self._root_dev = top, top_stat.st_dev
        if self._sample.next_index == 0:
            self._sample.take(top)
        self._population = 1
        if self.progress is not None:
            self.progress(1, 0.0)
        if not self._may_share():
            stack = [top]
            self._scan(stack, stack.pop)
            return False
        waiting: deque[str] = deque([top])
        self._scan(waiting, waiting.popleft, until=SPLIT_DIRECTORIES)
        if not waiting:
            return False
        return self._walk_shared(_groups(list(waiting)))

    def _walk_shared(self, groups: list[list[str]]) -> bool:
        """Walk `groups` of directories in this process and a forked one, each claiming the
        next group from a pipe when done with the last; merge what the other measured. Whether
        the other was cut short (Ctrl-C reaches both; a second one abandons its half)."""
        # Here, not with the module: a walk that is not shared (a small tree, one CPU) does not
        # pay for it (a millisecond or two). Before the fork, so that both processes have it.
        import pickle  # noqa: F401
        claims_out, claims_in = os.pipe()
        try:
            os.write(claims_in, b"".join(_CLAIM.pack(i) for i in range(len(groups))))
        finally:
            os.close(claims_in)

        taken: list[int] = []  # the groups this process claimed (the forked one has its own)

        def claim() -> list[str]:
            number = os.read(claims_out, _CLAIM.size)  # one reader at a time takes a record
            if not number:
                return []
            taken.append(_CLAIM.unpack(number)[0])
            return groups[taken[-1]]

        counted = mmap.mmap(-1, _COUNT.size)
        results_out, results_in = os.pipe()
        parent = os.getpid()
        # Held over the fork, until the forked process has its own handlers: a Ctrl-C (or this
        # process's STOP_HALF, whose default action ends a process) landing in between would
        # end it before it could send anything. Here they wait only for the fork itself.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {*STOPPING_SIGNALS, STOP_HALF})
        try:
            pid = os.fork()
        except OSError:  # refused (the user's process limit, memory): this process walks alone
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            for fd in (claims_out, results_out, results_in):
                os.close(fd)
            counted.close()
            alone = [path for group in groups for path in group]
            self._scan(alone, alone.pop)
            return False
        except BaseException:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            raise
        if pid == 0:  # pragma: no cover (the forked process; its figures are what is tested)
            self._walk_other_half(claim, counted, results_out, results_in, parent, held)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        half: _Half | None = None
        interrupted = False
        try:
            os.close(results_in)
            self.shared, self._others = True, counted
            try:
                stack: list[str] = []
                self._scan(stack, stack.pop, claim=claim)
            except KeyboardInterrupt:
                interrupted = True
                os.kill(pid, STOP_HALF)  # the forked process stops too, and sends its half
            half, stopped = self._receive(results_out, pid)
            interrupted = interrupted or stopped
        finally:
            self._others = None
            os.close(results_out)
            os.close(claims_out)
            if half is None:
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            counted.close()
        if half is None:
            return self._lost_half(groups, taken, interrupted)
        self._merge(half)
        return interrupted or half.partial

    def _lost_half(self, groups: list[list[str]], taken: list[int], interrupted: bool) -> bool:
        """The forked process sent nothing whole. Interrupted: a partial report of this
        process's half. Otherwise it died (the OOM killer, a kill) with what it had walked: the
        groups it claimed, every one this process did not (`taken`), are walked here, as if it
        had never run. Whether the walk was cut short."""
        if interrupted:
            return True
        mine = set(taken)
        lost = [path for i, group in enumerate(groups) if i not in mine for path in group]
        self._scan(lost, lost.pop)
        return False

    def _walk_other_half(self, claim: Callable[[], list[str]], counted: mmap.mmap,
                         results_out: int, results_in: int, parent: int,
                         mask: set[int | signal.Signals]) -> None:
        """The forked process: walk what it claims, send its figures, and end (never return
        into the caller's code, nor run its exit handlers). It ends with `parent` too. The
        ending signals and STOP_HALF are held until its handlers are in place (then `mask`)."""
        import pickle  # imported already, by _walk_shared

        code = 1
        walking = True

        def stop(signum: int, frame: FrameType | None) -> None:
            # Once only: the second of Ctrl-C and STOP_HALF would otherwise land in the
            # scan's finally, which stores what was walked, and the half would be sent empty.
            nonlocal walking
            if walking:
                walking = False
                raise KeyboardInterrupt

        try:
            _end_with_parent(parent)
            os.close(results_out)
            # Ctrl-C at a terminal reaches both processes, and the walk's own process, stopped
            # by it (or by SIGTERM, or SIGINT to it alone), stops this one with STOP_HALF as
            # well: the second can come while the first is being handled. Each
            # stops the walk; once it is over, none can cut the sending of its figures short.
            install_handlers(stop, python_only=True)
            signal.signal(STOP_HALF, stop)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            self._restart(counted)
            partial = False
            try:
                stack: list[str] = []
                self._scan(stack, stack.pop, claim=claim)
            except KeyboardInterrupt:
                partial = True
            walking = False
            # Its figures are sent whole (nor can a signal without a Python handler end it).
            signal.pthread_sigmask(signal.SIG_BLOCK, {*STOPPING_SIGNALS, STOP_HALF})
            with os.fdopen(results_in, "wb") as f:
                pickle.dump(_Half(self._counts, self._file_sizes, self._directory_sizes,
                                  self._largest.items(), self._sample.items, self._population,
                                  self._links_pending, partial), f,
                            protocol=pickle.HIGHEST_PROTOCOL)
            code = 0
        finally:
            os._exit(code)

    def _restart(self, counted: mmap.mmap) -> None:
        """Start the figures of the forked process afresh (what its parent measured stays
        there)."""
        self._counts = _Counts()
        self._file_sizes = Log2Histogram()
        self._directory_sizes = Log2Histogram()
        self._largest = Largest(self.top_directories)
        self._sample = Reservoir(self.xattr_sample, self.seed + 1)
        self._links_pending = {}
        self._population = 0
        self._next_progress = PROGRESS_EVERY
        self.progress = None
        self._published = counted

    def _receive(self, fd: int, pid: int) -> tuple[_Half | None, bool]:
        """The forked process's half (None when it sent none whole), and whether Ctrl-C came
        meanwhile; the progress goes on while it walks."""
        import pickle  # imported already, by _walk_shared

        chunks: list[bytes] = []
        interrupted = False
        while True:
            try:
                if not select.select([fd], [], [], 0.5)[0]:
                    self._tell(self._counts.entries)
                    continue
                chunk = os.read(fd, 1 << 20)
            except KeyboardInterrupt:
                if interrupted:
                    raise
                interrupted = True
                os.kill(pid, STOP_HALF)
                continue
            if not chunk:
                break
            chunks.append(chunk)
        try:
            half = pickle.loads(b"".join(chunks))
        except (pickle.UnpicklingError, EOFError, ValueError):
            return None, interrupted
        return (half if isinstance(half, _Half) else None), interrupted

    def _merge(self, half: _Half) -> None:
        """Add the other half's figures to this one's, exactly (see the module's docstring)."""
        c, o = self._counts, half.counts
        for f in fields(_Counts):
            if f.name != "examples":
                setattr(c, f.name, getattr(c, f.name) + getattr(o, f.name))
        c.examples = (c.examples + o.examples)[:MAX_EXAMPLES]
        self._file_sizes.merge(half.file_sizes)
        self._directory_sizes.merge(half.directory_sizes)
        for entries, path in half.largest:
            self._largest.offer(entries, path)
        pending, population = self._links_pending, self._population
        twice: set[tuple[int, int]] = set()
        for key, (left, size, blocks, links) in half.pending.items():
            mine = pending.get(key)
            if mine is None:
                pending[key] = (left, size, blocks, links)
                continue
            # Counted in each half as a new inode: once is right, its other count a name.
            twice.add(key)
            c.hard_link_inodes -= 1
            c.extra_names += 1
            c.files -= 1
            c.apparent_bytes -= size
            c.allocated_bytes -= blocks
            c.sparse_files -= blocks < size
            self._file_sizes.remove_copy(size)
            population -= 1
            unseen = mine[0] + left - links
            if unseen > 0:
                pending[key] = (unseen, size, blocks, links)
            else:
                del pending[key]
        sample = merge_samples(self._sample.items, self._population, half.sample,
                               half.population, self.xattr_sample, random.Random(self.seed + 2))
        self._sample.items = _one_name_each(sample, twice) if twice else sample
        self._population = population + half.population

    def _tell(self, seen: int) -> None:
        """Progress: the forked process counts its entries where its parent reads them; the
        parent tells the callback what both have seen."""
        if self._published is not None:
            _COUNT.pack_into(self._published, 0, seen)
        elif self.progress is not None:
            others = _COUNT.unpack_from(self._others)[0] if self._others is not None else 0
            self.progress(seen + others, time.monotonic() - self._started)

    def _scan(self, stack: MutableSequence[str], pop: Callable[[], str], *, until: int = 0,
              claim: Callable[[], list[str]] | None = None) -> None:
        """Read the directories of `stack` (taken by `pop`) and those found below them, until
        none is left (then the next group `claim` gives, if any) or `until` of them wait."""
        # The hot loop keeps its counters in local variables (cheaper than attribute updates once
        # per entry or chunk) and stores them in the finally at the end, Ctrl-C included.
        c = self._counts
        sample, pending = self._sample, self._links_pending
        counts, totals = self._file_sizes.counts, self._file_sizes.totals
        minimums, maximums = self._file_sizes.minimums, self._file_sizes.maximums
        directory_sizes, largest = self._directory_sizes, self._largest
        before_examine = self.before_examine
        # The hook is called before each entry is examined: with it, entries go one at a time.
        batch = before_examine is None
        tell = (self._tell if self.progress is not None or self._published is not None
                else None)
        top, root_dev, one_fs = self._top, self._root_dev, self.one_file_system
        s_ifreg, s_ifdir, s_iflnk = stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK

        seen, files, directories, symlinks = c.entries, c.files, c.directories, c.symlinks
        apparent, allocated, sparse = c.apparent_bytes, c.allocated_bytes, c.sparse_files
        population = self._population
        next_progress = self._next_progress
        # The root may be a symlink the user named; below it, a directory swapped for a symlink
        # after it was examined is refused by O_NOFOLLOW.
        follow = os.O_RDONLY | os.O_DIRECTORY
        no_follow = follow | os.O_NOFOLLOW
        try:
            while True:
                if not stack:
                    more = claim() if claim is not None else None
                    if not more:
                        break
                    stack.extend(more)
                if until and len(stack) >= until:
                    break
                path = pop()
                prefix = path if path.endswith("/") else path + "/"
                try:
                    fd = _open_directory(path, follow if path is top else no_follow)
                except FileNotFoundError:
                    c.vanished += 1
                    self._problem("vanished", path)
                    continue
                except OSError as err:
                    c.unreadable_directories += 1
                    self._problem(f"unreadable ({err.strerror})", path)
                    continue
                entries = 0
                try:
                    # Listing by descriptor makes entry.stat() an fstatat() relative to it: the
                    # kernel no longer resolves the whole path for every entry.
                    with os.scandir(fd) as listing:
                        while chunk := list(islice(listing, CHUNK)):
                            if batch and len(chunk) >= MIN_BATCH:
                                done = self._examine_batch(chunk, prefix, stack, population)
                                if done is not None:
                                    entries += len(chunk)
                                    # Only a directory's last chunk is short: 0x10000 is reached.
                                    if tell is not None and not entries & 0xFFFF:
                                        tell(seen + entries)
                                    (population, more_files, more_directories, more_symlinks,
                                     more_apparent, more_allocated, more_sparse) = done
                                    files += more_files
                                    directories += more_directories
                                    symlinks += more_symlinks
                                    apparent += more_apparent
                                    allocated += more_allocated
                                    sparse += more_sparse
                                    continue
                            for entry in chunk:
                                entries += 1
                                if tell is not None and not entries & 0xFFFF:
                                    tell(seen + entries)
                                if before_examine is not None:
                                    before_examine(prefix + entry.name)
                                try:
                                    st = entry.stat(follow_symlinks=False)
                                except FileNotFoundError:
                                    c.vanished += 1
                                    self._problem("vanished", prefix + entry.name)
                                    continue
                                except OSError as err:
                                    c.unreadable_entries += 1
                                    self._problem(f"cannot examine ({err.strerror})",
                                                  prefix + entry.name)
                                    continue
                                kind = st.st_mode & 0o170000
                                if kind == s_ifreg:
                                    size = st.st_size
                                    blocks = st.st_blocks * 512
                                    if st.st_nlink > 1:
                                        key = (st.st_dev, st.st_ino)
                                        known = pending.get(key)
                                        if known is None:
                                            pending[key] = (st.st_nlink - 1, size, blocks,
                                                            st.st_nlink)
                                            c.hard_link_inodes += 1
                                        else:
                                            c.extra_names += 1
                                            if known[0] <= 1:
                                                del pending[key]
                                            else:
                                                pending[key] = (known[0] - 1, known[1], known[2],
                                                                known[3])
                                            continue
                                    files += 1
                                    apparent += size
                                    allocated += blocks
                                    if blocks < size:
                                        sparse += 1
                                    b = size.bit_length()
                                    if counts[b] == 0:
                                        minimums[b] = maximums[b] = size
                                    elif size < minimums[b]:
                                        minimums[b] = size
                                    elif size > maximums[b]:
                                        maximums[b] = size
                                    counts[b] += 1
                                    totals[b] += size
                                    if population == sample.next_index:
                                        sample.take(prefix + entry.name)
                                    population += 1
                                elif kind == s_ifdir:
                                    if one_fs and st.st_dev != root_dev:
                                        c.other_filesystems_skipped += 1
                                        continue
                                    directories += 1
                                    allocated += st.st_blocks * 512
                                    stack.append(prefix + entry.name)
                                    if population == sample.next_index:
                                        sample.take(prefix + entry.name)
                                    population += 1
                                elif kind == s_iflnk:
                                    symlinks += 1
                                    allocated += st.st_blocks * 512
                                else:
                                    allocated += st.st_blocks * 512
                                    self._count_special(kind)
                except OSError as err:  # the listing broke off (EIO, a directory removed under us)
                    c.unreadable_directories += 1
                    self._problem(f"listing broke off ({err.strerror})", path)
                finally:
                    # Also on Ctrl-C: the part of this directory already listed counts.
                    os.close(fd)
                    seen += entries
                    directory_sizes.add(entries)
                    if largest.would_take(entries):
                        largest.offer(entries, path)
                if tell is not None and seen >= next_progress:
                    tell(seen)
                    next_progress = seen + PROGRESS_EVERY
        finally:
            c.entries, c.files, c.directories, c.symlinks = seen, files, directories, symlinks
            c.apparent_bytes, c.allocated_bytes, c.sparse_files = apparent, allocated, sparse
            self._population = population
            self._next_progress = next_progress

    def _examine_batch(self, chunk: list[os.DirEntry[str]], prefix: str,
                       stack: MutableSequence[str], population: int
                       ) -> tuple[int, int, int, int, int, int, int] | None:
        """Examine a chunk of a directory's entries at once, the work per entry done by C loops
        (map, compress, sorted) rather than by Python code per entry. What this counts is
        what examining each entry in turn counts; a chunk this does not handle (an entry that
        cannot be examined, a file with several names, a special file, a directory on another
        filesystem with --one-file-system) is left to that, before anything is counted: None.
        Else (population, files, directories, symlinks, apparent bytes, allocated bytes, sparse
        files) of the chunk, the population counted on from `population`. Ctrl-C in the few
        statements after the first figure is stored (the file-size histogram) can leave the
        chunk in some figures and not in the others: the report says it is partial."""
        try:
            # entry.stat() follows a symlink; one not following them costs more per call.
            stats = (list(map(_LSTAT, chunk)) if any(map(_IS_SYMLINK, chunk))
                     else list(map(_STAT, chunk)))
        except OSError:
            return None
        modes = list(map(_MODE, stats))
        n = len(modes)
        # Regular files only (a leaf directory, where most files of a large tree are): every mode
        # from S_IFREG (0o100000) up to the next type (S_IFLNK, 0o120000), told by two C loops
        # (min, max) instead of a type per entry.
        if min(modes) >= _S_IFREG and max(modes) < _S_IFLNK:
            kinds, files, directories, symlinks, file_stats = modes, n, 0, 0, stats  # kinds unused
        else:
            kinds = list(map(_S_IFMT, modes))
            files, directories = kinds.count(_S_IFREG), kinds.count(_S_IFDIR)
            symlinks = kinds.count(_S_IFLNK)
            if files + directories + symlinks != n:
                return None
            file_stats = (stats if files == n
                          else list(compress(stats, map(_S_IFREG.__eq__, kinds))))
        if files and max(map(_LINKS, file_stats)) > 1:
            return None
        subdirectories: list[os.DirEntry[str]] = []
        if directories:
            is_directory = list(map(_S_IFDIR.__eq__, kinds))
            if (self.one_file_system and list(map(_DEVICE, compress(stats, is_directory))).count(
                    self._root_dev) != directories):
                return None
            subdirectories = list(compress(chunk, is_directory))
        blocks = list(map(_BLOCKS, stats))
        file_blocks = blocks if files == n else list(map(_BLOCKS, file_stats))
        file_sizes = list(map(_SIZE, file_stats))
        sparse = sum(map(gt, file_sizes, map(_BLOCK_BYTES, file_blocks)))
        self._file_sizes.add_sorted(sorted(file_sizes))
        stack.extend([prefix + entry.name for entry in subdirectories])
        sample = self._sample
        end = population + files + directories
        if population <= sample.next_index < end:
            offered = (list(compress(chunk, map(_FILE_OR_DIRECTORY.__contains__, kinds)))
                       if symlinks else chunk)
            room = sample.limit - len(sample.items)
            if room > 1:  # not full yet, it takes every item: all at once but the one filling it
                start = sample.next_index - population
                sample.fill([prefix + entry.name
                             for entry in offered[start:min(start + room - 1, end - population)]])
            while population <= sample.next_index < end:
                sample.take(prefix + offered[sample.next_index - population].name)
        return (end, files, directories, symlinks, sum(file_sizes), sum(blocks) * 512, sparse)

    def _count_special(self, kind: int) -> None:
        c = self._counts
        if kind == stat.S_IFBLK:
            c.block_devices += 1
        elif kind == stat.S_IFCHR:
            c.character_devices += 1
        elif kind == stat.S_IFIFO:
            c.fifos += 1
        else:
            c.sockets += 1

    def _read_xattrs(self) -> tuple[Xattrs, bool]:
        """Read the attributes of the sampled paths, and whether Ctrl-C cut that short (what was
        read is kept)."""
        paths = sorted(self._sample.items)  # ties name the same path whatever the walk's order
        per_inode: list[int] = []
        counts: list[int] = []
        largest, largest_name, largest_path = 0, None, None
        supported: bool | None = None
        c = self._counts
        interrupted = False
        try:
            for path in paths:
                try:
                    names = os.listxattr(path, follow_symlinks=False)
                except FileNotFoundError:
                    continue  # counted by the walk already; the sample is one smaller
                except OSError as err:
                    if err.errno in _NOT_SUPPORTED:
                        supported = supported or False
                    else:
                        c.unreadable_entries += 1
                        self._problem(f"cannot list attributes ({err.strerror})", path)
                    continue
                supported = True
                total = count = 0
                for name in names:
                    try:
                        value = os.getxattr(path, name, follow_symlinks=False)
                    except OSError:  # removed meanwhile, or a namespace we may not read
                        continue
                    name_bytes, value_bytes = stored_xattr_size(name, len(value))
                    total += name_bytes + value_bytes
                    count += 1
                    if len(value) > largest:
                        largest, largest_name, largest_path = len(value), name, path
                per_inode.append(total)
                counts.append(count)
        except KeyboardInterrupt:
            interrupted = True  # a partial sample is still a sample
        return Xattrs(
            supported=supported is not False,
            population=self._population,
            sample_size=len(per_inode),
            sample_limit=self.xattr_sample,
            inodes_with_xattrs=sum(1 for n in per_inode if n),
            bytes_per_inode=exact_distribution(per_inode),
            attributes_per_inode=exact_distribution(counts),
            largest_value=largest,
            largest_value_name=largest_name,
            largest_value_path=display_path(largest_path) if largest_path else None,
        ), interrupted

    def _report(self, top: str, partial: bool, xattrs: Xattrs) -> Profile:
        c = self._counts
        files = self._file_sizes.distribution()
        directories = self._directory_sizes.distribution()
        xattrs_known = xattrs.supported and xattrs.sample_size > 0
        answers = MeasuredAnswers(
            largest_directory_entries=directories.maximum,
            median_file_size=files.median,
            xattr_bytes_per_file=xattrs.bytes_per_inode.p90 if xattrs_known else None,
            xattrs_per_file=xattrs.attributes_per_inode.p90 if xattrs_known else None,
            largest_xattr_value=xattrs.largest_value if xattrs_known else None,
        )
        specials = SpecialFiles(block_devices=c.block_devices,
                                character_devices=c.character_devices, fifos=c.fifos,
                                sockets=c.sockets)
        return Profile(
            path=display_path(top),
            partial=partial,
            one_file_system=self.one_file_system,
            elapsed_seconds=round(time.monotonic() - self._started, 3),
            entries=c.entries,
            files=c.files,
            directories=c.directories,
            symlinks=c.symlinks,
            special_files=specials,
            inodes=c.files + c.directories + c.symlinks + c.block_devices + c.character_devices
            + c.fifos + c.sockets,
            apparent_bytes=c.apparent_bytes,
            allocated_bytes=c.allocated_bytes,
            hard_links=HardLinks(inodes=c.hard_link_inodes, extra_names=c.extra_names),
            sparse_files=c.sparse_files,
            file_sizes=files,
            directory_sizes=directories,
            largest_directories=[DirectorySize(path=display_path(p), entries=n)
                                 for n, p in self._largest.items()],
            xattrs=xattrs,
            problems=Problems(unreadable_directories=c.unreadable_directories,
                              unreadable_entries=c.unreadable_entries, vanished=c.vanished,
                              other_filesystems_skipped=c.other_filesystems_skipped,
                              examples=c.examples),
            answers=answers,
        )
