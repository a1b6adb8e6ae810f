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
                tf.extractall(new, filter="data")
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
