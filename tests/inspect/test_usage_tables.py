"""The usage tables: loop devices found over the devices they are bound to, by their backing,
without maps of every device of the host."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from advisor.inspect.devices import find_device, inspect_devices, inspect_one
from advisor.inspect.usage import usage_tables
from advisor.system.sysroot import SysRoot
from tests.conftest import loop_device, release_loop, require_root_tools, sh
from tests.inspect.sysfs_builder import Dev, write_tree


def _fields(name: str, maj_min: str, kind: str = "disk") -> dict[str, str]:
    return {"name": name, "maj_min": maj_min, "kind": kind, "path": f"/dev/{name}"}


def test_a_loop_device_maps_only_its_backing(tmp_path: Path) -> None:
    """A loop device over one disk of a host with 60,000 devices: found over that disk, and the
    tables hold no map of the devices no loop device is bound to."""
    tree = write_tree(tmp_path, [
        Dev("sdb", 1 << 30, "8:16"),
        Dev("loop0", 1 << 30, "7:0", files={"loop/backing_file": "/dev/sdb"}),
        Dev("loop1", 1 << 30, "7:1", files={"loop/backing_file": "/srv/image.raw"}),
        Dev("loop2", 0, "7:2"),
    ])
    fields = [_fields(f"sd{i}x", f"65:{i}") for i in range(60_000)]
    fields[30_000:30_000] = [_fields("sdb", "8:16"), _fields("loop0", "7:0", "loop"),
                             _fields("loop1", "7:1", "loop"), _fields("loop2", "7:2", "loop")]
    root = SysRoot.open(tree)
    small = usage_tables(root, fields[30_000:30_004], users=False)  # what it imports, first
    assert small.loops == {"sdb": ["loop0"]}
    tracemalloc.start()
    try:
        tables = usage_tables(root, fields, users=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert tables.loops == {"sdb": ["loop0"]}
    # Maps of every device by number and by path would be several MiB; what it holds ~70 KiB.
    assert peak < 256 << 10, peak


def test_a_loop_device_over_a_loop_device_live(tmp_path: Path) -> None:
    """On this machine as root: a loop device bound over another (the kernel says its backing
    device number) is that one's loop, in a full scan and read alone."""
    require_root_tools("losetup")
    with loop_device(tmp_path / "under.img", 64 << 20) as under:
        over = sh("losetup", "--find", "--show", under).stdout.strip()
        try:
            root = SysRoot.open("/")
            assert root.live
            name = over.removeprefix("/dev/")
            assert find_device(inspect_devices(root), under).usage.loops == [name]
            alone = inspect_one(root, under)
            assert alone is not None and alone.usage.loops == [name]
        finally:
            release_loop(over, Path(under))
