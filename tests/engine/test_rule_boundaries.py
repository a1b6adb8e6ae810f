"""Every rule threshold, tested on both sides of its edge, so that a boundary moved by one (a
`>=` written `>`) fails a test; where mkfs.xfs decides the edge, it is asked (`mkfs.xfs -N`).
scripts/bench_mutations.py finds the edges no test pins."""

from __future__ import annotations

import pytest

from advisor.engine.context import Context
from advisor.engine.rules.ag_concurrency import multidisk_agcount
from advisor.engine.rules.inode_space import default_maxpct
from advisor.models.workload import Workload
from advisor.system.mkfs import dry_run
from tests.engine.helpers import GiB, MiB, TiB, device, environment

KiB = 1 << 10


@pytest.mark.parametrize(("size", "agcount"), [
    (512 * GiB, 16), (512 * GiB + 4 * KiB, 32), (8 * GiB, 8), (8 * GiB + 4 * KiB, 16),
    (128 * MiB, 8), (128 * MiB - 4 * KiB, 4), (64 * MiB, 4), (64 * MiB - 4 * KiB, 2),
    (32 * MiB, 2), (32 * MiB - 4 * KiB, 1),
])
def test_multidisk_agcount_steps(size: int, agcount: int) -> None:
    """xfsprogs mkfs/xfs_mkfs.c calc_default_ag_geometry: `dblocks > 512 GiB`, `> 8 GiB`, then
    `>= 128 MiB`, `>= 64 MiB`, `>= 32 MiB`. mkfs.xfs 6.1 refuses filesystems under 300 MB, so
    the small steps are the source's (older mkfs.xfs make them); the large ones are asked of
    mkfs.xfs -N in test_rule_cases."""
    assert multidisk_agcount(size) == agcount


def _ctx(size: int) -> Context:
    geometry = dry_run(device(300 * MiB), []).geometry.model_copy(update={"imaxpct": None})
    return Context(device=device(size), workload=Workload(), env=environment(),
                   geometry=geometry, size=size)


@pytest.mark.parametrize(("size", "maxpct"), [
    (TiB - 4 * KiB, 25), (TiB, 5), (50 * TiB - 4 * KiB, 5), (50 * TiB, 1)])
def test_default_maxpct_table_in_binary_units(size: int, maxpct: int) -> None:
    assert default_maxpct(_ctx(size)) == maxpct


@pytest.mark.parametrize(("size", "maxpct"), [(1023 * GiB, 25), (1024 * GiB, 5)])
def test_default_maxpct_is_what_mkfs_makes(size: int, maxpct: int) -> None:
    assert dry_run(device(size), []).geometry.imaxpct == maxpct


@pytest.mark.parametrize("eventual", [2 * TiB, 3 * TiB, 10 * TiB])
def test_log_for_the_eventual_size_is_what_mkfs_makes_there(eventual: int) -> None:
    """log-size on 1 TiB growing to `eventual`: the log mkfs.xfs -N makes at `eventual`."""
    from advisor.advice import propose
    made = dry_run(device(eventual), []).geometry.log_bytes
    p = propose(device(TiB, rotational=False), Workload(eventual_size=eventual),
                env=environment())
    d = next(d for d in p.decisions if d.setting == "-l size")
    assert d.rule == "log-size" and p.check is not None
    assert p.check.geometry.log_bytes == made


def _growth_warnings(size: int, **answers: object) -> list[str]:
    from advisor.advice import propose
    p = propose(device(size, rotational=False), Workload.model_validate(answers),
                env=environment())
    return [w.message for w in p.warnings if w.rule == "ag-growth"]


@pytest.mark.parametrize(("factor", "warned"), [(10.0, False), (10.5, True)])
def test_growth_beyond_ten_times_is_warned(factor: float, warned: bool) -> None:
    """Guide 2.1.2.2's ~10x: exactly 10x is within it."""
    assert any("beyond the ~10x" in m for m in _growth_warnings(TiB, growth_factor=factor)) \
        == warned


@pytest.mark.parametrize(("size", "warned"), [(160 * GiB, False), (150 * GiB, True)])
def test_exactly_256_ags_when_grown_is_within_the_limit(size: int, warned: bool) -> None:
    """160 GiB to 20 TiB: two 80 GiB AGs make exactly 256 at 20 TiB, no warning; 150 GiB: two
    75 GiB AGs make 274."""
    found = [m for m in _growth_warnings(size, eventual_size="20TiB") if "needs more than" in m]
    assert bool(found) == warned, found


@pytest.mark.parametrize(("value", "warned"), [(254, False), (255, True)])
def test_an_xattr_value_of_254_bytes_stays_inline(value: int, warned: bool) -> None:
    """inode-size's max_inline_value (254: the largest value kept in the inode's attribute fork
    with a short name, measured in test_inline_xattrs)."""
    from advisor.advice import propose
    p = propose(device(TiB, rotational=False), Workload(largest_xattr_value=value),
                env=environment())
    found = [w.message for w in p.warnings if w.rule == "inode-size" and "is over" in w.message]
    assert bool(found) == warned, found


@pytest.mark.parametrize(("eventual", "said"), [(4 * TiB, False), (4 * TiB + 4 * KiB, True)])
def test_inode32_counts_growth_only_beyond_the_size(eventual: int, said: bool) -> None:
    """inode32 looks at the grown geometry only when the eventual size is larger than the
    device: an eventual size equal to it is no growth."""
    from advisor.advice import propose
    p = propose(device(4 * TiB), Workload(nfs_32bit_clients=True, eventual_size=eventual),
                env=environment(), check=False)
    reason = next(d.reason for d in p.decisions if d.setting == "mount inode32/inode64")
    assert ("once grown" in reason) == said, reason


@pytest.mark.parametrize(("page", "said"), [(4096, False), (16384, True)])
def test_block_size_names_larger_pages_only_above_4k(page: int, said: bool) -> None:
    """An ordinary 4 KiB-sector SSD: the keep reason mentions what larger pages would allow
    only when the page is larger than the 4 KiB default block."""
    from advisor.advice import propose
    from advisor.models.environment import Environment
    p = propose(device(TiB, rotational=False), Workload(),
                env=Environment(xfsprogs_version="6.1.0", kernel="6.1.0-18-amd64",
                                page_size=page), check=False)
    reason = next(d.reason for d in p.decisions if d.setting == "-b size")
    assert ("would allow blocks" in reason) == said, reason


@pytest.mark.parametrize(("eventual", "said"), [(TiB, False), (TiB + 4 * KiB, True)])
def test_log_size_counts_growth_only_beyond_the_size(eventual: int, said: bool) -> None:
    """An eventual size equal to the device is no growth: the log-size reason says nothing of
    growing."""
    from advisor.advice import propose
    p = propose(device(TiB, rotational=False), Workload(eventual_size=eventual),
                env=environment(), check=False)
    reason = next(d.reason for d in p.decisions if d.setting == "-l size")
    assert ("growing to" in reason) == said, reason
