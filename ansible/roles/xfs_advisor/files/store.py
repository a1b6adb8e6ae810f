"""Store one host's results on the controller (the xfs_advisor role's tasks/store.yml).

usage: store.py RESULTS_DIR HOST < {"payload": base64 tar.gz, "error": message}

RESULTS_DIR/HOST is replaced by the unpacked payload (or, for a host that failed before it could
collect, by error.txt alone) only when that differs from what is there: prints "changed" or
"unchanged". Standard library only: it runs with the controller's Ansible Python.
"""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
from collections.abc import Iterator

#: What one host's payload may unpack to. A capture is small files (a SAN host's is tens of MiB
#: of data in a few hundred thousand files); a payload beyond this is refused before anything is
#: written (a 1.4 MB gzip bomb used to unpack to 1.1 GiB here).
MAX_UNPACKED_BYTES = 256 << 20
MAX_MEMBERS = 1_000_000


def tree(top: str) -> dict[str, tuple[str, bytes]]:
    """Every entry under `top` (symlinks not followed: a capture of sysfs is full of loops), by
    relative path: ("dir", b""), ("link", target) or ("file", content)."""
    found: dict[str, tuple[str, bytes]] = {}
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, top)
            if os.path.islink(path):
                found[rel] = ("link", os.fsencode(os.readlink(path)))
            elif os.path.isdir(path):
                found[rel] = ("dir", b"")
            else:
                with open(path, "rb") as f:
                    found[rel] = ("file", f.read())
    return found


def _inside(path: str) -> bool:
    """True for a relative path that stays inside the folder it is relative to."""
    norm = os.path.normpath(path)
    return not os.path.isabs(path) and norm != ".." and not norm.startswith("../")


def checked_members(tf: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    """Every member, checked before anything is written: regular files, folders and symlinks
    only, every name and link target inside the host's folder, at most MAX_MEMBERS members and
    MAX_UNPACKED_BYTES of file data (ValueError otherwise). The same as Python's "data"
    extraction filter, which the Pythons Ansible runs on (3.11.2 in Debian 12) may lack."""
    total = 0
    for count, member in enumerate(tf, start=1):
        if count > MAX_MEMBERS:
            raise ValueError(f"more than {MAX_MEMBERS} files")
        if not (member.isfile() or member.isdir() or member.issym()):
            raise ValueError(f"{member.name!r} is not a file, folder or symlink")
        if not _inside(member.name):
            raise ValueError(f"{member.name!r} is outside the host's folder")
        if member.issym() and not _inside(os.path.join(os.path.dirname(member.name),
                                                       member.linkname)):
            raise ValueError(f"{member.name!r} links outside the host's folder")
        total += member.size if member.isfile() else 0
        if total > MAX_UNPACKED_BYTES:
            raise ValueError(f"more than {MAX_UNPACKED_BYTES >> 20} MiB unpacked")
        member.mode = (member.mode & 0o755) | (0o700 if member.isdir() else 0o600)
        member.uid = member.gid = 0
        member.uname = member.gname = ""
        yield member


def main() -> int:
    results, host = sys.argv[1], sys.argv[2]
    if not host or host in (".", "..") or "/" in host:
        print(f"store.py: not a host name for a folder: {host!r}", file=sys.stderr)
        return 2
    doc = json.load(sys.stdin)
    os.makedirs(results, exist_ok=True)
    new = tempfile.mkdtemp(prefix=f".{host}.", dir=results)
    try:
        if doc.get("payload"):
            data = base64.b64decode(doc["payload"])
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tf:
                try:
                    members = list(checked_members(tf))
                except ValueError as err:
                    print(f"store.py: refusing the payload of {host}: {err}", file=sys.stderr)
                    return 2
                tf.extractall(new, members=members, numeric_owner=True)
        else:
            with open(os.path.join(new, "error.txt"), "w", encoding="utf-8") as f:
                f.write((doc.get("error") or "no results") + "\n")
        os.chmod(new, 0o755)
        dest = os.path.join(results, host)
        if os.path.isdir(dest) and tree(new) == tree(dest):
            print("unchanged")
            return 0
        old = None
        if os.path.lexists(dest):
            old = tempfile.mkdtemp(prefix=f".{host}.old.", dir=results)
            os.rename(dest, os.path.join(old, "x"))
        os.rename(new, dest)
        new = ""
        if old:
            shutil.rmtree(old)
        print("changed")
        return 0
    finally:
        if new:
            shutil.rmtree(new, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
