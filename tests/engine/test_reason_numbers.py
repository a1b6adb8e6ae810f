"""Every number a reason states about the filesystem is what `mkfs.xfs -N` prints for it.

For each fixture host x fixture workload the proposal is made (its own `mkfs.xfs -N` gate is
p.check), and the numbers in the AG, stripe, log size, log stripe unit and inode32 reasons are
read back: what a reason says of the result (AG count and size, AG count when grown, log size,
stripe, log stripe unit, the geometry inode numbers are computed from) must equal the dry run of
the proposed command; what a changed decision says of the default it replaces must equal the dry
run of the proposed command without that decision's options. Nothing here recomputes the rules'
arithmetic: the oracle is mkfs.xfs."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from advisor.advice import propose
from advisor.answers import load_workload
from advisor.engine.rulebook import RuleBook
from advisor.models.device import Device, device_size
from advisor.models.proposal import Decision, MkfsGeometry, Proposal
from advisor.models.units import human_size, parse_size
from advisor.models.workload import Workload
from advisor.system.argv import merge_options
from advisor.system.mkfs import HostMkfs
from tests.conftest import require
from tests.engine.helpers import environment

DATA = Path(__file__).parent / "data"
HOSTS = sorted((DATA / "hosts").glob("*.json"))
WORKLOADS = sorted((DATA / "workloads").iterdir())
SIZE = r"(\d+(?:\.\d)? [KMGTP]iB)"
#: How many numbers of each kind were checked over all cases (each kind must be seen).
CHECKED: Counter[str] = Counter()

Geometry = Callable[[], MkfsGeometry]


def eventual(device: Device, w: Workload) -> int | None:
    if w.eventual_size is not None:
        return w.eventual_size
    if w.growth_factor is not None:
        return int(device_size(device) * w.growth_factor)
    return None


def without(device: Device, p: Proposal, decision: Decision) -> MkfsGeometry:
    """What mkfs.xfs makes with the proposal's options less this decision's, and less the
    decisions after it that were sized on it (a log sized for AGs it no longer has)."""
    index = p.decisions.index(decision)
    others = [d.options for i, d in enumerate(p.decisions)
              if d.changed and d.setting.startswith("-") and d is not decision
              and not (d.setting == "-l size" and i > index)]
    return HostMkfs().check(device, merge_options(others)).geometry


def check_ag(reason: str, now: MkfsGeometry, before: Geometry, grown: int | None) -> None:
    for size, count in re.findall(rf"the default AGs \({SIZE}\) make (\d+) AGs at", reason):
        assert grown is not None
        assert size == human_size(now.agsize_bytes), reason
        assert int(count) == math.ceil(grown / now.agsize_bytes), reason
        CHECKED["AG size"] += 1
        CHECKED["AG count when grown"] += 1
    for size, count in re.findall(rf"the default {SIZE} AGs would become (\d+) AGs", reason):
        assert grown is not None
        old = before()
        assert size == human_size(old.agsize_bytes), reason
        assert int(count) == math.ceil(grown / old.agsize_bytes), reason
        CHECKED["AG count when grown"] += 1
    for size, count in re.findall(rf"so {SIZE} AGs keep it to (\d+)", reason):
        assert grown is not None
        assert size == human_size(now.agsize_bytes), reason
        assert int(count) == math.ceil(grown / now.agsize_bytes), reason
        CHECKED["AG count when grown"] += 1
    for count in re.findall(r"(?:already makes|limited by|the default) (\d+) (?:AGs|stays)",
                            reason):
        assert int(count) == now.agcount, reason
        CHECKED["AG count"] += 1
    for old_count, new_count in re.findall(r"\((\d+) AGs by default\): (\d+) AGs", reason):
        assert int(old_count) == before().agcount, reason
        assert int(new_count) == now.agcount, reason
        CHECKED["AG count"] += 1


def check_stripe(reason: str, now: MkfsGeometry) -> None:
    found = re.findall(r"su=(\d+[kmg]?), ?sw=(\d+)", reason)
    found += [(su, sw) for sw, su in re.findall(r"\((\d+) data disks of (\d+[kmg])\)", reason)]
    for su, sw in found:
        assert now.sunit_blocks * now.block_size == parse_size(su), reason
        assert now.swidth_blocks // now.sunit_blocks == int(sw), reason
        CHECKED["stripe"] += 1


def check_log(reason: str, now: MkfsGeometry, before: Geometry) -> None:
    """Log sizes are said exactly, in MiB as mkfs.xfs makes them (2038 MiB, never "2 GiB")."""
    for size in re.findall(rf"the default {SIZE} log is", reason):
        assert parse_size(size) == now.log_bytes, reason
        CHECKED["log size"] += 1
    for size, old in re.findall(rf"a {SIZE} log \(default {SIZE}\)", reason):
        assert parse_size(size) == now.log_bytes, reason
        assert parse_size(old) == before().log_bytes, reason
        CHECKED["log size"] += 1


def check_log_stripe(reason: str, now: MkfsGeometry, before: Geometry) -> None:
    for lsu in re.findall(r"is padded to the (\d+[kmg]?) log stripe unit", reason):
        old = before()
        assert old.log_sunit_blocks * old.block_size == parse_size(lsu), reason
        assert now.log_sunit_blocks == 1, reason
        CHECKED["log stripe unit"] += 1
    for lsu in re.findall(r"(?:aligned|aligned to the|one block \()(\d+[kmg])\b", reason):
        assert now.log_sunit_blocks * now.block_size == parse_size(lsu), reason
        CHECKED["log stripe unit"] += 1


def check_inode_geometry(reason: str, now: MkfsGeometry, grown: int | None) -> None:
    pattern = r"\((\d+) AGs of (\d+) blocks, (\d+)-byte inodes in (\d+)-byte blocks\)"
    for agcount, agblocks, isize, bsize in re.findall(pattern, reason):
        assert int(agblocks) == now.agsize_blocks, reason
        assert (int(isize), int(bsize)) == (now.inode_size, now.block_size), reason
        later = math.ceil(grown / now.agsize_bytes) if grown else 0
        assert int(agcount) == max(now.agcount, later), reason
        CHECKED["inode number geometry"] += 1


@pytest.mark.parametrize("workload_path", WORKLOADS, ids=[w.name for w in WORKLOADS])
@pytest.mark.parametrize("host_path", HOSTS, ids=[h.stem for h in HOSTS])
def test_reason_numbers_are_what_mkfs_makes(host_path: Path, workload_path: Path,
                                           book: RuleBook) -> None:
    device = Device.model_validate_json(host_path.read_text())
    workload = load_workload(workload_path)
    p = propose(device, workload, env=environment(), rulebook=book)
    assert p.check is not None
    now = p.check.geometry
    by_setting = {d.setting: d for d in p.decisions}

    def before_of(setting: str) -> Geometry:
        return lambda: without(device, p, by_setting[setting])

    check_stripe(by_setting["-d su/sw"].reason, now)
    ag = by_setting["-d agcount/agsize"]
    check_ag(ag.reason, now, before_of(ag.setting), eventual(device, workload))
    check_stripe(ag.reason, now)
    check_log(by_setting["-l size"].reason, now, before_of("-l size"))
    check_log_stripe(by_setting["-l su"].reason, now, before_of("-l su"))
    check_inode_geometry(by_setting["mount inode32/inode64"].reason, now,
                         eventual(device, workload))


def test_every_kind_of_number_was_checked() -> None:
    """Runs after the cases above (same module, in order): a wording change that makes the
    patterns miss must fail here, not pass silently."""
    require(bool(CHECKED), "runs after the cases above, in the same session")
    kinds = {"AG size", "AG count", "AG count when grown", "stripe", "log size",
             "log stripe unit", "inode number geometry"}
    assert kinds <= set(CHECKED), CHECKED
