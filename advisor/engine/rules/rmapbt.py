"""The reverse-mapping btree, for online checking with xfs_scrub."""

from __future__ import annotations

from advisor.engine.context import Change, Context, Outcome
from advisor.engine.registry import decider
from advisor.models.base import Model


class RmapbtParams(Model):
    """What rmapbt costs, as measured (the rule file says where)."""

    space_cost: str
    """Space the per-AG reservation takes, in words with the measurement."""


def _what_scrub_gives(ctx: Context) -> tuple[str, list[str]]:
    """What xfs_scrub does with rmapbt on the host's kernel, and warnings."""
    k = ctx.env.kernel_xfs
    kernel = f"kernel {ctx.env.kernel or '?'}"
    if k.get("ONLINE_SCRUB") is None:
        return (f"whether {kernel} has online scrub (CONFIG_XFS_ONLINE_SCRUB) is not known: "
                "xfs_scrub checks only where it does", [])
    if not k["ONLINE_SCRUB"]:
        return (f"{kernel} is built without CONFIG_XFS_ONLINE_SCRUB", [
            f"{kernel} has no online scrub (CONFIG_XFS_ONLINE_SCRUB is not set): xfs_scrub "
            "stops with \"Kernel metadata scrubbing facility is not available\" until a kernel "
            "built with it mounts this filesystem; rmapbt is there for that day (xfsprogs "
            "6.1's xfs_admin cannot add it later), and offline xfs_repair works as always"])
    if k.get("ONLINE_REPAIR"):
        return (f"{kernel} checks and repairs online (CONFIG_XFS_ONLINE_SCRUB and "
                "CONFIG_XFS_ONLINE_REPAIR): xfs_scrub cross-references every block against its "
                "owner and rebuilds what is damaged while mounted", [])
    return (f"{kernel} checks online (CONFIG_XFS_ONLINE_SCRUB) but does not repair "
            "(CONFIG_XFS_ONLINE_REPAIR is not set): xfs_scrub -n reports damage, repair stays "
            "offline (xfs_repair, unmounted)", [])


@decider(RmapbtParams)
def rmapbt(ctx: Context, params: RmapbtParams) -> Outcome:
    if ctx.geometry.features.get("rmapbt") == 1:
        return Outcome(keep_reason="this mkfs.xfs makes rmapbt by default")
    features = ctx.chosen.get("-m features")
    if features is not None:
        why = (f"an older kernel must mount it ({features.value}): its feature set has rmapbt "
               "off")
        warnings = [] if not ctx.workload.online_scrub else [
            f"online checking is wanted (online_scrub), but {why}, and xfs_scrub needs rmapbt "
            "to cross-check space and rebuild metadata. The choice: drop the older kernel "
            "(must_mount_on_kernel) to get rmapbt, or check offline with xfs_repair -n "
            "(unmounted)"]
        return Outcome(keep_reason=why, warnings=warnings)
    wanted = ctx.workload.online_scrub
    cost = (f"rmapbt costs {params.space_cost} and a reverse-mapping update with every block "
            "allocated or freed")
    if not wanted:
        return Outcome(keep_reason=("online checking is not wanted" if wanted is False else
                                    "online checking is not asked for (online_scrub)")
                       + f": {cost}; xfsprogs {ctx.env.xfsprogs_version or '?'} leaves it off "
                       "(xfsprogs 6.5 and later turn it on)")
    gives, warnings = _what_scrub_gives(ctx)
    return Outcome(change=Change("rmapbt=1", ["-m", "rmapbt=1"], (
        f"online checking wanted (online_scrub): the reverse-mapping btree records the owner "
        f"of every block, which xfs_scrub needs to cross-check space and to rebuild metadata; "
        f"{gives}. The cost: {cost.removeprefix('rmapbt costs ')}; xfsprogs 6.1's xfs_scrub "
        "calls itself EXPERIMENTAL")), warnings=warnings)
