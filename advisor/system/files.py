"""The user's own files (workload answers, device facts, the calibration store): read and written
as regular files only, so that a FIFO, a device node or a huge file named by mistake (or by
someone else) can neither hang the advisor nor be replaced by it.

Reading opens with O_NONBLOCK after a stat, so a FIFO is refused instead of waiting for a writer;
writing goes to a temporary file in the target's own folder, fsync'd, then renamed over the final
path (a symlink is written through to the regular file it names, unless it is someone else's in a
sticky world-writable folder, as fs.protected_symlinks rules), keeping the old file's mode and, as
root, its owner.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from advisor.errors import BadInput

#: Largest answers, device or calibration file read (they are a few KiB; a bigger one is a mistake).
MAX_TEXT_BYTES = 1 << 20

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR,
          "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _why(err: OSError) -> str:
    return err.strerror or str(err)


def read_text(path: str | os.PathLike[str], what: str, limit: int = MAX_TEXT_BYTES, *,
              follow_symlinks: bool = True, errors: str = "strict") -> str:
    """The UTF-8 text of a regular file of at most `limit` bytes; BadInput naming `what` and the
    path for anything else (missing, a FIFO or device, too large, not UTF-8 unless `errors`
    says how to decode it). Without `follow_symlinks`, a symlink is refused too (files that
    came from another machine, which could name /dev/zero or a secret of this one)."""
    p = os.fspath(path)
    try:
        mode = (os.stat if follow_symlinks else os.lstat)(p).st_mode
        if stat.S_ISLNK(mode):
            raise BadInput(f"{what} {p} is a symlink, not a regular file")
        if not stat.S_ISREG(mode):  # before open: opening a FIFO waits, a tape device rewinds
            raise BadInput(f"{what} {p} is {_kind(mode)}, not a regular file")
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
        fd = os.open(p, flags if follow_symlinks else flags | os.O_NOFOLLOW)
    except OSError as err:
        raise BadInput(f"cannot read {what} {p}: {_why(err)}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # replaced between the stat and the open
            raise BadInput(f"{what} {p} is {_kind(mode)}, not a regular file")
        data = os.read(fd, limit + 1)
        while len(data) <= limit and (chunk := os.read(fd, limit + 1 - len(data))):
            data += chunk
    except OSError as err:
        raise BadInput(f"cannot read {what} {p}: {_why(err)}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise BadInput(f"{what} {p} is larger than {limit >> 10} KiB: not a {what}")
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as err:
        raise BadInput(f"{what} {p} is not UTF-8 text (byte {err.start})") from None


#: Symlinks followed at most, as the kernel's own limit (ELOOP).
_MAX_LINKS = 40


def _refuse_planted_link(p: Path, what: str) -> None:
    """BadInput for a symlink the kernel's fs.protected_symlinks would not follow: one in a
    sticky world-writable folder (/tmp, /var/tmp) owned neither by us nor by the folder's owner.
    Someone else's link there is a trap: `fleet -o /tmp/report.md` as root replaced the
    root-owned file it named. (The writes below resolve the path themselves, so the kernel's
    own check never applies.) Each link of a chain is checked."""
    path = Path(os.path.abspath(p))
    for _ in range(_MAX_LINKS):
        try:
            link = os.lstat(path)
            if not stat.S_ISLNK(link.st_mode):
                return
            folder = os.stat(path.parent)
            target = os.readlink(path)
        except OSError:
            return  # nothing (more) to follow: the checks after this one say why
        sticky_shared = folder.st_mode & stat.S_ISVTX and folder.st_mode & stat.S_IWOTH
        if sticky_shared and link.st_uid not in (os.geteuid(), folder.st_uid):
            raise BadInput(f"cannot write {what} {p}: {path} is a symlink owned by uid "
                           f"{link.st_uid} in the shared folder {path.parent}, which "
                           "fs.protected_symlinks would not follow either (remove it, or name "
                           "the file it points to)")
        path = Path(os.path.normpath(path.parent / target))


def write_target(path: str | os.PathLike[str], what: str) -> Path:
    """The regular file a write to `path` lands on (symlinks resolved), checked before any work is
    done: an existing target must be a regular file, a new one needs an existing folder. A
    dangling symlink is refused rather than followed to wherever it points, and so is someone
    else's symlink in a sticky world-writable folder (_refuse_planted_link)."""
    p = Path(path)
    _refuse_planted_link(p, what)
    final = Path(os.path.realpath(p))
    try:
        st = os.stat(final)
    except FileNotFoundError:
        if p.is_symlink():
            raise BadInput(f"cannot write {what} {p}: it is a symlink to the missing {final}") \
                from None
        if not final.parent.is_dir():
            raise BadInput(f"cannot write {what} {p}: {final.parent} is not a directory") from None
        return final
    except OSError as err:
        raise BadInput(f"cannot write {what} {p}: {_why(err)}") from None
    if not stat.S_ISREG(st.st_mode):
        raise BadInput(f"cannot write {what} {p}: it is {_kind(st.st_mode)}, not a regular file")
    return final


def _new_file_mode() -> int:
    """0666 less the umask: what open(O_CREAT) would have given a new file."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def write_text_atomically(path: str | os.PathLike[str], text: str, what: str) -> Path:
    """Replace the regular file at `path` (or create it) with `text` in one rename: readers see
    the old or the new content, never a part. Returns the file written (symlinks resolved)."""
    final = write_target(path, what)
    try:
        old = os.stat(final)
    except FileNotFoundError:
        old = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    except OSError as err:
        raise BadInput(f"cannot write {what} {path}: {_why(err)}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
            if old and os.geteuid() == 0:  # before the mode: a chown clears set-id bits
                os.fchown(f.fileno(), old.st_uid, old.st_gid)
            os.fchmod(f.fileno(), stat.S_IMODE(old.st_mode) if old else _new_file_mode())
        os.replace(tmp, final)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise BadInput(f"cannot write {what} {path}: {_why(err)}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _sync_folder(final.parent)
    return final


def _sync_folder(folder: Path) -> None:
    """fsync the folder, so that the rename itself survives a crash."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


#: Opening a folder on the way to a file in an OwnFolder: never through a symlink.
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class OwnFolder:
    """A folder this process writes a tree into (a capture) through a directory fd: every file is
    created with O_CREAT|O_EXCL|O_NOFOLLOW and every folder on the way is opened with O_NOFOLLOW,
    relative to that fd, so nothing written lands outside it, whatever appears in it or in its
    path meanwhile. The folder itself is new, or an empty one owned by us that no one else may
    write into: root capturing into /tmp/x that another user made (and fills with links while
    the capture runs) would otherwise write through those links anywhere."""

    def __init__(self, fd: int, path: Path, what: str) -> None:
        self.fd = fd
        self.path = path
        self.what = what

    @classmethod
    def make(cls, path: Path, what: str) -> tuple[OwnFolder, bool]:
        """Open `path` (making it, and its parents, when missing) and check that it is ours and
        empty; BadInput otherwise. Also whether this made it."""
        _refuse_planted_link(path, what)
        made = False
        try:
            try:
                os.mkdir(path, 0o755)
                made = True
            except FileNotFoundError:
                path.parent.mkdir(parents=True, exist_ok=True)
                os.mkdir(path, 0o755)
                made = True
            except FileExistsError:
                pass  # checked below, through the fd
        except OSError as err:
            raise BadInput(f"cannot make {what} {path}: {_why(err)}") from None
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except NotADirectoryError:
            raise BadInput(f"{what} {path} is not a folder: give a new or empty folder") from None
        except OSError as err:
            raise BadInput(f"cannot open {what} {path}: {_why(err)}") from None
        try:
            st = os.fstat(fd)
            if st.st_uid != os.geteuid():
                raise BadInput(f"{what} {path} belongs to uid {st.st_uid}, not to you: "
                               "give a new folder (someone else's could hold links to anywhere)")
            if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                raise BadInput(f"{what} {path} can be written by others (mode "
                               f"{stat.S_IMODE(st.st_mode):o}): give a new folder, or one only "
                               "you can write into")
            if os.listdir(fd):
                raise BadInput(f"{what} {path} is not empty: give a new or empty folder")
            owner_rwx = stat.S_IWUSR | stat.S_IXUSR
            if st.st_mode & owner_rwx != owner_rwx and os.geteuid() != 0:
                raise BadInput(f"cannot write into {what} {path}: not writable")
        except OSError as err:
            os.close(fd)
            raise BadInput(f"cannot open {what} {path}: {_why(err)}") from None
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, path, what), made

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> OwnFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _parts(self, rel: str) -> list[str]:
        """The names of `rel`, refused when one would leave the folder (absolute, `..`)."""
        parts = [p for p in rel.split("/") if p and p != "."]
        if rel.startswith("/") or ".." in parts or not parts:
            raise BadInput(f"refusing to write {rel!r} into {self.what} {self.path}: "
                           "it names a place outside it")
        return parts

    def _folder(self, names: list[str], make: bool) -> int:
        """A new fd of the folder `names` below ours (made when `make`), never through a link."""
        fd = os.dup(self.fd)
        try:
            for name in names:
                if make:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o755, dir_fd=fd)
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def makedirs(self, rel: str) -> None:
        """Make the folder `rel` and those on the way (those already there are kept)."""
        os.close(self._folder(self._parts(rel), make=True))

    def lexists(self, rel: str) -> bool:
        """Whether `rel` is there (a link counts as itself, not as what it names)."""
        *up, name = self._parts(rel)
        try:
            fd = self._folder(up, make=False)
        except (FileNotFoundError, NotADirectoryError):
            return False
        try:
            os.lstat(name, dir_fd=fd)
            return True
        except (FileNotFoundError, NotADirectoryError):
            return False
        finally:
            os.close(fd)

    def symlink(self, rel: str, target: str) -> None:
        """Make `rel` a symlink holding `target` (only stored: nothing here follows it)."""
        *up, name = self._parts(rel)
        fd = self._folder(up, make=True)
        try:
            os.symlink(target, name, dir_fd=fd)
        finally:
            os.close(fd)

    def write(self, rel: str, data: str | bytes) -> None:
        """Create the file `rel` (it must not exist yet) holding `data` (text read with
        errors="surrogateescape" goes back to its own bytes)."""
        *up, name = self._parts(rel)
        fd = self._folder(up, make=True)
        try:
            out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                          | os.O_CLOEXEC, 0o644, dir_fd=fd)
        finally:
            os.close(fd)
        with os.fdopen(out, "wb") as f:
            f.write(data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data)

    def remove_if_empty(self) -> None:
        """Remove the folder while it is still empty (a capture that failed before writing)."""
        with contextlib.suppress(OSError):
            if not os.listdir(self.fd):
                os.rmdir(self.path)
