"""On this machine, as root: a loop device the test makes, and capture then replay of the host."""

from __future__ import annotations

import json
from pathlib import Path

from advisor.inspect.capture import capture
from advisor.inspect.devices import find_device, inspect_devices, iter_rendered
from advisor.inspect.probes import probe_live
from advisor.system.sysroot import SysRoot
from tests.conftest import loop_device, require_root_tools, sh


def test_4k_rotational_loop_device_is_reported(tmp_path: Path) -> None:
    require_root_tools("losetup", "mkfs.xfs")
    with loop_device(tmp_path / "4k.img", 2 << 30, sector=4096) as dev:
        name = dev.removeprefix("/dev/")
        Path(f"/sys/block/{name}/queue/rotational").write_text("1")
        sh("mkfs.xfs", "-q", "-K", dev)
        inv = inspect_devices(SysRoot.open("/"))
        loop = find_device(inv, dev)
        assert (loop.kind, loop.name, loop.path) == ("loop", name, dev)
        assert loop.logical_sector.value == 4096 and loop.physical_sector.value == 4096
        assert loop.rotational.value is True and loop.rotational.raw == "1"
        assert loop.size_bytes.value == 2 << 30
        assert loop.usage.probed and [s.value for s in loop.usage.signatures] == ["xfs"]
        assert loop.usage.fstype.value == "xfs" and loop.usage.fstype.source == "blkid"
        assert inv.live and inv.sysroot == "/"
    assert not Path(f"/sys/block/{name}/loop").exists()  # detached


def test_capture_then_replay_equals_live(tmp_path: Path) -> None:
    require_root_tools("losetup")
    with loop_device(tmp_path / "disk.img", 1 << 30) as dev:
        sh("mkswap", dev)
        result = capture(SysRoot.open("/"), tmp_path / "capture")
        replay = inspect_devices(SysRoot.open(tmp_path / "capture"))
        live = inspect_devices(SysRoot.open("/"))
    assert result.inventory.live and not replay.live
    differing = {"sysroot", "live"}  # documented: where it was read from
    assert replay.model_dump(exclude=differing) == result.inventory.model_dump(exclude=differing)
    loop = find_device(replay, dev)
    assert loop.usage.probed and [s.value for s in loop.usage.signatures] == ["swap"]
    # A second live run agrees on the devices nobody else touches meanwhile (the root disk).
    stable = [d.name for d in live.devices if d.kind not in ("loop", "part")]
    assert stable
    for name in stable:
        assert find_device(replay, name).model_dump() == find_device(live, name).model_dump()
    assert (tmp_path / "capture" / "xfs-advisor-probes.json").is_file()
    assert sum(1 for _ in (tmp_path / "capture").rglob("*")) < 2000  # only what was read


def test_devices_json_probes_each_device_as_it_is_made_and_keeps_none(tmp_path: Path) -> None:
    """The streamed inventory (`devices --json`) asks libblkid of each device when it makes it
    and keeps no result after: the same answers as the inventory, which keeps them all."""
    require_root_tools("losetup", "mkfs.xfs")
    with loop_device(tmp_path / "probed.img", 1 << 30) as dev:
        sh("mkfs.xfs", "-q", "-K", dev)
        name = dev.removeprefix("/dev/")
        lines = b"\n".join(iter_rendered(SysRoot.open("/"), lambda d: d.model_dump_json().encode(),
                                         separator=b"\n")).splitlines()
        streamed = next(json.loads(line) for line in lines if json.loads(line)["name"] == name)
        kept = json.loads(find_device(inspect_devices(SysRoot.open("/")), dev).model_dump_json())
        assert streamed["usage"]["probed"] and streamed["usage"]["fstype"]["value"] == "xfs"
        assert [s["value"] for s in streamed["usage"]["signatures"]] == ["xfs"]
        assert streamed == kept
        # udev is asked of the device by name (here without a udev database: nothing)
        import pyudev

        assert pyudev.Devices.from_name(pyudev.Context(), "block", name).sys_name == name
        probes = probe_live(keep=False)
        assert probes.of(name).signatures[0].value == "xfs" and probes.signatures == {}
        kept_probes = probe_live(keep=True)
        assert kept_probes.of(name).probed and list(kept_probes.signatures) == [name]
