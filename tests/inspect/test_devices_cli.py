"""`devices` and `capture` through the real entry point: output, bad input, exit codes."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from advisor.cli import main
from advisor.commands.schema import schema_text
from advisor.errors import DeviceProblem
from advisor.inspect.devices import inspect_devices
from advisor.system.sysroot import SysRoot
from tests.inspect.sysfs_builder import Dev, Part, write_tree

KiB = 1 << 10


@pytest.fixture
def small_host(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "host", [
        Dev("sda", 2 << 40, "8:0", partitions=[Part("sda1", 2048, 1 << 40, holders=["md0"])]),
        Dev("sdb", 2 << 40, "8:16", partitions=[Part("sdb1", 2048, 1 << 40, holders=["md0"])]),
        Dev("md0", 2 << 40, "9:0", min_io=512 * KiB, opt_io=1024 * KiB, slaves=["sda1", "sdb1"],
            md={"level": "raid0", "chunk_size": str(512 * KiB), "raid_disks": "2", "layout": "0"}),
    ], mountinfo="1 0 9:0 / /data rw - xfs /dev/md0 rw")


def test_json_is_the_inventory(small_host: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--sysroot", str(small_host), "devices", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema_version"] == 1 and doc["live"] is False
    assert [d["name"] for d in doc["devices"]] == ["sda", "sda1", "sdb", "sdb1", "md0"]
    md0 = doc["devices"][-1]
    assert md0["stripe"]["used_by_mkfs"] is True and md0["stripe"]["data_disks"] == 2
    assert md0["size_bytes"] == {"value": 2 << 40, "source": "sysfs", "path": "sys/block/md0/size",
                                 "raw": str((2 << 40) // 512), "note": None}
    published = json.loads(schema_text("devices"))  # what `xfs-advisor schema devices` prints
    jsonschema.validate(doc, published)
    md0["size_bytes"]["value"] = "2TiB"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, published)


def test_human_tree_nests_md_under_both_partitions(small_host: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["devices", "--sysroot", str(small_host)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NAME", "SIZE", "MEDIA", "CACHE", "FUA", "STRIPE", "STATE"]
    assert lines[1].startswith("sda ")
    assert lines[2].startswith("`-sda1") and "held by md0" in lines[2]
    assert lines[3].startswith("  `-md0") and "512KiBx2" in lines[3] and "mounted /data" in lines[3]
    assert "MD" in lines[3].split()  # the md array's media, from its kind
    assert sum(1 for line in lines if "-md0" in line) == 2


def test_one_device_with_details(small_host: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--sysroot", str(small_host), "devices", "/dev/md0"]) == 0
    out = capsys.readouterr().out
    assert "md0 (md, /dev/md0, 9:0)" in out and "raid0 disks=2 data=2" in out
    assert "sda" not in out.split("\n\n")[0]


def test_unknown_device_lists_known_ones(small_host: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--sysroot", str(small_host), "devices", "sdz"]) == 3
    err = capsys.readouterr().err
    assert err == "xfs-advisor: unknown device 'sdz' (known: sda, sda1, sdb, sdb1, md0)\n"


def test_unknown_device_as_json_error(small_host: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--json", "--sysroot", str(small_host), "devices", "nvme9n9"]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert json.loads(captured.err)["error"]["kind"] == "device"


@pytest.mark.parametrize("make", ["missing", "not-a-root", "a-file"])
def test_bad_sysroot_is_exit_2(tmp_path: Path, make: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "x"
    if make == "not-a-root":
        target.mkdir()
    elif make == "a-file":
        target.write_text("hello")
    assert main(["--sysroot", str(target), "devices"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("xfs-advisor: sysroot ") and err.count("\n") == 1


def test_unreadable_sysroot_is_exit_2(small_host: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os

    if os.geteuid() == 0:  # root reads anything: make sys/ unusable another way
        shutil.rmtree(small_host / "sys")
        (small_host / "sys").write_text("not a directory")
    else:
        (small_host / "sys").chmod(0)
    assert main(["--sysroot", str(small_host), "devices", "--json"]) == 2
    assert json.loads(capsys.readouterr().err)["error"]["kind"] == "bad-input"


class VanishingRoot(SysRoot):
    """Deletes one device's folder right after sys/block is listed: a disk unplugged mid-scan."""

    victim: str = "sdb"

    def listdir(self, rel: str) -> list[str]:
        entries = super().listdir(rel)
        if rel == "sys/block":
            self._remove_victim()
        return entries

    def iter_names(self, rel: str) -> Iterator[str]:
        entries = list(super().iter_names(rel))
        if rel == "sys/block":
            self._remove_victim()
        yield from entries

    def _remove_victim(self) -> None:
        link = self.path(f"sys/block/{self.victim}")
        shutil.rmtree(link.resolve())
        link.unlink()


def test_device_vanishing_mid_scan(small_host: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DeviceProblem, match="device sdb disappeared while it was being inspected"):
        inspect_devices(VanishingRoot(small_host))
    # Through the command line: one line, exit 3.
    fresh = write_tree(small_host.parent / "again", [Dev("sda", 1 << 30, "8:0"),
                                                     Dev("sdb", 1 << 30, "8:16")])
    monkeypatch.setattr(SysRoot, "open", classmethod(lambda cls, root: VanishingRoot(fresh)))
    assert main(["--sysroot", str(fresh), "devices"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "disappeared" in err and "Traceback" not in err


def test_capture_refuses_a_non_empty_folder(small_host: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "full"
    dest.mkdir()
    (dest / "something").write_text("x")
    assert main(["--sysroot", str(small_host), "capture", str(dest)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert sorted(p.name for p in dest.iterdir()) == ["something"]


def test_capture_of_a_capture_replays_identically(small_host: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "copy"
    assert main(["--sysroot", str(small_host), "capture", str(dest)]) == 0
    assert "captured 5 devices" in capsys.readouterr().out
    again = tmp_path / "again"
    assert main(["--json", "--sysroot", str(small_host), "capture", str(again)]) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, json.loads(schema_text("capture")))
    assert doc["capture"] == str(again) and doc["devices"] == ["sda", "sda1", "sdb", "sdb1", "md0"]
    original = inspect_devices(SysRoot.open(small_host)).model_dump(exclude={"sysroot"})
    replay = inspect_devices(SysRoot.open(dest)).model_dump(exclude={"sysroot"})
    assert replay == original


def test_captured_probe_results_are_replayed(small_host: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from advisor.inspect.probes import PROBES_FILE, Probes
    from advisor.models.device import Fact

    sig = Fact[str](value="LVM2_member", source="blkid", path="/dev/md0",
                    raw="TYPE=LVM2_member USAGE=raid")
    (small_host / PROBES_FILE).write_text(Probes(probed=True, signatures={"md0": [sig], "sda": []},
                                                 udev={"sda": {"ID_MODEL": "ST4000"}}).to_json())
    inv = inspect_devices(SysRoot.open(small_host))
    md0, sda = inv.get("md0"), inv.get("sda")
    assert md0 is not None and sda is not None
    assert md0.usage.probed and md0.usage.signatures == [sig]
    assert md0.usage.fstype.value == "xfs"  # mounted: mountinfo wins over the signature
    assert sda.usage.probed and sda.usage.signatures == []
    assert (sda.model.value, sda.model.source) == ("ST4000", "udev")
    assert not inspect_devices(SysRoot.open(small_host), probe=False).devices[0].usage.probed

    (small_host / PROBES_FILE).write_text("{not json")
    assert main(["--sysroot", str(small_host), "devices"]) == 2
    assert "not a valid probe file" in capsys.readouterr().err


def test_proc_mounts_when_a_capture_has_no_mountinfo(small_host: Path) -> None:
    (small_host / "proc" / "self" / "mountinfo").unlink()
    (small_host / "proc" / "mounts").write_text("/dev/md0 /srv xfs rw,noatime 0 0\n"
                                                "proc /proc proc rw 0 0\n")
    md0 = inspect_devices(SysRoot.open(small_host)).get("md0")
    assert md0 is not None and md0.usage.mountpoints == ["/srv"]
    assert (md0.usage.fstype.value, md0.usage.fstype.path) == ("xfs", "proc/mounts")


def _propose(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    code = main(["--json", *argv])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out else {}), err


def test_device_file_takes_what_devices_json_prints(
        small_host: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--sysroot", str(small_host), "devices", "--json"]) == 0
    everything = tmp_path / "inventory.json"
    everything.write_text(capsys.readouterr().out)
    assert main(["--sysroot", str(small_host), "devices", "md0", "--json"]) == 0
    one = tmp_path / "md0.json"
    one.write_text(capsys.readouterr().out)
    code, live, err = _propose(capsys, "--sysroot", str(small_host), "--device", "md0")
    assert code == 0, err
    for argv in (["--device-file", str(everything), "--device", "md0"],
                 ["--device-file", str(one)],
                 ["--device-file", str(everything), "--device", "/dev/md0"]):
        code, doc, err = _propose(capsys, *argv)
        assert code == 0, err
        assert doc["device"] == live["device"]
        assert doc["proposal"]["mkfs_argv"] == live["proposal"]["mkfs_argv"]
    # One device of the inventory, as the file format always was.
    single = tmp_path / "sda.json"
    single.write_text(json.dumps(json.loads(everything.read_text())["devices"][0]))
    code, doc, err = _propose(capsys, "--device-file", str(single))
    assert code == 0 and doc["device"]["name"] == "sda", err


@pytest.mark.parametrize(("argv", "needle"), [
    ([], "lists 5 devices (sda, sda1, sdb, sdb1, md0): name one with --device"),
    (["--device", "sdz"], "no device 'sdz' in this inventory (it lists: sda, sda1"),
])
def test_an_inventory_without_a_device_named_in_it_is_bad_input(
        small_host: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        argv: list[str], needle: str) -> None:
    assert main(["--sysroot", str(small_host), "devices", "--json"]) == 0
    everything = tmp_path / "inventory.json"
    everything.write_text(capsys.readouterr().out)
    code, _, err = _propose(capsys, "--device-file", str(everything), *argv)
    assert code == 2
    assert needle in json.loads(err)["error"]["message"]
