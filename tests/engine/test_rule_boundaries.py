"""Every rule threshold, tested on both sides of its edge, so that a boundary moved by one (a
`>=` written `>`) fails a test; where mkfs.xfs decides the edge, it is asked (`mkfs.xfs -N`).
scripts/bench_mutations.py finds the edges no test pins."""

from __future__ import annotations

import pytest

from advisor.engine.context import Context
from advisor.engine.rulebook import RuleBook
from advisor.engine.rules.ag_concurrency import multidisk_agcount
from advisor.engine.rules.inode_space import default_maxpct
from advisor.engine.rules.log_size import LogSizeParams, log_size, reservation_per_writer
from advisor.errors import ProposalBug
from advisor.models.device import Device, StripeGeometry
from advisor.models.environment import Environment
from advisor.models.proposal import Decision, Proposal
from advisor.models.workload import Workload
from advisor.system.mkfs import dry_run
from tests.engine.helpers import GiB, MiB, TiB, device, environment, md_stripe

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


def _proposal(dev: Device, env: Environment | None = None, **answers: object) -> Proposal:
    from advisor.advice import propose
    return propose(dev, Workload.model_validate(answers), env=env or environment())


def _decision(p: Proposal, setting: str) -> Decision:
    return next(d for d in p.decisions if d.setting == setting)


#: ag-growth's max_ag_bytes: 1 TiB less one 4 KiB block.
MAX_AG = TiB - 4 * KiB


@pytest.mark.parametrize(("eventual", "limit"), [
    (256 * (MAX_AG - 4 * KiB), "1.5 TiB now holds no whole number of larger AGs"),
    (256 * MAX_AG, "1.5 TiB now holds no whole number of larger AGs"),
    (256 * MAX_AG + 1, "AGs cannot exceed 1024 GiB"),
])
def test_growth_needing_exactly_the_largest_ag_blames_the_device(eventual: int,
                                                                 limit: str) -> None:
    """1.5 TiB growing to 256 AGs of exactly the largest AG mkfs.xfs allows: AGs that large are
    allowed, so what keeps them smaller is the device (two of them do not fit in 1.5 TiB); one
    byte more needs AGs beyond the limit. mkfs.xfs -N makes the two 768 GiB AGs proposed."""
    p = _proposal(device(1536 * GiB, rotational=False), eventual_size=eventual)
    assert _decision(p, "-d agcount/agsize").options == ["-d", "agsize=768g"]
    assert p.check is not None
    assert (p.check.geometry.agcount, p.check.geometry.agsize_bytes) == (2, 768 * GiB)
    [warning] = [w.message for w in p.warnings if "needs more than 256 AGs" in w.message]
    assert limit in warning, warning


@pytest.mark.parametrize(("size", "agsize", "whole"), [
    (80 * GiB - 256 * KiB, 40 * GiB - 128 * KiB, True),
    (80 * GiB, 40 * GiB - 64 * KiB, False),
    (80 * GiB + 256 * KiB, 40 * GiB + 128 * KiB, None),
])
def test_a_device_of_exactly_two_largest_ags_is_not_told_to_be_that_size(
        size: int, agsize: int, whole: bool | None) -> None:
    """md RAID (64 KiB x 4) growing to 10 TiB wants two 40 GiB AGs. At exactly 80 GiB they
    fit, but 40 GiB is a multiple of the stripe width, so each AG is one stripe unit smaller
    (257 AGs at 10 TiB): the warning must not suggest a device of exactly 80 GiB, which this
    one already is. 256 KiB less: 40 GiB AGs do not fit and the warning names that size; 256
    KiB more: 40 GiB + 128 KiB AGs keep it to 256 (no warning). mkfs.xfs -N makes each."""
    dev = device(size, name="md0", rotational=False, stripe=md_stripe(64 * KiB, 4))
    p = _proposal(dev, eventual_size=10 * TiB)
    assert p.check is not None
    assert (p.check.geometry.agcount, p.check.geometry.agsize_bytes) == (2, agsize)
    warnings = [w.message for w in p.warnings if "needs more than 256 AGs" in w.message]
    if whole is None:
        assert warnings == []
    else:
        assert len(warnings) == 1
        assert ("a device of exactly 85899345920 bytes" in warnings[0]) == whole, warnings


@pytest.mark.parametrize(("writers", "agcount", "why"), [
    (14, 14, "one per writer"), (15, 15, "one per writer"),
    (16, 15, "the most that each stay larger than the 64 MiB log")])
def test_ag_count_limited_by_writers_and_the_log_at_once_names_the_writers(
        writers: int, agcount: int, why: str) -> None:
    """1 GiB holds 15 AGs each larger than its 64 MiB log (mkfs.xfs -N refuses 16: "Log size
    must be at least 64MB"). 15 writers ask for 15 AGs, the same count: the reason is the
    writers; 16 writers are held to 15 by the log."""
    p = _proposal(device(GiB, rotational=False), concurrent_writers=writers,
                  writer_activity="metadata")
    d = _decision(p, "-d agcount/agsize")
    assert d.options == ["-d", f"agcount={agcount}"] and why in d.reason, d.reason
    assert p.check is not None and p.check.geometry.agcount == agcount
    with pytest.raises(ProposalBug, match="Log size must be at least"):
        dry_run(device(GiB), ["-d", "agcount=16"])


@pytest.mark.parametrize(("kernel", "sparse"), [("4.1", 0), ("4.2", 1), ("4.3", 1)])
def test_a_feature_is_kept_for_the_kernel_it_appeared_in(kernel: str, sparse: int) -> None:
    """kernel-compat's feature_since: sparse inodes from 4.2. Kernel 4.2 mounts them, so they
    stay on; 4.1 does not. mkfs.xfs -N makes the proposal with and without them."""
    p = _proposal(device(100 * GiB, rotational=False), must_mount_on_kernel=kernel)
    assert ("sparse=0" in " ".join(_decision(p, "-m features").options)) == (not sparse)
    assert p.check is not None and p.check.geometry.features["sparse"] == sparse


@pytest.mark.parametrize(("disks", "options"), [
    (1, []), (2, ["-d", "su=64k,sw=2"]), (3, ["-d", "su=64k,sw=3"])])
def test_two_data_disks_are_a_stripe(disks: int, options: list[str]) -> None:
    """stripe-geometry: one data disk is no stripe, two are (answered, and hidden below a
    device mapper that does not pass the md array's geometry up); mkfs.xfs -N makes sw."""
    answered = _proposal(device(100 * GiB, rotational=False),
                         storage={"raid_stripe_unit": "64KiB", "raid_data_disks": disks})
    hidden = StripeGeometry(sunit_bytes=64 * KiB, swidth_bytes=64 * KiB * disks,
                            data_disks=disks, source="md0 (md raid10)", used_by_mkfs=False)
    below = _proposal(device(100 * GiB, name="dm-0", rotational=False, stripe=hidden))
    for p in (answered, below):
        assert _decision(p, "-d su/sw").options == options
        assert p.check is not None
        assert p.check.geometry.swidth_blocks == (disks * 16 if options else 0)


@pytest.mark.parametrize(("size", "target", "writers", "options", "note"), [
    (100 * GiB, "5.14.0", None, ["-l", "size=64m"], True),
    (100 * GiB, "5.15.0", None, [], False),
    (100 * GiB, "5.16.0", None, [], False),
    (TiB, "5.14.0", None, ["-l", "size=512m"], True),
    (100 * GiB, "5.14.0", 200, ["-l", "size=169m"], False),
])
def test_a_captured_xfsprogs_before_5_15_gets_its_log_asked(
        size: int, target: str, writers: int | None, options: list[str], note: bool) -> None:
    """xfsprogs 5.15 made 64 MiB the smallest log; a captured host with an older one makes a
    smaller log than the local mkfs.xfs -N shows. 5.14 is older, 5.15 is not. At 100 GiB the
    64 MiB asked for is exactly the default shown, and still asked for (with the note that the
    captured xfsprogs makes less); 1 TiB asks for the 512 MiB shown; 200 writers' 169 MiB is
    beyond the default, with no such note."""
    env = environment().model_copy(update={"target_xfsprogs": target})
    answers = {} if writers is None else {"concurrent_writers": writers,
                                          "writer_activity": "metadata"}
    p = _proposal(device(size, rotational=False), env, **answers)
    d = _decision(p, "-l size")
    assert d.options == options, d.reason
    assert ("xfsprogs 5.14.0 makes a smaller one" in d.reason) == note, d.reason
    assert p.check is not None
    assert p.check.geometry.log_bytes == max(dry_run(device(size), []).geometry.log_bytes,
                                             169 * MiB if writers else 0)


@pytest.mark.parametrize(("per_writer", "small"), [
    (48 * MiB - 3, True), (48 * MiB, False), (48 * MiB + 3, False)])
def test_a_writers_log_of_exactly_the_old_minimum_is_the_writers(
        book: RuleBook, per_writer: int, small: bool) -> None:
    """log-size with a site's reservation_bytes_per_writer of 48 MiB: one writer wants exactly
    64 MiB (48 MiB in 75% of the log), the minimum asked of xfsprogs before 5.15. That log is
    the writer's, not raised for the old xfsprogs; 3 bytes less per writer is raised (4 bytes
    short of 64 MiB), 3 more is not."""
    dev = device(100 * GiB)
    defaults = dry_run(dev, []).geometry.model_copy(update={"log_blocks": 2560})
    ctx = Context(device=dev, workload=Workload(concurrent_writers=1, writer_activity="metadata"),
                  env=environment("5.10.0"), geometry=defaults, size=100 * GiB)
    params = book.rules["log-size"].params
    assert isinstance(params, LogSizeParams)
    # The figure the rule uses is logres x logcount plus what the kernel adds to each unit.
    added = reservation_per_writer(params, 0) - params.reservation_bytes_per_writer
    outcome = log_size(ctx, params.model_copy(
        update={"reservation_bytes_per_writer": per_writer - added}))
    assert outcome.change is not None
    assert outcome.change.options == ["-l", "size=64m" if per_writer <= 48 * MiB else "size=65m"]
    assert ("5.10.0 makes small logs" in outcome.change.reason) == small, outcome.change.reason


@pytest.mark.parametrize(("eventual", "changed"), [
    (TiB, False), (TiB + 4 * KiB, False), (TiB + 8 * MiB, True)])
def test_a_log_for_growth_only_when_mkfs_makes_a_larger_one_there(eventual: int,
                                                                  changed: bool) -> None:
    """1 TiB (512 MiB log) growing by 4 KiB: mkfs.xfs -N makes the same 512 MiB log there, so
    the default stays for the reason it would without growth; growing by 8 MiB it makes one
    block more, and the log is raised (to whole MiB)."""
    made = dry_run(device(eventual), []).geometry.log_bytes
    assert made == 512 * MiB + (4 * KiB if changed else 0)
    d = _decision(_proposal(device(TiB, rotational=False), eventual_size=eventual), "-l size")
    assert d.changed == changed and d.rule == "log-size", d.reason
    assert d.options == (["-l", "size=513m"] if changed else [])
    assert changed or "the default 512 MiB log is enough" in d.reason, d.reason


@pytest.mark.parametrize(("answers", "limited"), [
    ({"eventual_size": 4076 * GiB - 8 * MiB}, False),
    ({"eventual_size": 4076 * GiB}, False),
    ({"concurrent_writers": 2424, "writer_activity": "metadata"}, False),
    ({"concurrent_writers": 2425, "writer_activity": "metadata"}, True),
])
def test_a_log_of_exactly_the_largest_is_not_limited(answers: dict[str, object],
                                                      limited: bool) -> None:
    """1 TiB: mkfs.xfs -N makes its largest log, 2038 MiB, from 4076 GiB (1/2048 of it) and
    one block less 8 MiB below. A log for growth to exactly there is the largest, not limited
    to it; 2424 writers want just under 2038 MiB (whole MiB: 2038), 2425 just over."""
    assert dry_run(device(4076 * GiB), []).geometry.log_bytes == 2038 * MiB
    assert dry_run(device(4076 * GiB - 8 * MiB), []).geometry.log_bytes == 2038 * MiB - 4 * KiB
    p = _proposal(device(TiB, rotational=False), **answers)
    d = _decision(p, "-l size")
    assert d.options == ["-l", "size=2038m"]
    assert ("limited by the maximum log size" in d.reason) == limited, d.reason
    assert p.check is not None and p.check.geometry.log_bytes == 2038 * MiB


@pytest.mark.parametrize(("sector", "su", "lsu_blocks", "reason"), [
    (512, 4 * KiB, 1, "mkfs.xfs already makes the log stripe unit one block (4k)"),
    (512, 8 * KiB, 2, "log writes stay aligned to the 8k stripe unit"),
    (4096, 64 * KiB, 1, "it does so for 4096-byte sectors whatever the data stripe"),
])
def test_a_one_block_log_stripe_unit_names_the_sector_only_above_512(
        sector: int, su: int, lsu_blocks: int, reason: str) -> None:
    """log-stripe-unit: mkfs.xfs -N makes a one-block log stripe unit from a 4 KiB data stripe
    unit on 512-byte sectors (the data stripe's, so the reason does not blame the sector), and
    from any stripe on 4 KiB sectors."""
    p = _proposal(device(100 * GiB, rotational=False, logical_sector=sector,
                         physical_sector=sector),
                  storage={"raid_stripe_unit": su, "raid_data_disks": 4})
    d = _decision(p, "-l su")
    assert not d.changed and reason in d.reason, d.reason
    assert ("-byte sectors" in d.reason) == (sector > 512), d.reason
    assert p.check is not None
    assert (p.check.geometry.log_sunit_blocks, p.check.geometry.sector_size) == (lsu_blocks,
                                                                                  sector)


def test_a_device_of_exactly_two_largest_possible_ags_is_not_told_to_be_that_size() -> None:
    """Two AGs of the largest size mkfs.xfs makes (1 TiB less 4 KiB) fill this device exactly;
    300 TiB would want larger ones. The warning blames the AG limit and does not suggest a
    device of exactly this size (it already is one). mkfs.xfs -N makes the two AGs."""
    largest = TiB - 4 * KiB
    p = _proposal(device(2 * largest, rotational=False), eventual_size=300 * TiB)
    assert p.check is not None
    assert (p.check.geometry.agcount, p.check.geometry.agsize_bytes) == (2, largest)
    [warning] = [w.message for w in p.warnings if "needs more than 256 AGs" in w.message]
    assert "AGs cannot exceed" in warning and "a device of exactly" not in warning, warning


def test_the_largest_default_log_is_shown_as_mkfs_makes_it() -> None:
    """At 8 TiB mkfs.xfs -N makes its largest log, 521,728 blocks of 4 KiB: 2038 MiB, which the
    kept default gives as that, not rounded to "2 GiB"."""
    made = dry_run(device(8 * TiB), []).geometry
    assert made.log_blocks * made.block_size == 2038 * MiB
    d = _decision(_proposal(device(8 * TiB, rotational=False)), "-l size")
    assert not d.changed and d.default == "2038 MiB", d.default
