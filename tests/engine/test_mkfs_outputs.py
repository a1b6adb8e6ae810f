"""`mkfs.xfs -N` as several xfsprogs versions print it (tests/engine/data/mkfs/README.md), parsed
into the geometry the engine decides from; and the engine drafting from such captured defaults
alone, with no mkfs.xfs run at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.engine import draft
from advisor.engine.rulebook import RuleBook
from advisor.models.proposal import MkfsGeometry
from advisor.models.workload import Workload
from advisor.system.mkfs import parse_mkfs_output
from tests.engine.helpers import GiB, device, environment

MKFS = Path(__file__).parent / "data" / "mkfs"


def captured(name: str) -> MkfsGeometry:
    return parse_mkfs_output((MKFS / name).read_text())


# file -> (isize, agcount, agsize, sectsz, sunit, swidth, log blocks, log sunit, features)
EXPECTED = {
    "4.5.0-100g-4kn.txt": (256, 4, 6553600, 4096, 0, 0, 12800, 1,
                           {"crc": 0, "finobt": 0, "sparse": 0, "rmapbt": 0, "reflink": 0,
                            "ftype": 1}),
    "5.0.0-100g-v4.txt": (256, 4, 6553600, 512, 0, 0, 12800, 0,
                          {"crc": 0, "finobt": 0, "sparse": 0, "rmapbt": 0, "reflink": 0,
                           "ftype": 1}),
    "5.10.0-100g-raid.txt": (512, 16, 1638400, 512, 128, 512, 12800, 8,
                             {"crc": 1, "finobt": 1, "sparse": 1, "rmapbt": 0, "reflink": 1,
                              "bigtime": 0, "inobtcount": 0, "ftype": 1}),
    "6.1.0-100g-defaults.txt": (512, 4, 6553600, 512, 0, 0, 16384, 0,
                                {"crc": 1, "finobt": 1, "sparse": 1, "rmapbt": 0, "reflink": 1,
                                 "bigtime": 1, "inobtcount": 1, "nrext64": 0, "ftype": 1}),
    "6.1.0-100g-raid6-4k.txt": (512, 16, 1638400, 4096, 16, 96, 16384, 1,
                                {"crc": 1, "finobt": 1, "sparse": 1, "rmapbt": 0,
                                 "reflink": 1, "bigtime": 1, "inobtcount": 1, "nrext64": 0,
                                 "ftype": 1}),
    "6.1.0-100g-v4.txt": (256, 4, 6553600, 512, 0, 0, 16384, 0,
                          {"crc": 0, "finobt": 0, "sparse": 0, "rmapbt": 0, "reflink": 0,
                           "bigtime": 0, "inobtcount": 0, "nrext64": 0, "ftype": 1}),
    "6.9.0-100g-defaults.txt": (512, 4, 6553600, 512, 0, 0, 16384, 0,
                                {"crc": 1, "finobt": 1, "sparse": 1, "rmapbt": 1, "reflink": 1,
                                 "bigtime": 1, "inobtcount": 1, "nrext64": 1, "ftype": 1}),
}


def test_every_capture_has_expectations() -> None:
    assert {p.name for p in MKFS.glob("*.txt")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_layout_parses(name: str) -> None:
    isize, agcount, agsize, sectsz, sunit, swidth, log_blocks, log_sunit, features = \
        EXPECTED[name]
    g = captured(name)
    assert (g.inode_size, g.agcount, g.agsize_blocks, g.sector_size) == (
        isize, agcount, agsize, sectsz)
    assert (g.block_size, g.data_blocks, g.naming_block_size) == (4096, 26214400, 4096)
    assert (g.sunit_blocks, g.swidth_blocks) == (sunit, swidth)
    assert (g.log_blocks, g.log_sunit_blocks) == (log_blocks, log_sunit)
    assert g.features == features


def test_the_engine_drafts_from_captured_defaults(book: RuleBook) -> None:
    """The log-size rule reads the defaults it is given: with no answers, 5.10's 50 MiB log for
    100 GiB is grown, 6.1's 64 MiB log is kept. Nothing runs."""
    dev = device(100 * GiB)
    work = Workload()
    old = draft(dev, work, env=environment("5.10.0"), defaults=captured("5.10.0-100g-raid.txt"),
                book=book)
    new = draft(dev, work, env=environment("6.1.0"),
                defaults=captured("6.1.0-100g-defaults.txt"), book=book)
    log_old = next(d for d in old.decisions if d.setting == "-l size")
    log_new = next(d for d in new.decisions if d.setting == "-l size")
    assert log_old.default == "50 MiB" and log_new.default == "64 MiB"
    # The AG size as mkfs.xfs printed it (agsize=N blks), exact, beside the rounded size.
    ag_new = next(d for d in new.decisions if d.setting == "-d agcount/agsize")
    assert ag_new.default == "agcount=4, agsize 6553600 blocks (25 GiB)", ag_new.default
    assert "agsize=6553600 blks" in (MKFS / "6.1.0-100g-defaults.txt").read_text()
    assert log_old.changed and log_old.options == ["-l", "size=64m"], log_old
    assert "5.10.0 makes small logs" in log_old.reason
    assert not log_new.changed, log_new
