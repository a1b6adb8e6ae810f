"""The inode-size rule's inline-attribute claims, checked on real XFS filesystems: for each inode
size the rule can choose, files carrying the attribute sets at the rule's boundaries are written on
a loop device and `xfs_db -r` reads where their attributes went (core.aformat: 1 local, 2 extents).

The rule states three things per inode size, each tested here against the kernel:
- the inline capacity it quotes (e.g. "a 512-byte inode 280 B"): a set filling exactly that many
  bytes of attribute fork stays local, one byte more does not;
- its decision boundary: the largest answer it says fits (with its assumed attribute count and
  headroom) stays local;
- the 254-byte value limit: a 254-byte value stays local, 255 does not."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from advisor.advice import propose
from advisor.engine.rulebook import load_rulebook
from advisor.engine.rules.inode_size import (
    InodeParams,
    assumed_attributes,
    fork_bytes,
    inline_capacity,
    usable_capacity,
)
from advisor.models.workload import Workload
from tests.conftest import loop_device, mounted, require_root_tools, sh
from tests.engine.helpers import GiB, device, environment

BOOK = load_rulebook()
PARAMS = BOOK.rules["inode-size"].params
assert isinstance(PARAMS, InodeParams)
BLOCK = 4096
SIZES = [s for s in PARAMS.inode_sizes if s <= BLOCK // 2]


def attribute_set(name_value_bytes: int, count: int) -> list[tuple[str, int]]:
    """`count` user attributes (stored names of 3 bytes: a00, a01...) whose stored names and
    values add up to `name_value_bytes`: (name, value length) pairs."""
    values = name_value_bytes - 3 * count
    base, extra = divmod(values, count)
    pairs = [(f"user.a{i:02d}", base + (1 if i < extra else 0)) for i in range(count)]
    assert all(0 <= v <= PARAMS.max_inline_value for _, v in pairs), pairs
    return pairs


def set_filling(fork: int, count: int) -> list[tuple[str, int]]:
    """A set of `count` attributes that takes exactly `fork` bytes of inline attribute fork."""
    return attribute_set(fork - PARAMS.fork_header_bytes - count * PARAMS.entry_overhead_bytes,
                         count)


def rule_boundary(inode_size: int) -> int:
    """The largest xattr_bytes_per_file the rule says fits inline in `inode_size`."""
    room = usable_capacity(inline_capacity(inode_size, True, PARAMS), PARAMS)
    need = 1
    while fork_bytes(need + 1, assumed_attributes(need + 1, PARAMS), PARAMS) <= room:
        need += 1
    return need


def chosen_inode_size(xattr_bytes: int) -> int | None:
    """The inode size the proposal gives for this answer (None: no size holds them inline)."""
    p = propose(device(100 * GiB, rotational=False), Workload(xattr_bytes_per_file=xattr_bytes),
                env=environment(), rulebook=BOOK)
    decision = next(d for d in p.decisions if d.setting == "-i size")
    if decision.changed:
        return int(decision.options[1].removeprefix("size="))
    if any("more than any inode size" in w.message for w in p.warnings):
        return None
    assert p.mkfs_defaults is not None
    return p.mkfs_defaults.inode_size


def aformat(dev: str, inode: int) -> str:
    out = sh("xfs_db", "-r", "-c", f"inode {inode}", "-c", "print core.aformat", dev).stdout
    found = re.search(r"core\.aformat = \d+ \((\w+)\)", out)
    assert found, out
    return found.group(1)


def test_the_rule_quotes_the_capacity_it_computes() -> None:
    """The reason names each inode size's inline capacity: the numbers tested below."""
    p = propose(device(100 * GiB, rotational=False), Workload(xattr_bytes_per_file=600),
                env=environment(), rulebook=BOOK)
    reason = next(d.reason for d in p.decisions if d.setting == "-i size")
    for size in SIZES:
        held = inline_capacity(size, True, PARAMS)
        assert f"a {size}-byte inode holds {held} B" in reason, reason


@pytest.mark.parametrize("inode_size", SIZES)
def test_inline_boundaries_on_a_real_filesystem(inode_size: int, tmp_path: Path) -> None:
    require_root_tools("losetup", "mkfs.xfs", "xfs_db", "mount")
    capacity = inline_capacity(inode_size, True, PARAMS)
    boundary = rule_boundary(inode_size)
    # The rule's own decisions around its boundary: it fits here, and not one byte later.
    assert chosen_inode_size(boundary) == inode_size
    assert chosen_inode_size(boundary + 1) != inode_size
    count = assumed_attributes(boundary, PARAMS)
    few = max(2, -(-capacity // 200))  # values stay under the 254-byte limit
    cases = {
        "rule boundary": (attribute_set(boundary, count), "local"),
        "capacity, few attributes": (set_filling(capacity, few), "local"),
        "capacity + 1, few attributes": (set_filling(capacity + 1, few), "extents"),
        "capacity, many attributes": (set_filling(capacity, 3 * few), "local"),
        "capacity + 1, many attributes": (set_filling(capacity + 1, 3 * few), "extents"),
        "largest inline value": ([("user.v", PARAMS.max_inline_value)], "local"),
        "value one byte longer": ([("user.v", PARAMS.max_inline_value + 1)], "extents"),
    }
    inodes: dict[str, int] = {}
    with loop_device(tmp_path / "xattr.img", 512 << 20) as dev:
        sh("mkfs.xfs", "-q", "-f", "-i", f"size={inode_size}", dev)
        with mounted(dev, tmp_path / "mnt") as mnt:
            for i, (label, (attrs, _)) in enumerate(cases.items()):
                path = mnt / f"f{i}"
                path.touch()
                for name, length in attrs:
                    os.setxattr(path, name, b"x" * length)
                inodes[label] = os.stat(path).st_ino
        seen = {label: aformat(dev, ino) for label, ino in inodes.items()}
    assert seen == {label: want for label, (_, want) in cases.items()}, (inode_size, capacity)


def _swift(name_value_bytes: int) -> list[tuple[str, int]]:
    """OpenStack Swift's object metadata: one pickle cut into values of at most 254 bytes under
    user.swift.metadata, user.swift.metadata1, ... (stored names of 14, 15, 15 bytes)."""
    names = ["user.swift.metadata", "user.swift.metadata1", "user.swift.metadata2"]
    values = name_value_bytes - sum(len(n) - len("user.") for n in names)
    pairs = [(names[0], 254), (names[1], 254), (names[2], values - 508)]
    assert 0 < pairs[2][1] <= 254
    return pairs


def _decide(**answers: int) -> tuple[int | None, str]:
    p = propose(device(100 * GiB, rotational=False), Workload(**answers),
                env=environment(), rulebook=BOOK)
    d = next(d for d in p.decisions if d.setting == "-i size")
    size = int(d.options[1].removeprefix("size=")) if d.changed else None
    return size, d.reason


@pytest.mark.root
def test_a_counted_swift_set_gets_the_inode_that_really_holds_it(tmp_path: Path) -> None:
    """Swift's 3 chunks, 650 B of names and values: with the count the rule gives 1024 (not
    2048), and a real 1024-byte inode keeps them local where a 512-byte one does not. Without the
    count it states how many attributes of that total 1024 keeps inline: that many stay local
    on a real filesystem, and so does the most that fills the fork exactly, one more does not."""
    require_root_tools("losetup", "mkfs.xfs", "xfs_db", "mount")
    total = 650
    assert _decide(xattr_bytes_per_file=total, xattrs_per_file=3)[0] == 1024
    _, reason = _decide(xattr_bytes_per_file=total)
    said = re.search(r"a 1024-byte inode keeps them inline as up to (\d+) attributes", reason)
    assert said, reason
    stated = int(said.group(1))
    exact = (inline_capacity(1024, True, PARAMS) - PARAMS.fork_header_bytes - total) \
        // PARAMS.entry_overhead_bytes
    cases = {
        (512, "swift"): (_swift(total), "extents"),
        (1024, "swift"): (_swift(total), "local"),
        (1024, "stated"): (attribute_set(total, stated), "local"),
        (1024, "fills the fork"): (attribute_set(total, exact), "local"),
        (1024, "one more"): (attribute_set(total, exact + 1), "extents"),
    }
    seen: dict[tuple[int, str], str] = {}
    for inode_size in (512, 1024):
        inodes: dict[tuple[int, str], int] = {}
        with loop_device(tmp_path / f"swift{inode_size}.img", 512 << 20) as dev:
            sh("mkfs.xfs", "-q", "-f", "-K", "-i", f"size={inode_size}", dev)
            with mounted(dev, tmp_path / f"mnt{inode_size}") as mnt:
                for i, (key, (attrs, _)) in enumerate(cases.items()):
                    if key[0] != inode_size:
                        continue
                    path = mnt / f"f{i}"
                    path.touch()
                    for name, length in attrs:
                        os.setxattr(path, name, b"x" * length)
                    inodes[key] = os.stat(path).st_ino
            seen |= {key: aformat(dev, ino) for key, ino in inodes.items()}
    assert seen == {key: want for key, (_, want) in cases.items()}, (stated, exact)
