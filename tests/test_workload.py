"""The workload answers contract: sizes, validation, files and flags."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.answers import (
    add_workload_flags,
    dump_workload_toml,
    load_workload,
    parse_workload,
    workload_from_args,
)
from advisor.errors import BadInput
from advisor.models.units import format_size, parse_size
from advisor.models.workload import Workload


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (4096, 4096),
        ("4096", 4096),
        ("16KiB", 16384),
        ("16k", 16384),
        ("16 KB", 16000),
        ("1.5GiB", 3 << 29),
        ("2t", 2 << 40),
        ("64 MB", 64_000_000),
    ],
)
def test_sizes_parse_like_mkfs(text: object, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["12 parsecs", "-4k", "k", "", True, [1], -1, "1e9"])
def test_bad_sizes_are_refused(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_size(bad)


@given(st.integers(min_value=0, max_value=1 << 60))
def test_format_size_round_trips(n: int) -> None:
    assert parse_size(format_size(n)) == n


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"median_file_size": "12 parsecs"}, "median_file_size"),
        ({"concurrent_writers": 0}, "concurrent_writers"),
        ({"largest_directory_entries": -5}, "largest_directory_entries"),
        ({"fsyncs_per_second": -1}, "fsyncs_per_second"),
        ({"access": "sometimes"}, "access"),
        ({"eventual_size": "10TiB", "growth_factor": 3}, "not both"),
        ({"growth_factor": 0.5}, "growth_factor"),
        ({"nfs_32bit": True}, "nfs_32bit: unknown key"),
        ({"storage": {"raid_stripe_unit": "64k"}}, "together"),
        ({"storage": {"battery": True}}, "storage.battery: unknown key"),
        ({"must_mount_on_kernel": "five"}, "must_mount_on_kernel"),
        ({"mount_point": "srv"}, "mount_point"),
        # one directory of 5,000,000 entries on a filesystem of 10 files: a contradiction, an
        # error (it made a permanent -n size=64k)
        ({"largest_directory_entries": 5_000_000, "file_count": 10}, "more than file_count"),
    ],
)
def test_bad_answers_name_the_key(data: dict[str, object], key: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_workload(data, "w.toml")
    assert key in str(err.value)
    assert "\n" not in str(err.value)


def test_a_directory_as_large_as_the_filesystem_is_consistent() -> None:
    w = parse_workload({"largest_directory_entries": 10, "file_count": 10}, "w.toml")
    assert w.largest_directory_entries == w.file_count == 10


def test_toml_and_json_give_the_same_answers(tmp_path: Path) -> None:
    toml = tmp_path / "w.toml"
    toml.write_text(
        'largest_directory_entries = 2000000\naccess = "write-heavy"\nmedian_file_size = "16KiB"\n'
        '[storage]\nraid_stripe_unit = "256k"\nraid_data_disks = 8\n'
    )
    js = tmp_path / "w.json"
    js.write_text(json.dumps({
        "largest_directory_entries": 2000000, "access": "write-heavy", "median_file_size": 16384,
        "storage": {"raid_stripe_unit": 262144, "raid_data_disks": 8},
    }))
    assert load_workload(toml) == load_workload(js)
    assert load_workload(toml).storage.raid_stripe_unit == 262144


@pytest.mark.parametrize(
    ("content", "needle"),
    [("access = ", "malformed TOML"), ('{"access": ', "malformed JSON"), ("[1, 2]", "TOML")],
)
def test_malformed_files_are_one_line_errors(tmp_path: Path, content: str, needle: str) -> None:
    f = tmp_path / "w.toml"
    f.write_text(content)
    with pytest.raises(BadInput) as err:
        load_workload(f)
    assert needle in str(err.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="cannot read"):
        load_workload(tmp_path / "nope.toml")


def test_flags_win_over_the_file(tmp_path: Path) -> None:
    f = tmp_path / "w.toml"
    f.write_text("largest_directory_entries = 10\nconcurrent_writers = 4\n")
    p = argparse.ArgumentParser()
    p.add_argument("--workload")
    add_workload_flags(p)
    args = p.parse_args(["--workload", str(f), "--largest-directory-entries", "2000000",
                         "--nonvolatile-write-cache", "yes"])
    w = workload_from_args(args)
    assert w.largest_directory_entries == 2_000_000
    assert w.concurrent_writers == 4
    assert w.storage.nonvolatile_write_cache is True
    bad = p.parse_args(["--atime-needed", "perhaps"])
    with pytest.raises(BadInput, match="--atime-needed"):
        workload_from_args(bad)


def test_dump_loads_back_unchanged(tmp_path: Path) -> None:
    w = Workload.model_validate({
        "largest_directory_entries": 5, "access": "mixed", "growth_factor": 2.5,
        "mount_point": "/srv", "storage": {"nonvolatile_write_cache": False},
    })
    f = tmp_path / "w.toml"
    f.write_text(dump_workload_toml(w))
    assert load_workload(f) == w
    assert w.answered() == {"largest_directory_entries", "access", "growth_factor", "mount_point",
                            "storage.nonvolatile_write_cache"}


@pytest.mark.parametrize("kernel", ["3.10", "3.11", "3.11.0-26-generic", "2.6.32"])
def test_kernels_that_cannot_mount_todays_v5_are_refused(kernel: str) -> None:
    # mkfs.xfs makes V5 with the directory entry file type always on ("Directory ftype field
    # always enabled on CRC enabled filesystems"): an incompatible feature Linux mounts from 3.12.
    with pytest.raises(BadInput) as err:
        parse_workload({"must_mount_on_kernel": kernel}, "w.toml")
    assert "3.12" in str(err.value) and "rhel7" in str(err.value)


@pytest.mark.parametrize(("kernel", "target"), [
    ("3.10.0-1160.el7.x86_64", "rhel7"), ("centos7", "rhel7"), ("3.12", "3.12"),
    ("sles12", "sles12")])
def test_kernels_that_mount_it_are_accepted(kernel: str, target: str) -> None:
    assert parse_workload({"must_mount_on_kernel": kernel}, "w.toml").must_mount_on_kernel == target


def test_mkfs_refuses_v5_without_the_file_type(tmp_path: Path) -> None:
    # The fact V5_MOUNTS_FROM rests on, asked of the real tool.
    image = tmp_path / "img"
    image.write_bytes(b"")
    os.truncate(image, 1 << 30)
    proc = subprocess.run(["mkfs.xfs", "-N", "-f", "-m", "crc=1", "-n", "ftype=0", str(image)],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert "ftype field always enabled on CRC enabled filesystems" in proc.stderr
