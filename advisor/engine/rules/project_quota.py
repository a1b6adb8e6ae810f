"""Project quotas for container and per-tenant stores."""

from __future__ import annotations

from advisor.engine.context import Change, Context, Outcome
from advisor.engine.registry import NoParams, decider


def setup_steps(mnt: str) -> str:
    """What must be done after mounting, for one tree (the name and ID are examples)."""
    tree = f"{mnt.rstrip('/')}/tenant-a"
    return (f"then, per tree: echo 42:{tree} >> /etc/projects; echo tenant-a:42 >> "
            f"/etc/projid; xfs_quota -x -c 'project -s tenant-a' {mnt}; xfs_quota -x -c "
            f"'limit -p bhard=100g tenant-a' {mnt}")


@decider(NoParams)
def project_quota(ctx: Context, params: NoParams) -> Outcome:
    wanted = ctx.workload.per_tenant_quotas
    if not wanted:
        return Outcome(keep_reason="no per-tree space limits " + (
            "wanted" if wanted is False else "asked for (per_tenant_quotas)")
            + ": quota accounting would only add a dquot update to every allocation")
    kernel = ctx.env.kernel or "?"
    if ctx.env.kernel_xfs.get("QUOTA") is False:
        return Outcome(keep_reason=f"kernel {kernel} has no XFS quota support", warnings=[
            f"per-tree limits need project quotas, but kernel {kernel} is built without "
            "CONFIG_XFS_QUOTA: a prjquota mount fails (\"quota support not available in this "
            "kernel\"). Use a kernel built with it, then mount with prjquota"])
    mnt = ctx.workload.mount_point or "MOUNTPOINT"
    known = ("" if ctx.env.kernel_xfs.get("QUOTA") else
             "; it needs a kernel built with CONFIG_XFS_QUOTA (not known for this host)")
    return Outcome(change=Change("prjquota", ["prjquota"], (
        "each tree needs its own space limit (per_tenant_quotas): project quotas account and "
        "limit a directory tree whatever users own its files, which is what containers and "
        f"tenants need; {setup_steps(mnt)}. Quota accounting starts only on a fresh mount, "
        "not on a remount (for / give rootflags=prjquota on the kernel command line)"
        f"{known}")))
