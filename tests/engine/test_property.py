"""Random devices and answers: every proposal passes `mkfs.xfs -N` (propose() checks it and
raises ProposalBug otherwise), contains no obsolete option, and has one value per setting."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.advice import propose
from advisor.engine.decide import obsolete_in
from advisor.engine.rulebook import RuleBook, load_rulebook
from advisor.engine.settings import SETTINGS
from advisor.models.device import StripeGeometry
from advisor.models.workload import Workload
from advisor.system.argv import pairs_only
from tests.engine.helpers import GiB, TiB, device, environment
from tests.engine.strategies import answers

BOOK: RuleBook = load_rulebook()
KiB = 1 << 10

sizes = st.one_of(st.integers(1, 64).map(lambda n: n * GiB),
                  st.integers(1 * GiB, 2 * TiB).map(lambda n: n // 4096 * 4096),
                  st.sampled_from([4 * TiB, 17 * TiB, 100 * TiB]))
stripes = st.one_of(st.none(), st.builds(
    lambda chunk, disks: StripeGeometry(sunit_bytes=chunk, swidth_bytes=chunk * disks,
                                        data_disks=disks, source="md", used_by_mkfs=True),
    st.sampled_from([64 * KiB, 128 * KiB, 256 * KiB, 512 * KiB, 1024 * KiB]),
    st.integers(2, 16)))
maybe = st.none  # shorthand: every answer may be missing


def optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(size=sizes, stripe=stripes, rotational=optional(st.booleans()),
       cache=optional(st.sampled_from(["write back", "write through"])),
       sector=st.sampled_from([512, 4096]), memory=st.sampled_from([1 * GiB, 8 * GiB, 256 * GiB]),
       data=answers)
def test_random_proposals_are_valid(size: int, stripe: StripeGeometry | None,
                                    rotational: bool | None, cache: str | None, sector: int,
                                    memory: int, data: dict[str, Any]) -> None:
    dev = device(size, stripe=stripe, rotational=rotational, write_cache=cache,
                 physical_sector=sector, logical_sector=sector)
    p = propose(dev, Workload.model_validate(data), env=environment(memory=memory), rulebook=BOOK)
    assert p.check is not None  # the mkfs.xfs -N dry run passed
    assert [d.setting for d in p.decisions] == [s.name for s in SETTINGS]
    assert obsolete_in(p.mkfs_options, p.mount_options, BOOK) == []
    pairs = pairs_only(p.mkfs_options)  # flag/argument pairs, then bare flags (-K) at the end
    assert p.mkfs_options[len(pairs):] in ([], ["-K"]), p.mkfs_options
    flags = pairs[::2]
    assert len(flags) == len(set(flags))
    keys = [f"{flag} {part.split('=')[0]}" for flag, arg in
            zip(pairs[::2], pairs[1::2], strict=True) for part in arg.split(",")]
    assert len(keys) == len(set(keys)), keys
    assert len(p.mount_options) == len(set(p.mount_options))
    assert "-f" not in p.mkfs_argv
    assert not [w for w in p.warnings if "multiple of stripe width" in w.message]
