"""Store one host's results on the controller (the xfs_advisor role's tasks/store.yml).

usage: store.py RESULTS_DIR --batch < {"incoming": DIR, "hosts": {HOST: error}, "check": bool,
                                       "collected": bool}
       store.py RESULTS_DIR HOST < {"payload": base64 tar.gz, "error": message}

The first form is the role's: every host of the play in one run, each payload read from
DIR/HOST.tar.gz (fetched from the host); the second stores one host. RESULTS_DIR/HOST is replaced
by the unpacked payload (or, for a host that failed before it could collect, by error.txt alone)
only when that differs from what is there; collected_at (when the host collected) is not a
difference: it is brought up to date in place, and the host stays unchanged. Standard library only: it runs with the
controller's Ansible Python, which on Debian 12 is 3.11.2, older than tarfile's extraction
filters: `extract` below unpacks member by member itself (the project's tests and scripts unpack
their captures with it too).
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile

#: Limits of one payload: a host's capture is a few thousand small files.
MAX_MEMBERS = 200_000
MAX_BYTES = 512 << 20


class Unsafe(Exception):
    """A member of an archive that `extract` refuses to write."""


def _inside(rel: str) -> bool:
    """Whether a relative path, read lexically, stays inside the folder it is relative to."""
    norm = os.path.normpath(rel)
    return not os.path.isabs(rel) and norm != ".." and not norm.startswith("../")


def extract(tf: tarfile.TarFile, dest: str, *, max_members: int = MAX_MEMBERS,
            max_bytes: int = MAX_BYTES) -> None:
    """Every member of `tf` under the existing folder `dest`, one at a time: folders, regular
    files (mode 0644 or 0755, no owner kept) and symbolic links, nothing else (no hard links,
    devices or FIFOs). A name that is absolute or holds `..`, a member written through a link, a
    name seen twice, a link whose target leaves `dest`, more than `max_members` members or
    `max_bytes` of file data: Unsafe, with what was written left for the caller to remove."""
    root = os.path.realpath(dest)
    total = 0
    links: list[str] = []
    for count, member in enumerate(tf, start=1):
        if count > max_members:
            raise Unsafe(f"more than {max_members} members")
        name = member.name
        parts = [p for p in name.split("/") if p not in ("", ".")]
        if name.startswith("/") or ".." in parts:
            raise Unsafe(f"{name!r}: an absolute name or one with '..'")
        if not parts:
            if member.isdir():
                continue  # the archive's own top folder ("./")
            raise Unsafe(f"{name!r}: not a name")
        if not (member.isdir() or member.isreg() or member.issym()):
            raise Unsafe(f"{name!r}: only folders, regular files and symbolic links are taken")
        folder = root
        for part in parts[:-1]:  # never through a link: every parent is a real folder
            folder = os.path.join(folder, part)
            try:
                os.mkdir(folder, 0o755)
            except FileExistsError:
                if os.path.islink(folder) or not os.path.isdir(folder):
                    raise Unsafe(f"{name!r}: under something that is not a folder") from None
        path = os.path.join(folder, parts[-1])
        try:
            if member.isdir():
                try:
                    os.mkdir(path, 0o755)
                except FileExistsError:
                    if os.path.islink(path) or not os.path.isdir(path):
                        raise Unsafe(f"{name!r}: seen twice") from None
            elif member.issym():
                target = member.linkname
                if not _inside(os.path.join(*parts[:-1], target) if parts[:-1] else target):
                    raise Unsafe(f"{name!r}: a link out of the folder ({target!r})")
                os.symlink(target, path)
                links.append(path)
            else:
                total += member.size
                if total > max_bytes:
                    raise Unsafe(f"more than {max_bytes} bytes of files")
                source = tf.extractfile(member)
                if source is None:
                    raise Unsafe(f"{name!r}: no data")
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                fd = os.open(path, flags, 0o755 if member.mode & 0o100 else 0o644)
                with os.fdopen(fd, "wb") as out:
                    shutil.copyfileobj(source, out)
        except FileExistsError:
            raise Unsafe(f"{name!r}: seen twice") from None
    # Each link checked on the whole tree: a chain of links that are each inside may lead out.
    for link in links:
        real = os.path.realpath(link)
        if real != root and not real.startswith(root + os.sep):
            raise Unsafe(f"{os.path.relpath(link, root)!r}: a link out of the folder")


def tree(top: str) -> dict[str, tuple[str, bytes]]:
    """Every entry under `top` (symlinks not followed: a capture of sysfs is full of loops), by
    relative path: ("dir", b""), ("link", target) or ("file", content), as compared."""
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
                    found[rel] = ("file", _without_timings(rel, f.read()))
    return found


#: When the host collected: new on every run, so not a change of the host's results.
STAMP = "collected_at"


def _compared(found: dict[str, tuple[str, bytes]]) -> dict[str, tuple[str, bytes]]:
    """A tree as compared for a change: without collected_at."""
    return {rel: entry for rel, entry in found.items() if rel != STAMP}


def _without_timings(rel: str, content: bytes) -> bytes:
    """A proposal's output less its timings (extra.timings_ms), which differ on every run: a
    host with nothing else changed is unchanged."""
    if not (rel.startswith("proposals" + os.sep) and rel.endswith(".out")):
        return content
    try:
        doc = json.loads(content)
        doc["extra"].pop("timings_ms")
    except (ValueError, KeyError, TypeError, AttributeError):
        return content
    return json.dumps(doc, sort_keys=True).encode()


def store(results: str, host: str, data: bytes | None, error: str, *,
          check: bool = False) -> bool:
    """RESULTS/HOST from a payload (tar.gz bytes) or, without one, an error.txt; replaced only
    when it differs from what is there. Whether it changed (with `check`: would change; nothing
    is written)."""
    new = tempfile.mkdtemp(prefix=f".{host}.", dir=results)
    try:
        if data:
            try:
                with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tf:
                    extract(tf, new)
            except (Unsafe, tarfile.TarError, EOFError, OSError) as err:
                # The host's results are refused, and the report says why.
                shutil.rmtree(new)
                os.mkdir(new)
                with open(os.path.join(new, "error.txt"), "w", encoding="utf-8") as f:
                    f.write(f"results refused: {err}\n")
        else:
            with open(os.path.join(new, "error.txt"), "w", encoding="utf-8") as f:
                f.write((error or "no results") + "\n")
        os.chmod(new, 0o755)
        dest = os.path.join(results, host)
        if os.path.isdir(dest) and _compared(tree(new)) == _compared(tree(dest)):
            stamp = os.path.join(new, STAMP)
            if not check and os.path.isfile(stamp) and not os.path.islink(stamp):
                os.replace(stamp, os.path.join(dest, STAMP))
            return False
        if check:
            return True
        old = None
        if os.path.lexists(dest):
            old = tempfile.mkdtemp(prefix=f".{host}.old.", dir=results)
            os.rename(dest, os.path.join(old, "x"))
        os.rename(new, dest)
        new = ""
        if old:
            shutil.rmtree(old)
        return True
    finally:
        if new:
            shutil.rmtree(new, ignore_errors=True)


def _host_name(host: str) -> bool:
    return bool(host) and host not in (".", "..") and "/" not in host and "\0" not in host


def batch(results: str, doc: dict[str, object]) -> int:
    """Every host of the play in one run: doc = {"incoming": folder of HOST.tar.gz fetched from
    the hosts, "hosts": {HOST: error message or ""}, "check": bool (say what would change, store
    nothing), "collected": bool (default true: the run collected)}. A host with a payload is
    stored from it, one without from its error (or "not reached"). In a run that did not collect
    (the playbook with --tags install), a host with neither keeps what is stored: its last
    results are still the truth, not "not reached". Prints {"changed": [HOST...], "unchanged": N,
    "kept": N}; the incoming folder is removed."""
    incoming = str(doc.get("incoming") or "")
    hosts = doc.get("hosts")
    if not isinstance(hosts, dict) or not incoming:
        print("store.py: the batch document needs 'incoming' and 'hosts'", file=sys.stderr)
        return 2
    changed: list[str] = []
    unchanged = kept = 0
    check = bool(doc.get("check"))
    collected = doc.get("collected", True) is not False
    try:
        if check and not os.path.isdir(results):  # nothing stored yet: every host would change
            new = sorted(h for h, e in hosts.items() if collected or e)
            print(json.dumps({"changed": new, "unchanged": 0, "kept": len(hosts) - len(new)}))
            return 0
        os.makedirs(results, exist_ok=True)
        for host, error in sorted(hosts.items()):
            if not _host_name(host):
                print(f"store.py: not a host name for a folder: {host!r}", file=sys.stderr)
                return 2
            data = None
            try:
                with open(os.path.join(incoming, f"{host}.tar.gz"), "rb") as f:
                    data = f.read(MAX_BYTES + 1)
            except FileNotFoundError:
                pass
            if data is not None and len(data) > MAX_BYTES:
                data, error = None, f"results refused: more than {MAX_BYTES} bytes"
            why = str(error or "") if not data else ""
            if not data and not why and not collected:
                kept += 1
                continue
            if store(results, host, data, why or "not reached: unreachable, or failed before the "
                     "role ran", check=check):
                changed.append(host)
            else:
                unchanged += 1
    finally:
        shutil.rmtree(incoming, ignore_errors=True)
    print(json.dumps({"changed": changed, "unchanged": unchanged, "kept": kept}))
    return 0


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[2] == "--batch":
        return batch(sys.argv[1], json.load(sys.stdin))
    results, host = sys.argv[1], sys.argv[2]
    if not _host_name(host):
        print(f"store.py: not a host name for a folder: {host!r}", file=sys.stderr)
        return 2
    doc = json.load(sys.stdin)
    os.makedirs(results, exist_ok=True)
    data = b""
    if doc.get("payload"):
        try:
            data = base64.b64decode(doc["payload"], validate=True)
        except binascii.Error as err:
            doc["error"] = f"results refused: {err}"
    print("changed" if store(results, host, data, doc.get("error") or "") else "unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
