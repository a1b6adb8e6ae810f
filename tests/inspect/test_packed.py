"""What a scan that writes its devices as it makes them (`devices --json`) holds between its read
and the last device: the devices' stacking.Graph, and their facts packed (parallel.pack), any
one of them made again alone, equal to what was read."""

from __future__ import annotations

import gc
import os
import select
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from advisor.inspect import devices, parallel
from advisor.inspect.specs import HELD_CLASSES, Held, make_fact
from advisor.inspect.sysblock import read_device
from advisor.system.sysroot import SysRoot
from tests.conftest import memory_folder, require
from tests.inspect.test_fixture_hosts import _host
from tests.inspect.test_parallel import _generator


@pytest.fixture(scope="module")
def hosts() -> Iterator[dict[str, Path]]:
    """The hand-written host (md arrays, LVM, dm-crypt, partitions, garbage attributes) and a
    SAN host of 128 LUNs over 4 paths (640 entries: two processes read it)."""
    with memory_folder("hand") as hand, memory_folder("san") as san:
        assert _generator().generate(san, 128, 4) == 640 > parallel.MIN_ENTRIES
        yield {"hand": _host(hand), "san": san}


def _read(root: Path) -> list[dict[str, Any]]:
    sysroot = SysRoot.open(root)
    hosts: dict[str, str] = {}
    return [f for name in sysroot.listdir("sys/block")
            for f in read_device(sysroot, name, None, hosts)]


def _plain(f: dict[str, Any]) -> dict[str, Any]:
    """A device's fields, each fact as a Fact (equal when their values are)."""
    assert type(f) is Held
    return f.fields()


@pytest.mark.parametrize("host", ["hand", "san"])
def test_each_packed_device_is_made_again_alone(hosts: dict[str, Path], host: str) -> None:
    """Devices are made in stacking order, not the order they were read: each one is unpacked
    alone (the last first, its piece's header read once), equal to the device read; unpack
    gives them all."""
    read = _read(hosts[host])
    assert len(read) > 8
    for start in range(0, len(read), 64):
        piece = read[start:start + 64]
        packed = parallel.pack(piece, HELD_CLASSES)
        headers: parallel.Headers = {}
        alone = [parallel.unpack_one(packed, k, HELD_CLASSES, make_fact, headers, start)
                 for k in reversed(range(len(piece)))][::-1]
        assert [_plain(f) for f in alone] == [_plain(f) for f in piece]
        assert [_plain(f) for f in parallel.unpack(packed, HELD_CLASSES, make_fact)] \
            == [_plain(f) for f in piece]
    assert parallel.unpack(parallel.pack([], HELD_CLASSES), HELD_CLASSES, make_fact) == []


def _held_by_scan(root: Path, packed: bool) -> tuple[int, int]:
    """The bytes a scan of `root` holds once read (its stacking pass done), and its devices."""
    sysroot = SysRoot.open(root)
    gc.collect()
    tracemalloc.start()
    try:
        scan = devices._Scan(sysroot, probe=True, needed=None, probes_used=[], packed=packed)
        scan.pass_up()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return held, len(scan.graph)


def test_a_packed_scan_holds_a_fraction_of_the_facts_it_read(hosts: dict[str, Path]) -> None:
    """On a SAN host a scan that keeps each device's facts packed holds under a third of what
    it would holding them as read, and under 500 bytes a device (~360 here, ~230 at 100,000
    devices: the names, links and few fields the stacking pass reads, in the scan's graph, and
    ~65 bytes of packed facts; with a Python object per device it was ~610 here)."""
    packed, count = _held_by_scan(hosts["san"], packed=True)  # first: what a scan reads once
    unpacked, same = _held_by_scan(hosts["san"], packed=False)  # is counted against it
    assert count == same == 640
    assert packed < unpacked / 3, (packed, unpacked)
    assert packed / count < 500, packed / count


def _rendered(root: Path) -> bytes:
    """Each device's JSON, a line each (however the devices were cut into pieces)."""
    return b"\n".join(devices.iter_rendered(SysRoot.open(root),
                                            lambda d: d.model_dump_json().encode(),
                                            separator=b"\n"))


def test_a_piece_from_the_read_s_child_that_does_not_unpack_is_read_again(
        hosts: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """`devices --json` unpacks the child's pieces only when it makes their devices, after the
    read: one that does not unpack then (here every piece the child packed after its first) is
    read again, and the document is the same as with the child's pieces whole."""
    require(parallel.usable_cpus() >= 2, "needs two CPUs")
    whole = _rendered(hosts["san"])
    real, parent, garbled = parallel.pack, os.getpid(), []
    # The parent reads its first device once the child has packed three pieces (or after a
    # minute): on a busy machine a late child could otherwise get one piece or none.
    packed_r, packed_w = os.pipe()
    real_read, waited = devices.read_device, []

    def garbling(devices: list[dict[str, Any]], classes: Any) -> parallel.Packed:
        packed = real(devices, classes)
        if os.getpid() == parent:
            return packed
        garbled.append(1)  # the child's own copy of the list: counts only there
        os.write(packed_w, b"p")
        return packed if len(garbled) == 1 else (b"not deflated", b"", b"")

    def after_the_child(root: SysRoot, name: str, *rest: Any) -> list[dict[str, Any]]:
        while os.getpid() == parent and len(waited) < 3 \
                and select.select([packed_r], [], [], 60)[0]:
            waited.append(os.read(packed_r, 1))
        return real_read(root, name, *rest)

    monkeypatch.setattr(parallel, "pack", garbling)
    monkeypatch.setattr(devices, "read_device", after_the_child)
    read_again: list[int] = []
    real_again = devices._Scan._read_again

    def counted(scan: devices._Scan, at: int) -> list[dict[str, Any]]:
        read_again.append(at)
        return real_again(scan, at)

    monkeypatch.setattr(devices._Scan, "_read_again", counted)
    monkeypatch.setattr(parallel, "RENDER_CHUNK", 10**6)  # made in this process: counted here
    try:
        assert _rendered(hosts["san"]) == whole
    finally:
        os.close(packed_r)
        os.close(packed_w)
    assert len(read_again) >= 2, read_again  # the child packed more than one piece


def test_a_piece_pack_cannot_carry_is_kept_as_read(
        hosts: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A device field pack cannot carry (TypeError) keeps that piece as read, not packed: the
    scan goes on, the document the same."""
    whole = _rendered(hosts["hand"])

    def refusing(devices: list[dict[str, Any]], classes: Any) -> parallel.Packed:
        raise TypeError("cannot carry")

    monkeypatch.setattr(parallel, "pack", refusing)
    assert _rendered(hosts["hand"]) == whole
