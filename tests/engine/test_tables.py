"""The guide's table 2.5, row by row, and the pure helpers behind the rules."""

from __future__ import annotations

import pytest

from advisor.engine.context import mkfs_size
from advisor.engine.rulebook import RuleBook
from advisor.engine.rules.dir_block_size import DirBlockParams, directory_block_for
from advisor.engine.rules.kernel_compat import explicit_feature_flags
from advisor.models.environment import parse_lts_conf
from advisor.system.argv import merge_options
from tests.engine.helpers import environment

K = 1024

# Table 2.5: recommended maximum directory entries per directory block size.
#   size   read-heavy          write-heavy
#   4 KB   100000-200000       1000000-2000000
#   16 KB  100000-1000000      1000000-10000000
#   64 KB  >1000000            >10000000
TABLE_2_5 = [
    ("read-heavy", 1_000, 4 * K), ("read-heavy", 100_000, 4 * K), ("read-heavy", 200_000, 4 * K),
    ("read-heavy", 200_001, 16 * K), ("read-heavy", 1_000_000, 16 * K),
    ("read-heavy", 1_000_001, 64 * K), ("read-heavy", 50_000_000, 64 * K),
    ("write-heavy", 1_000_000, 4 * K), ("write-heavy", 2_000_000, 4 * K),
    ("write-heavy", 2_000_001, 16 * K), ("write-heavy", 10_000_000, 16 * K),
    ("write-heavy", 10_000_001, 64 * K),
    ("mixed", 1_000_000, 4 * K), ("mixed", 1_000_001, 16 * K), ("mixed", 5_000_001, 64 * K),
]


@pytest.mark.parametrize(("access", "entries", "expected"), TABLE_2_5)
def test_table_2_5(book: RuleBook, access: str, entries: int, expected: int) -> None:
    loaded = book.rules["dir-block-size"]
    assert isinstance(loaded.params, DirBlockParams)
    assert directory_block_for(entries, access, loaded.params) == expected  # type: ignore[arg-type]


def test_mkfs_size() -> None:
    assert [mkfs_size(n) for n in (4096, 65536, 1 << 30, 3 << 40, 12345)] == [
        "4k", "64k", "1g", "3t", "12345"]


def test_merge_options() -> None:
    assert merge_options([["-i", "size=1024"], ["-n", "size=64k"], ["-i", "sparse=1"],
                          ["-b", "size=4096"]]) == [
        "-b", "size=4096", "-i", "size=1024,sparse=1", "-n", "size=64k"]
    with pytest.raises(ValueError, match="set twice"):
        merge_options([["-i", "size=1024"], ["-i", "size=2048"]])


def test_lts_conf_to_flags() -> None:
    conf = "# c\n[metadata]\nnrext64=0\nbigtime=0\ncrc=1\n\n[inode]\nsparse=1\n"
    features = parse_lts_conf(conf)
    assert features == {"metadata": {"nrext64": 0, "bigtime": 0, "crc": 1},
                        "inode": {"sparse": 1}}
    since = {"bigtime": "5.10", "inobtcount": "5.10", "nrext64": "5.19"}
    assert explicit_feature_flags(features, environment("6.1.0"), since) == [
        "-m", "bigtime=0,crc=1", "-i", "nrext64=0,sparse=1"]
    assert explicit_feature_flags(features, environment("5.15.0"), since) == [
        "-m", "bigtime=0,crc=1", "-i", "sparse=1"]
    assert explicit_feature_flags(features, environment("5.0.0"), since) == [
        "-m", "crc=1", "-i", "sparse=1"]
