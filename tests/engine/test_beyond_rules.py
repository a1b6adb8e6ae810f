"""What the allocation, quota and inode rules say depends on the host's kernel (CONFIG_XFS_QUOTA,
CONFIG_XFS_ONLINE_SCRUB, CONFIG_XFS_ONLINE_REPAIR) and on the geometry; each case goes through
the real proposal and its mkfs.xfs -N gate."""

from __future__ import annotations

from advisor.advice import propose
from advisor.engine.context import Change, Context
from advisor.engine.rules.extent_size_hint import ExtentSizeHintParams, extent_size_hint
from advisor.models.device import device_size
from advisor.models.proposal import Decision, MkfsGeometry, Proposal
from advisor.models.workload import Storage, Workload
from tests.engine.helpers import GiB, TiB, device, environment

MiB = 1 << 20


def decision(p: Proposal, setting: str) -> Decision:
    return next(d for d in p.decisions if d.setting == setting)


def with_kernel(**options: bool) -> Proposal:
    env = environment().model_copy(update={"kernel_xfs": options})
    return propose(device(4 * TiB, rotational=False),
                   Workload(online_scrub=True, per_tenant_quotas=True, mount_point="/srv/t"),
                   env=env)


def test_rmapbt_says_what_xfs_scrub_does_on_the_kernel() -> None:
    full = with_kernel(QUOTA=True, ONLINE_SCRUB=True, ONLINE_REPAIR=True)
    assert "checks and repairs online" in decision(full, "-m rmapbt").reason
    check_only = with_kernel(QUOTA=True, ONLINE_SCRUB=True, ONLINE_REPAIR=False)
    assert "repair stays offline" in decision(check_only, "-m rmapbt").reason
    none = with_kernel(QUOTA=False, ONLINE_SCRUB=False, ONLINE_REPAIR=False)
    d = decision(none, "-m rmapbt")
    assert d.changed and d.options == ["-m", "rmapbt=1"]
    assert any("scrubbing facility is not available" in w.message for w in none.warnings)
    unknown = with_kernel()
    assert "is not known" in decision(unknown, "-m rmapbt").reason
    assert not any(w.rule == "rmapbt" for w in unknown.warnings)


def test_project_quota_follows_the_kernels_config() -> None:
    with_quota = decision(with_kernel(QUOTA=True), "mount quota")
    assert with_quota.options == ["prjquota"] and "not known" not in with_quota.reason
    assert "xfs_quota -x -c 'limit -p bhard=100g tenant-a' /srv/t" in with_quota.reason
    unknown = decision(with_kernel(), "mount quota")
    assert unknown.changed and "CONFIG_XFS_QUOTA (not known" in unknown.reason
    without = with_kernel(QUOTA=False)
    assert not decision(without, "mount quota").changed
    assert any("CONFIG_XFS_QUOTA" in w.message for w in without.warnings
               if w.rule == "project-quota")


def test_largeio_reports_allocsize_without_a_stripe() -> None:
    p = propose(device(4 * TiB, rotational=True),
                Workload(write_pattern="sequential", median_file_size=8 * GiB,
                         concurrent_writers=8), env=environment())
    assert decision(p, "mount allocsize").options == ["allocsize=1g"]
    largeio = decision(p, "mount largeio")
    assert largeio.options == ["largeio"] and "(1g)" in largeio.reason
    assert not decision(p, "mount swalloc").changed  # no stripe


def test_an_extent_size_hint_over_half_an_ag_is_not_proposed() -> None:
    """mkfs.xfs rejects a hint over half an AG ("illegal extent size hint"); a huge stripe unit
    would round the hint up that far."""
    w = Workload(write_pattern="random", median_file_size=40 * GiB,
                 storage=Storage(raid_stripe_unit=64 * MiB, raid_data_disks=2))
    dev = device(100 * GiB, rotational=True)
    geometry = MkfsGeometry(block_size=4096, sector_size=512, inode_size=512, agcount=4,
                            agsize_blocks=8192, data_blocks=32768, sunit_blocks=0,
                            swidth_blocks=0, naming_block_size=4096, log_blocks=16384,
                            log_sunit_blocks=0)
    ctx = Context(device=dev, workload=w, env=environment(), geometry=geometry,
                  size=device_size(dev))
    ctx.chosen["-d su/sw"] = Change("su=64m,sw=2", ["-d", "su=64m,sw=2"], "the answers",
                                    source="answers")
    out = extent_size_hint(ctx, ExtentSizeHintParams(min_file_size=256 * MiB, hint=MiB,
                                                     dax_hint=2 * MiB))
    assert out.change is None and "over half an allocation group" in (out.keep_reason or "")
