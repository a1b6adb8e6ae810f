"""Walk a tree and measure it, in memory that does not grow with the number of files.

Iterative (an explicit stack, so deep trees cannot overflow Python's recursion limit), never follows
a symlink below the root, and reads each directory as a stream with os.scandir. What it keeps:
fixed-size histograms, the N largest directories, a reservoir of at most `xattr_sample` paths, the
stack of directories still to visit (like du and find, it grows with the depth and the number of
subdirectories per directory, not with the number of files), and the inodes with several names
whose other names have not been seen yet (forgotten once they all have).

Extended attributes are read after the walk, from the reservoir: uniform over the files and
directories, exact when the tree has no more of them than the sample size.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field

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
from advisor.profile.stats import Largest, Log2Histogram, Reservoir, exact_distribution

DEFAULT_TOP_DIRECTORIES = 10
DEFAULT_XATTR_SAMPLE = 10_000
MAX_EXAMPLES = 20
#: How often (in entries) the progress callback is called; it decides itself whether to print.
PROGRESS_EVERY = 8192

#: XFS keeps the namespace as a flag, not in the name.
_NAMESPACES = ("user.", "trusted.", "security.", "system.")
#: POSIX ACLs: XFS stores them under these names, 12 bytes per entry on disk (8 in the xattr API).
_XFS_ACL_NAMES = {"system.posix_acl_access": "SGI_ACL_FILE",
                  "system.posix_acl_default": "SGI_ACL_DEFAULT"}
_NOT_SUPPORTED = {errno.ENOTSUP, errno.EOPNOTSUPP}


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

    def __post_init__(self) -> None:
        self._counts = _Counts()
        self._file_sizes = Log2Histogram()
        self._directory_sizes = Log2Histogram()
        self._largest: Largest[str] = Largest(self.top_directories)
        self._sample: Reservoir[str] = Reservoir(self.xattr_sample, self.seed)
        self._links_pending: dict[tuple[int, int], int] = {}
        self._started = 0.0
        #: Files and directories offered to the xattr sample so far.
        self._population = 0

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
            self._walk(top, st)
        except KeyboardInterrupt:
            partial = True
        xattrs, cut_short = self._read_xattrs()  # at most xattr_sample paths: quick
        return self._report(top, partial or cut_short, xattrs)

    def _walk(self, top: str, top_stat: os.stat_result) -> None:
        # The hot loop keeps its counters in local variables (cheaper than attribute updates once
        # per entry) and stores them in the finally at the end, Ctrl-C included.
        c = self._counts
        sample, pending = self._sample, self._links_pending
        counts, totals = self._file_sizes.counts, self._file_sizes.totals
        minimums, maximums = self._file_sizes.minimums, self._file_sizes.maximums
        directory_sizes, largest = self._directory_sizes, self._largest
        progress, before_examine = self.progress, self.before_examine
        started = self._started
        root_dev, one_fs = top_stat.st_dev, self.one_file_system
        s_ifreg, s_ifdir, s_iflnk = stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK

        seen, files, directories, symlinks = 1, 0, 1, 0
        apparent, allocated, sparse = 0, top_stat.st_blocks * 512, 0
        population = 0
        if sample.next_index == 0:
            sample.take(top)
        population = 1
        next_progress = PROGRESS_EVERY
        # The root may be a symlink the user named; below it, a directory swapped for a symlink
        # after it was examined is refused by O_NOFOLLOW.
        open_flags = os.O_RDONLY | os.O_DIRECTORY
        stack = [top]
        try:
            if progress is not None:
                progress(seen, 0.0)
            while stack:
                path = stack.pop()
                prefix = path if path.endswith("/") else path + "/"
                try:
                    fd = _open_directory(path, open_flags)
                except FileNotFoundError:
                    c.vanished += 1
                    self._problem("vanished", path)
                    continue
                except OSError as err:
                    c.unreadable_directories += 1
                    self._problem(f"unreadable ({err.strerror})", path)
                    continue
                finally:
                    open_flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                entries = 0
                try:
                    # Listing by descriptor makes entry.stat() an fstatat() relative to it: the
                    # kernel no longer resolves the whole path for every entry.
                    with os.scandir(fd) as listing:
                        for entry in listing:
                            entries += 1
                            if progress is not None and not entries & 0xFFFF:
                                progress(seen + entries, time.monotonic() - started)
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
                                if st.st_nlink > 1:
                                    key = (st.st_dev, st.st_ino)
                                    left = pending.get(key)
                                    if left is None:
                                        pending[key] = st.st_nlink - 1
                                        c.hard_link_inodes += 1
                                    else:
                                        c.extra_names += 1
                                        if left <= 1:
                                            del pending[key]
                                        else:
                                            pending[key] = left - 1
                                        continue
                                files += 1
                                size = st.st_size
                                blocks = st.st_blocks * 512
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
                if progress is not None and seen >= next_progress:
                    progress(seen, time.monotonic() - started)
                    next_progress = seen + PROGRESS_EVERY
        finally:
            c.entries, c.files, c.directories, c.symlinks = seen, files, directories, symlinks
            c.apparent_bytes, c.allocated_bytes, c.sparse_files = apparent, allocated, sparse
            self._population = population

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
        paths = self._sample.items
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
