"""The inode32 rule's bound, checked on real filesystems: the largest possible inode number its
reason states is what xfs_db computes (`convert agno A agbno B ino`) for the last block of the
last AG of the filesystem the proposal makes (grown with xfs_growfs when the answers plan
growth), and inode32 is proposed exactly when that number exceeds 2^32 - 1."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from advisor.advice import propose
from advisor.engine.rulebook import RuleBook
from advisor.models.proposal import Proposal
from advisor.models.workload import Workload
from tests.conftest import loop_device, mounted, require_root_tools, sh
from tests.engine.helpers import GiB, TiB, device, environment

MAX_32 = (1 << 32) - 1
CASES: list[tuple[str, int, dict[str, Any]]] = [
    ("2 TiB: 4 AGs of 2^27 blocks, the last number just fits", 2 * TiB, {}),
    ("2 TiB + 4 GiB: AGs of 2^28 blocks, over", 2 * TiB + 4 * GiB, {}),
    ("1 TiB growing to 3 TiB", 1 * TiB, {"growth_factor": 3}),
    ("3 TiB of 2048-byte inodes (attributes): 2 inodes per block, fits", 3 * TiB,
     {"xattr_bytes_per_file": 1000}),
]


def stated_largest(p: Proposal) -> int:
    reason = next(d.reason for d in p.decisions if d.setting == "mount inode32/inode64")
    found = re.search(r"largest possible inode number(?: once grown to [^)]*?)? is ([\d,]+)",
                      reason)
    assert found, reason
    return int(found.group(1).replace(",", ""))


def db(dev: str, *commands: str) -> str:
    argv = ["xfs_db", "-r"]
    for c in commands:
        argv += ["-c", c]
    return sh(*argv, dev).stdout


@pytest.mark.parametrize(("label", "size", "answers"), CASES, ids=[c[0] for c in CASES])
def test_stated_bound_is_what_xfs_db_computes(label: str, size: int, answers: dict[str, Any],
                                              book: RuleBook, tmp_path: Path) -> None:
    require_root_tools("losetup", "mkfs.xfs", "xfs_db", "xfs_growfs", "mount")
    workload = Workload.model_validate({"nfs_32bit_clients": True, **answers})
    p = propose(device(size), workload, env=environment(), rulebook=book)
    stated = stated_largest(p)
    backing = tmp_path / "fs.img"
    with loop_device(backing, size) as dev:
        sh("mkfs.xfs", "-q", "-f", *p.mkfs_options, dev)
        if workload.growth_factor:
            with open(backing, "r+b") as f:
                f.truncate(int(size * workload.growth_factor))
            sh("losetup", "-c", dev)
            with mounted(dev, tmp_path / "mnt") as mnt:
                sh("xfs_growfs", str(mnt))
        sb = dict(re.findall(r"(\w+) = (\d+)", db(dev, "sb 0", "print agcount agblocks")))
        last_ag, last_block = int(sb["agcount"]) - 1, int(sb["agblocks"]) - 1
        real = inode_number(db(dev, f"convert agno {last_ag} agbno {last_block} ino"))
        assert stated == real, label
        proposed = "inode32" in p.mount_options
        assert proposed == (real > MAX_32), (label, real)
        warned = [w.message for w in p.warnings if w.rule == "inode32"]
        if not proposed:
            assert warned == []
            return
        # The warning's "first N AGs": the last inode of AG N-1 fits in 32 bits, AG N's does not.
        allowed = int(re.findall(r"only go in the first (\d+) AGs", warned[0])[0])
        assert inode_number(db(dev, f"convert agno {allowed - 1} agbno {last_block} ino")) \
            <= MAX_32
        assert inode_number(db(dev, f"convert agno {allowed} agbno {last_block} ino")) > MAX_32


def inode_number(xfs_db_output: str) -> int:
    found = re.search(r"\((\d+)\)", xfs_db_output)
    assert found, xfs_db_output
    return int(found.group(1))
