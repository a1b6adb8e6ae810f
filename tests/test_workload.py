"""The workload answers contract: sizes, validation, files and flags."""

from __future__ import annotations

import argparse
import json
import os
import re
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
from advisor.models.workload import Storage, Workload


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


def test_an_unknown_unit_lists_every_unit_a_size_takes() -> None:
    """"10 gigs" is answered with the units that work, the decimal ones (as on a disk's label) too,
    and each one named parses."""
    with pytest.raises(ValueError) as err:
        parse_size("10 gigs")
    hint = str(err.value).split("(", 1)[1]
    named = set(re.findall(r"\b([KMGTP]i?B|[kmgtp]|B)\b", hint))
    assert {"KB", "MB", "GB", "TB", "PB", "KiB", "GiB", "PiB", "g", "B"} <= named
    for unit in named:
        assert parse_size(f"10 {unit}") > 0


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
        # every attribute has a name of at least one byte; bytes need an attribute
        ({"xattrs_per_file": 30, "xattr_bytes_per_file": 20}, "xattrs_per_file (30)"),
        ({"xattrs_per_file": 0, "xattr_bytes_per_file": 20}, "xattrs_per_file (0)"),
        ({"xattrs_per_file": -1}, "xattrs_per_file"),
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


def test_an_attribute_count_as_people_write_it() -> None:
    w = parse_workload({"xattrs_per_file": "3", "xattr_bytes_per_file": 650}, "w.toml")
    assert (w.xattrs_per_file, w.xattr_bytes_per_file) == (3, 650)


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


def test_dump_writes_any_mount_point_toml_can_hold(tmp_path: Path) -> None:
    # An escaped surrogate pair (\\ud83d\\ude00), as JSON writes it, is not TOML.
    w = Workload(mount_point="/srv/\U0001F600data", storage=Storage(kind="ssd"))
    f = tmp_path / "w.toml"
    f.write_text(dump_workload_toml(w))
    assert load_workload(f) == w


def test_dump_writes_a_whole_rate_as_an_integer() -> None:
    text = dump_workload_toml(Workload(fsyncs_per_second=200, growth_factor=2.5))
    assert "fsyncs_per_second = 200\n" in text and "growth_factor = 2.5\n" in text


@pytest.mark.parametrize(("line", "expected"), [
    ("largest_directory_entries = 1e6", 1_000_000),          # a TOML float
    ('largest_directory_entries = "1e6"', 1_000_000),
    ('largest_directory_entries = "5,000,000"', 5_000_000),
    ("largest_directory_entries = 5_000_000", 5_000_000),    # TOML's own grouping
    ('largest_directory_entries = "5_000_000"', 5_000_000),
    ('largest_directory_entries = "5M"', 5_000_000),
    ('largest_directory_entries = "2.5k"', 2_500),
    ('file_count = "3G"', 3_000_000_000),
])
def test_counts_in_every_form_people_write(tmp_path: Path, line: str, expected: int) -> None:
    f = tmp_path / "w.toml"
    f.write_text(line + "\n")
    w = load_workload(f)
    assert (w.largest_directory_entries or w.file_count) == expected


@pytest.mark.parametrize(("flag", "value", "expected"), [
    ("--largest-directory-entries", "1e6", 1_000_000),
    ("--largest-directory-entries", "5,000,000", 5_000_000),
    ("--largest-directory-entries", "5M", 5_000_000),
    ("--concurrent-writers", "1k", 1_000),
    ("--raid-data-disks", "8", 8),
])
def test_counts_as_flags(flag: str, value: str, expected: int) -> None:
    p = argparse.ArgumentParser()
    add_workload_flags(p)
    argv = [flag, value] + (["--raid-stripe-unit", "64k"] if flag == "--raid-data-disks" else [])
    w = workload_from_args(p.parse_args(argv))
    assert expected in (w.largest_directory_entries, w.concurrent_writers,
                        w.storage.raid_data_disks)


def test_rates_take_the_count_forms() -> None:
    assert parse_workload({"fsyncs_per_second": "2k"}).fsyncs_per_second == 2000
    assert parse_workload({"fsyncs_per_second": "0.5"}).fsyncs_per_second == 0.5


def test_a_rate_too_large_for_a_float_is_bad_input() -> None:
    """TOML and JSON integers have no limit; float() of a 400-digit one overflows (it was an
    internal error, exit 1)."""
    with pytest.raises(BadInput, match="400 digits is too large"):
        parse_workload({"fsyncs_per_second": 10**399})


def test_a_count_of_thousands_of_digits_is_named_by_its_length() -> None:
    """A 2,000-digit count is refused in one short line, not echoed whole."""
    with pytest.raises(BadInput, match="largest_directory_entries: a number of 2000 digits is "
                       "too large") as err:
        parse_workload({"largest_directory_entries": int("9" * 2000)})
    assert len(err.value.message) < 100
    with pytest.raises(BadInput, match="largest_directory_entries: 10000000000000000000000 is "
                       "too large"):
        parse_workload({"largest_directory_entries": 10**22})


@pytest.mark.parametrize(("value", "needle"), [
    ("1.5", "not a whole number"), ("5 parsecs", "try 5000000"), ("1,00", "try 5000000"),
    ("5M5", "try 5000000"), ("2M", "less than or equal to 1000000"),
])
def test_counts_that_are_not_counts(value: str, needle: str) -> None:
    key = "concurrent_writers" if value == "2M" else "largest_directory_entries"
    with pytest.raises(BadInput, match=needle):
        parse_workload({key: value})


def test_the_readme_shows_a_complete_answers_file_that_loads(tmp_path: Path) -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    section = readme[readme.index("### The answers file"):]
    block = section[section.index("```toml\n") + 8:section.index("```\n", 8)]
    f = tmp_path / "readme.toml"
    f.write_text(block)
    w = load_workload(f)
    every = {k for k in Workload.model_fields if k != "storage"} | {
        f"storage.{k}" for k in Storage.model_fields}
    # growth_factor is the alternative to eventual_size, named in the comment beside it.
    assert every - w.answered() == {"growth_factor"}
    assert "growth_factor" in block


@pytest.mark.parametrize(("text", "expected"), [
    ('storage_kind = "hardware-raid"\n',
     "storage_kind: unknown key (did you mean [storage] kind?)"),
    ("raid_data_disks = 8\n", "raid_data_disks: unknown key (did you mean [storage] "
     "raid_data_disks?)"),
    ("largest-directory-entries = 5\n", "(did you mean largest_directory_entries?)"),
    ('[storage]\naccess = "mixed"\n', "storage.access: unknown key (did you mean access at the "
     "top level, above [storage]?)"),
    ("concurent_writers = 3\n", "(did you mean concurrent_writers?)"),
    ('storage_kind = "ssd"\nraid_stripe_unit = 4\ncolour = 1\n',
     "(and 2 more unknown: raid_stripe_unit ([storage] raid_stripe_unit?), colour;"),
])
def test_unknown_keys_say_where_they_belong(tmp_path: Path, text: str, expected: str) -> None:
    f = tmp_path / "w.toml"
    f.write_text(text)
    with pytest.raises(BadInput) as err:
        load_workload(f)
    assert expected in err.value.message


def test_every_answer_flag_names_its_file_key() -> None:
    p = argparse.ArgumentParser()
    add_workload_flags(p)
    helps = {a.option_strings[0]: a.help or "" for a in p._actions if a.option_strings}
    assert "(in a --workload file: [storage] kind)" in helps["--storage-kind"]
    assert "(in a --workload file: concurrent_writers)" in helps["--concurrent-writers"]
    assert all("(in a --workload file: " in h for f, h in helps.items() if f != "-h")


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
    assert proc.returncode != 0, proc.stderr
    assert "ftype field always enabled on CRC enabled filesystems" in proc.stderr
