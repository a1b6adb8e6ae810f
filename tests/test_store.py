"""The role's store.py on the controller: a host's payload is unpacked member by member (Debian
12's Python 3.11.2 has no tarfile extraction filters), and an archive that would write outside
the host's folder, through a link, or more than the limits is refused with the reason in the
host's error.txt, never written."""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fleet_hosts import ROLE_FILES, store
from tests.inspect.sysfs_builder import role_store

Add = Callable[[tarfile.TarFile], None]


def _file(name: str, data: bytes = b"x\n") -> Add:
    def add(tf: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return add


def _special(name: str, kind: bytes, linkname: str = "") -> Add:
    def add(tf: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type = kind
        info.linkname = linkname
        tf.addfile(info)
    return add


def _payload(*members: Add) -> str:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for add in members:
            add(tf)
    return base64.b64encode(buf.getvalue()).decode()


def _open(*members: Add) -> tarfile.TarFile:
    return tarfile.open(fileobj=io.BytesIO(base64.b64decode(_payload(*members))))


GOOD = (_special("./", tarfile.DIRTYPE), _file("./audit.rc", b"0\n"),
        _special("./capture/sys/devices/sda", tarfile.DIRTYPE),
        _special("./capture/sys/block/sda", tarfile.SYMTYPE, "../devices/sda"),
        _file("./capture/sys/devices/sda/size", b"2048\n"))


def test_a_capture_with_inner_links_is_stored_as_it_was(tmp_path: Path) -> None:
    assert store(tmp_path, "h", payload=_payload(*GOOD)) == "changed"
    host = tmp_path / "h"
    assert (host / "audit.rc").read_text() == "0\n"
    assert os.readlink(host / "capture/sys/block/sda") == "../devices/sda"
    assert (host / "capture/sys/block/sda/size").read_text() == "2048\n"
    assert oct((host / "audit.rc").stat().st_mode & 0o7777) == "0o644"
    assert store(tmp_path, "h", payload=_payload(*GOOD)) == "unchanged"


@pytest.mark.parametrize(("members", "why"), [
    ((_file("/etc/escaped"),), "absolute name"),
    ((_file("../escaped"),), "with '..'"),
    ((_file("a/../../escaped"),), "with '..'"),
    ((_special("link", tarfile.SYMTYPE, "/"), _file("link/escaped")), "link out of the folder"),
    ((_special("up", tarfile.SYMTYPE, ".."),), "link out of the folder"),
    # Each link inside on its own, the chain leads out: checked on the whole tree.
    ((_special("d", tarfile.DIRTYPE), _special("d/self", tarfile.SYMTYPE, "."),
      _special("d/out", tarfile.SYMTYPE, "self/../..")), "link out of the folder"),
    ((_special("d", tarfile.SYMTYPE, "e"), _special("e", tarfile.DIRTYPE), _file("d/f")),
     "not a folder"),
    ((_file("f"), _special("hard", tarfile.LNKTYPE, "f")), "only folders, regular files"),
    ((_special("dev", tarfile.CHRTYPE),), "only folders, regular files"),
    ((_special("fifo", tarfile.FIFOTYPE),), "only folders, regular files"),
    ((_file("twice"), _file("twice")), "seen twice"),
])
def test_an_unsafe_archive_is_refused_and_nothing_leaves_the_folder(
        tmp_path: Path, members: tuple[Add, ...], why: str) -> None:
    results = tmp_path / "results"
    assert store(results, "h", payload=_payload(*members)) == "changed"
    error = (results / "h" / "error.txt").read_text()
    assert error.startswith("results refused: ") and why in error, error
    assert sorted(p.name for p in (results / "h").iterdir()) == ["error.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]
    assert sorted(p.name for p in results.iterdir()) == ["h"]  # no work folder left


def test_limits_on_members_and_bytes(tmp_path: Path) -> None:
    store_py = role_store()
    (tmp_path / "a").mkdir()
    with (_open(*(_file(f"f{i}") for i in range(5))) as many,
          pytest.raises(store_py.Unsafe, match="more than 4 members")):
        store_py.extract(many, str(tmp_path / "a"), max_members=4)
    (tmp_path / "b").mkdir()
    with (_open(_file("f", b"y" * 100)) as big,
          pytest.raises(store_py.Unsafe, match="more than 99 bytes")):
        store_py.extract(big, str(tmp_path / "b"), max_bytes=99)
    assert not (tmp_path / "b" / "f").exists()


def test_a_payload_that_is_not_an_archive_is_refused(tmp_path: Path) -> None:
    assert store(tmp_path, "h", payload="bm90IGEgdGFyLmd6") == "changed"
    assert (tmp_path / "h" / "error.txt").read_text().startswith("results refused: ")


def test_store_runs_on_debian_python(tmp_path: Path) -> None:
    """The controller's Ansible Python on Debian 12 is /usr/bin/python3 (3.11.2)."""
    python = Path("/usr/bin/python3")
    if not python.exists():
        pytest.skip("no /usr/bin/python3")
    proc = subprocess.run([str(python), str(ROLE_FILES / "store.py"), str(tmp_path), "h"],
                          input=json.dumps({"payload": _payload(*GOOD)}), capture_output=True,
                          text=True, check=False)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "changed\n", "")
    assert (tmp_path / "h" / "capture/sys/block/sda/size").read_text() == "2048\n"
    assert sys.version_info >= (3, 11)


def test_a_proposal_that_differs_only_in_its_timings_is_unchanged(tmp_path: Path) -> None:
    def proposal(total: float, command: str) -> Add:
        doc = {"proposal": {"mkfs_command": command}, "extra": {"timings_ms": {"total": total}}}
        return _file("./proposals/sdb.out", json.dumps(doc).encode())

    assert store(tmp_path, "h", payload=_payload(*GOOD, proposal(1.5, "mkfs.xfs /dev/sdb"))) \
        == "changed"
    assert store(tmp_path, "h", payload=_payload(*GOOD, proposal(9.0, "mkfs.xfs /dev/sdb"))) \
        == "unchanged"
    assert store(tmp_path, "h", payload=_payload(*GOOD, proposal(9.0, "mkfs.xfs -f /dev/sdb"))) \
        == "changed"


def test_batch_stores_every_host_of_the_play_in_one_run(tmp_path: Path) -> None:
    results, incoming = tmp_path / "results", tmp_path / "results.incoming"
    incoming.mkdir()
    (incoming / "a.tar.gz").write_bytes(base64.b64decode(_payload(*GOOD)))

    def batch(check: bool = False, collected: bool = True) -> dict[str, object]:
        incoming.mkdir(exist_ok=True)
        if collected and not (incoming / "a.tar.gz").exists():
            (incoming / "a.tar.gz").write_bytes(base64.b64decode(_payload(*GOOD)))
        doc = {"incoming": str(incoming), "check": check, "collected": collected,
               "hosts": {"a": "", "b": "install failed: pip: ERROR: no wheel", "c": ""}}
        proc = subprocess.run([sys.executable, str(ROLE_FILES / "store.py"), str(results),
                               "--batch"], input=json.dumps(doc), capture_output=True,
                              text=True, check=True)
        assert not incoming.exists()
        return dict(json.loads(proc.stdout))

    assert batch(check=True) == {"changed": ["a", "b", "c"], "unchanged": 0, "kept": 0}
    assert not results.exists()
    assert batch() == {"changed": ["a", "b", "c"], "unchanged": 0, "kept": 0}
    assert (results / "a" / "capture/sys/block/sda/size").read_text() == "2048\n"
    assert (results / "b" / "error.txt").read_text() == "install failed: pip: ERROR: no wheel\n"
    assert (results / "c" / "error.txt").read_text().startswith("not reached")
    assert batch() == {"changed": [], "unchanged": 3, "kept": 0}
    assert batch(check=True) == {"changed": [], "unchanged": 3, "kept": 0}
    # A run that did not collect (--tags install): nothing fetched, and the hosts without news
    # keep their results; the one whose install failed has its error.
    assert batch(collected=False) == {"changed": [], "unchanged": 1, "kept": 2}
    assert (results / "a" / "capture/sys/block/sda/size").read_text() == "2048\n"
    assert (results / "c" / "error.txt").read_text().startswith("not reached")


def test_a_host_that_differs_only_in_when_it_collected_is_unchanged(tmp_path: Path) -> None:
    def stamp(when: str) -> Add:
        return _file("./collected_at", f"{when}\n".encode())

    assert store(tmp_path, "h", payload=_payload(*GOOD, stamp("2026-01-01T00:00:00Z"))) \
        == "changed"
    assert store(tmp_path, "h", payload=_payload(*GOOD, stamp("2026-01-02T00:00:00Z"))) \
        == "unchanged"
    # The time is the last collection's, though the host's results did not change.
    assert (tmp_path / "h" / "collected_at").read_text() == "2026-01-02T00:00:00Z\n"
    assert store(tmp_path, "h", payload=_payload(*GOOD[:-1], stamp("2026-01-03T00:00:00Z"))) \
        == "changed"
