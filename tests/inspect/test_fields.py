"""`devices --json --fields`: a scan that reads only what the asked fields need gives, for those
fields, exactly what the full scan gives, on every capture and hand-written tree; the CLI writes
only those keys (plus identity and tree) and refuses unknown names with exit 2."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.commands.devices import selectable_fields
from advisor.inspect.devices import inspect_devices
from advisor.inspect.specs import IDENTITY, fields_needed
from advisor.models.device import Device
from advisor.system.sysroot import SysRoot
from tests.conftest import require
from tests.inspect.sysfs_builder import Dev, Part, write_tree
from tests.inspect.test_lsblk_oracle import COLUMNS, DUMPS, flatten

KiB = 1 << 10
#: lsblk's columns as --fields names them (the comparison of scripts/bench_devices.py).
LSBLK_FIELDS = {"size": "size_bytes", "rota": "rotational", "log-sec": "logical_sector",
                "phy-sec": "physical_sector", "min-io": "min_io", "opt-io": "opt_io",
                "alignment": "alignment_offset", "disc-gran": "discard_granularity",
                "disc-max": "discard_max_bytes", "rq-size": "nr_requests", "ro": "read_only"}


@pytest.fixture
def md_host(tmp_path: Path) -> Path:
    """md RAID over partitions, LVM on the md array, a mounted filesystem and swap: every
    derived field (stripe passed up from md, storage hint inherited, usage) has something."""
    return write_tree(tmp_path / "host", [
        Dev("sda", 2 << 40, "8:0", partitions=[Part("sda1", 2048, 1 << 40, holders=["md0"])]),
        Dev("sdb", 2 << 40, "8:16", partitions=[Part("sdb1", 2048, 1 << 40, holders=["md0"])]),
        Dev("md0", 2 << 40, "9:0", min_io=512 * KiB, opt_io=1024 * KiB, slaves=["sda1", "sdb1"],
            holders=["dm-0"],
            md={"level": "raid0", "chunk_size": str(512 * KiB), "raid_disks": "2", "layout": "0"}),
        Dev("dm-0", 1 << 40, "253:0", min_io=512 * KiB, opt_io=1024 * KiB, slaves=["md0"],
            dm_name="vg-data", dm_uuid="LVM-abc"),
    ], mountinfo="1 0 253:0 / /data rw - xfs /dev/mapper/vg-data rw", swaps="")


def _trees(shared_dumps: dict[str, Path], md_host: Path) -> dict[str, Path]:
    return {**{name: shared_dumps[name] for name in DUMPS if name in shared_dumps},
            "md-lvm": md_host}


def test_each_field_alone_equals_the_full_scan(shared_dumps: dict[str, Path],
                                               md_host: Path) -> None:
    """For every field --fields offers, on every tree: the same devices in the same order, the
    same identity and tree, and the field's value equal to the full scan's (a missing dependency
    in fields_needed would leave a derived field at its default here)."""
    trees = _trees(shared_dumps, md_host)
    assert len(trees) == 4
    wrong = []
    for tree, root in trees.items():
        full = inspect_devices(SysRoot.open(root)).devices
        for field in selectable_fields():
            part = inspect_devices(SysRoot.open(root), fields=frozenset({field})).devices
            assert [d.name for d in part] == [d.name for d in full], (tree, field)
            for mine, whole in zip(part, full, strict=True):
                for key in IDENTITY | {field}:
                    if getattr(mine, key) != getattr(whole, key):
                        wrong.append((tree, field, mine.name, key))
    assert wrong == []


def test_derived_fields_are_not_left_at_their_defaults(md_host: Path) -> None:
    """The equality above could hold trivially if both were defaults: here each derived field
    has a real value, through --fields too."""
    inv = inspect_devices(SysRoot.open(md_host), fields=frozenset({"stripe", "storage_hint",
                                                                    "usage", "md"}))
    dm0 = inv.get("vg-data")
    assert dm0 is not None and dm0.stripe.sunit_bytes == 512 * KiB
    assert dm0.stripe.source == "md0 (md raid0, 2 disks, chunk 512KiB), passed up to vg-data"
    assert dm0.storage_hint.value == "md-raid" and dm0.usage.mountpoints == ["/data"]
    md0 = inv.get("md0")
    assert md0 is not None and md0.md is not None and md0.md.data_disks.value == 2


def test_fewer_reads_for_fewer_fields(md_host: Path) -> None:
    """What --fields is for: the attributes no asked field needs are not read at all."""
    whole, part = SysRoot.open(md_host), SysRoot.open(md_host)
    whole.recorded, part.recorded = set(), set()
    inspect_devices(whole)
    inspect_devices(part, fields=frozenset({"size_bytes", "rotational"}))
    assert part.recorded < whole.recorded
    assert "sys/block/sda/queue/rotational" in part.recorded
    assert not any(p.endswith(("/write_cache", "/scheduler", "/md/chunk_size", "/mq"))
                   for p in part.recorded)
    assert "proc/self/mountinfo" not in part.recorded  # usage was not asked


def test_needed_expands_derived_fields() -> None:
    needed = fields_needed(frozenset({"stripe"}))
    assert needed is not None and {"min_io", "opt_io", "md", "size_bytes"} <= needed
    assert "write_cache" not in needed
    assert fields_needed(None) is None


@pytest.mark.parametrize("dump", DUMPS)
def test_lsblk_columns_through_the_cli_agree_with_lsblk(
        shared_dumps: dict[str, Path], dump: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The benchmark's comparison, checked for content: --fields with lsblk's columns gives lsblk's
    numbers, and every device object has exactly identity, tree and the asked keys."""
    require(dump in shared_dumps, f"dump {dump} missing")
    root = shared_dumps[dump]
    asked = sorted(set(LSBLK_FIELDS.values()))
    assert main(["--sysroot", str(root), "devices", "--json", "--fields", ",".join(asked)]) == 0
    doc = json.loads(capsys.readouterr().out)
    proc = subprocess.run(["lsblk", "--sysroot", str(root), "-J", "-b", "-O"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    theirs: dict[str, dict[str, Any]] = {}
    flatten(json.loads(proc.stdout)["blockdevices"], None, theirs, set())
    assert sorted(d["name"] for d in doc["devices"]) == sorted(theirs)
    for dev in doc["devices"]:
        assert set(dev) == IDENTITY | set(asked), dev["name"]
        for column, field in LSBLK_FIELDS.items():
            assert dev[field]["value"] == theirs[dev["name"]][column], (dev["name"], column)
            assert dev[field]["source"] == "sysfs" and dev[field]["path"]
    assert set(LSBLK_FIELDS) | {"maj:min"} == set(COLUMNS)


def test_help_lists_the_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["devices", "--fields", "help"]) == 0
    names = capsys.readouterr().out.split()
    assert names == selectable_fields()
    assert "size_bytes" in names and "stripe" in names and "name" not in names
    assert set(names) | IDENTITY == set(Device.model_fields)


@pytest.mark.parametrize(("argv", "needle"), [
    (["devices", "--json", "--fields", "size_bytes,sizes"], "unknown field sizes"),
    (["devices", "--json", "--fields", ","], "(none given)"),
    (["devices", "--fields", "size_bytes"], "add --json"),
])
def test_bad_fields_are_exit_2(md_host: Path, argv: list[str], needle: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--sysroot", str(md_host), *argv]) == 2
    captured = capsys.readouterr()
    err = json.loads(captured.err)["error"]["message"] if "--json" in argv else captured.err
    assert needle in err and "Traceback" not in err
    assert captured.out == ""


def test_devices_json_is_the_inventory_serializer_byte_for_byte(
        md_host: Path, tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    """`devices --json` writes its devices one at a time as the scan makes them: the document
    must be exactly what the Inventory's serializer writes, with and without --fields, and for a
    host without devices."""
    empty = write_tree(tmp_path / "empty", [Dev("loop0", 0, "7:0")])
    for root in (md_host, empty):
        inventory = inspect_devices(SysRoot.open(root))
        for fields in (None, frozenset({"size_bytes", "stripe", "usage"})):
            include = None
            if fields is not None:
                include = {"schema_version": True, "sysroot": True, "live": True,
                           "devices": {"__all__": set(IDENTITY | fields)}}
            expected = inventory.__pydantic_serializer__.to_json(inventory, indent=2,
                                                                 include=include) + b"\n"
            argv = ["--sysroot", str(root), "devices", "--json"]
            if fields is not None:
                argv += ["--fields", ",".join(sorted(fields))]
            assert main(argv) == 0
            assert capsysbinary.readouterr().out == expected, (root.name, fields)
    assert len(inventory.devices) == 0 and len(inspect_devices(SysRoot.open(md_host)).devices) > 4
