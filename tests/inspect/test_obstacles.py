"""The device's obstacles are judged once (advisor.models.obstacles) and said in the same words by
the scratch-device guard, the device rules, the device lists (CLI and TUI) and the details."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.advice import propose
from advisor.bench import guard
from advisor.commands.devices import render_details
from advisor.engine.rulebook import RuleBook, load_rulebook
from advisor.errors import DeviceProblem
from advisor.models.device import Device, Fact, Inventory, Usage
from advisor.models.obstacles import OBSTACLE_KINDS, obstacles
from advisor.models.workload import Workload
from advisor.render.devices import badges, in_use
from tests.engine.helpers import GiB, device, environment

EXT4 = Fact[str](value="ext4", source="blkid", raw="TYPE=ext4 USAGE=filesystem")

#: One device per obstacle kind, and the kind it must be judged to have.
CASES: list[tuple[dict[str, Any], str]] = [
    ({"usage": Usage(mountpoints=["/srv", "/srv2"], probed=True)}, "mounted"),
    ({"usage": Usage(swap=True, probed=True)}, "swap"),
    ({"holders": ["dm-0"], "children": ["dm-0"]}, "held"),
    ({"usage": Usage(loops=["loop7"], probed=True)}, "looped"),
    ({"children": ["sdx1", "sdx2"]}, "partitions"),
    ({"usage": Usage(signatures=[EXT4], probed=True)}, "data"),
    ({"read_only": True}, "read-only"),
    ({"zoned": "host-aware"}, "zoned"),
    ({"alignment_offset": 3584}, "misaligned"),
]


@pytest.fixture(scope="module")
def book() -> RuleBook:
    return load_rulebook()


def _device(facts: dict[str, Any]) -> Device:
    facts = {"usage": Usage(probed=True), **facts}
    return device(100 * GiB, **facts)


def test_every_kind_has_a_case() -> None:
    assert sorted(kind for _, kind in CASES) == sorted(OBSTACLE_KINDS)


@pytest.mark.parametrize(("facts", "kind"), CASES, ids=[k for _, k in CASES])
def test_one_judgement_in_every_front(book: RuleBook, facts: dict[str, Any], kind: str) -> None:
    dev = _device(facts)
    found = obstacles(dev)
    assert [o.kind for o in found] == [kind]
    o = found[0]
    # The device lists (CLI tree and TUI list share render.devices): the obstacle's badge.
    assert [(b.text, b.kind) for b in badges(dev)] == [(o.badge, "blocks" if o.blocks
                                                        else "warns")]
    assert in_use(dev) == ([o.badge] if o.blocks else [])
    # The guard: refuses what blocks, in the obstacle's words; lets a mere warning pass.
    inv = Inventory(sysroot="/nonexistent", live=False, devices=[dev])
    reasons = guard.refusals(inv, dev, 1 << 30)
    assert (f"it {o.says}" in reasons) is o.blocks, reasons
    # The rule book: its device rule warns in the same words, once.
    p = propose(dev, Workload(), env=environment(), rulebook=book, check=False)
    said = [w.message for w in p.warnings if o.says in w.message]
    assert said == [o.sentence("sdx")], [w.message for w in p.warnings]
    # `devices DEV`: the details name it too.
    assert f"sdx {o.says}" in render_details(dev)


def test_a_clean_device_is_free(book: RuleBook) -> None:
    dev = _device({})
    assert obstacles(dev) == []
    assert [b.text for b in badges(dev)] == ["free"]
    inv = Inventory(sysroot="/nonexistent", live=False, devices=[dev])
    assert guard.refusals(inv, dev, 1 << 30) == []


def test_mounted_or_swap_is_not_also_said_to_hold_data() -> None:
    dev = _device({"usage": Usage(mountpoints=["/srv"], signatures=[EXT4], probed=True)})
    assert [o.kind for o in obstacles(dev)] == ["mounted"]
    inv = Inventory(sysroot="/nonexistent", live=False, devices=[dev])
    reasons = guard.refusals(inv, dev, 1 << 30)
    assert "it holds data: ext4 (TYPE=ext4 USAGE=filesystem)" in reasons, reasons


def test_host_managed_blocks_the_proposal_and_the_guard() -> None:
    dev = _device({"zoned": "host-managed"})
    [o] = obstacles(dev)
    assert o.blocks and o.badge == "zoned host-managed"
    inv = Inventory(sysroot="/nonexistent", live=False, devices=[dev])
    assert f"it {o.says}" in guard.refusals(inv, dev, 1 << 30)
    with pytest.raises(DeviceProblem, match="host-managed zoned device"):
        propose(dev, Workload(), env=environment(), check=False)
