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
