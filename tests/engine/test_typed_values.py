"""Rules read earlier decisions as typed values (Context.decided), not by re-parsing option
strings; the engine refuses a change whose typed values disagree with its command line."""

from __future__ import annotations

import pytest

from advisor.advice import propose
from advisor.engine.context import Change, Context, Outcome, check_values
from advisor.engine.registry import DECIDERS, NoParams
from advisor.engine.rulebook import load_rulebook
from advisor.errors import ProposalBug
from advisor.models.proposal import MkfsGeometry
from advisor.models.workload import Workload
from tests.engine.helpers import GiB, device, environment

KiB = 1 << 10


def test_values_must_say_what_the_options_say() -> None:
    good = Change("su=64k,sw=4", ["-d", "su=64k,sw=4"], "r", values={"su": 64 * KiB, "sw": 4})
    assert check_values(good) is None
    assert check_values(Change("noatime", ["noatime"], "r", values={"noatime": True})) is None
    assert "su=32768" in str(check_values(
        Change("su=64k,sw=4", ["-d", "su=64k,sw=4"], "r", values={"su": 32 * KiB, "sw": 4})))
    assert "not in the options" in str(check_values(
        Change("64k", ["-n", "size=64k"], "r", values={"agsize": 65536})))
    assert check_values(Change("crc=0", ["-m", "crc=0"], "r", values={"crc": True})) is not None


def _ctx(**chosen: Change) -> Context:
    geometry = MkfsGeometry(block_size=4096, sector_size=512, inode_size=512, agcount=4,
                            agsize_blocks=1 << 20, data_blocks=4 << 20, naming_block_size=4096,
                            log_blocks=16384, sunit_blocks=0, swidth_blocks=0,
                            log_sunit_blocks=0)
    return Context(device=device(100 * GiB), workload=Workload(), env=environment(),
                   geometry=geometry, size=100 * GiB,
                   chosen={k.replace("_", " "): v for k, v in chosen.items()})


def test_decided_reads_typed_values_and_older_changes_alike() -> None:
    typed = Change("su=64k,sw=4", ["-d", "su=64k,sw=4"], "r", source="answers",
                   values={"su": 64 * KiB, "sw": 4})
    untyped = Change("su=128k,sw=6", ["-d", "su=128k,sw=6"], "r", source="md0")
    assert _ctx(**{"-d_su/sw": typed}).stripe() == (64 * KiB, 4, "answers")
    # A rule written before typed values: its option text is read for it.
    assert _ctx(**{"-d_su/sw": untyped}).stripe() == (128 * KiB, 6, "md0")
    ctx = _ctx(mount_atime=Change("noatime", ["noatime"], "r"))
    assert ctx.decided("mount atime", "noatime") is True
    assert ctx.decided("mount atime", "relatime") is None
    assert ctx.decided("-n size", "size") is None  # kept at its default


def test_the_engine_refuses_a_change_that_contradicts_its_options(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def lying(ctx: Context, params: NoParams) -> Outcome:
        return Outcome(change=Change("noatime", ["noatime"], "r", values={"noatime": False}))

    monkeypatch.setitem(DECIDERS, "atime", (lying, NoParams))
    with pytest.raises(ProposalBug, match="typed values disagree"):
        propose(device(100 * GiB), Workload(atime_needed=False), env=environment(),
                rulebook=load_rulebook(), check=False)
