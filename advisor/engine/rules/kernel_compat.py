"""Only features an older kernel can mount, when one must."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from advisor.engine.context import Change, Context, Outcome
from advisor.engine.registry import decider
from advisor.engine.rules.dax_alignment import not_dax
from advisor.errors import BadInput
from advisor.models.base import Model
from advisor.models.environment import Environment, parse_version
from advisor.models.workload import Workload, mount_target


class Distribution(Model):
    """What one distribution's kernel mounts, where its version number says too little."""

    kernel: str
    """Its kernel's upstream version (Enterprise Linux backports features onto it)."""
    features: dict[str, dict[str, int]] = Field(default_factory=dict)
    """section -> feature -> 0/1 it mounts read-write (empty: those of `kernel`)."""
    source: str = Field(min_length=3)
    """Where the kernel version and the features come from."""


class KernelCompatParams(Model):
    """V5 feature sets per LTS kernel, used when xfsprogs' own lts_*.conf cannot be; the kernel
    each feature appeared in, for kernels older than every LTS set; distributions."""

    features: dict[str, dict[str, dict[str, int]]]
    """kernel -> section (metadata, inode) -> feature -> 0/1, as in xfsprogs' lts_*.conf."""
    feature_since: dict[str, str]
    """feature -> first upstream kernel that mounts it read-write."""
    option_since: dict[str, str]
    """feature -> first xfsprogs whose mkfs.xfs knows its option (older ones must not be given
    it, and make the filesystem without it anyway)."""
    distributions: dict[str, Distribution]
    """rhel7, ubuntu22.04, debian12, sles15... -> its kernel and what it mounts."""


def explicit_feature_flags(features: dict[str, dict[str, int]], env: Environment,
                           option_since: dict[str, str]) -> list[str]:
    """`-m ... -i ...` equivalent to a feature set, with only the option names this mkfs.xfs
    knows (a feature it has no option for, it does not make). mkfs.xfs wants nrext64 under
    -i."""
    meta = dict(features.get("metadata", {}))
    inode = dict(features.get("inode", {}))
    if "nrext64" in meta:
        inode["nrext64"] = meta.pop("nrext64")
    for section in (meta, inode):
        for name in list(section):
            since = parse_version(option_since.get(name))
            if since and not env.mkfs_knows(*since):
                del section[name]
    out: list[str] = []
    if meta:
        out += ["-m", ",".join(f"{k}={v}" for k, v in sorted(meta.items()))]
    if inode:
        out += ["-i", ",".join(f"{k}={v}" for k, v in sorted(inode.items()))]
    return out


def target_kernel(workload: Workload, env: Environment) -> tuple[str, str] | None:
    """The older kernel (or distribution) the filesystem must mount on, and who says so: the
    answer, or the host's own kernel when it is an Enterprise Linux one or older than the
    xfsprogs making the filesystem (a capture, say). None when the current feature set will
    do."""
    wanted = workload.must_mount_on_kernel
    progs = parse_version(env.xfsprogs_version)
    who = f"{'kernel ' if parse_version(wanted) else ''}{wanted} must mount it"
    if wanted is None and env.kernel:
        running = mount_target(env.kernel)
        version = parse_version(running)
        if running and (version is None or (progs and version < progs)):
            wanted = running
            who = f"the host runs kernel {env.kernel}, older than xfsprogs {env.xfsprogs_version}"
    if wanted is None:
        return None
    kernel = parse_version(wanted)
    if kernel and progs and kernel >= progs:
        return None
    return wanted, who


def since_features(kernel: tuple[int, int], params: KernelCompatParams,
                   ) -> dict[str, dict[str, int]]:
    """The features a kernel older than every LTS set cannot mount, switched off (from when
    each appeared); the others keep mkfs.xfs's defaults."""
    lacks = {f: 0 for f, v in params.feature_since.items()
             if (parse_version(v) or (99, 0)) > kernel}
    inode: dict[str, int] = {k: lacks.pop(k) for k in ("sparse", "nrext64") if k in lacks}
    return {"metadata": lacks, "inode": inode}


@decider(KernelCompatParams)
def kernel_compat(ctx: Context, params: KernelCompatParams) -> Outcome:
    outcome = _kernel_compat(ctx, params)
    env = ctx.env
    left_out = sorted(name for name, since in params.option_since.items()
                      if (v := parse_version(since)) and env.xfsprogs_at_least(*v)
                      and not env.mkfs_knows(*v))
    if outcome.change and left_out:
        outcome.warnings.append(
            f"the command is for the captured host's mkfs.xfs (xfsprogs {env.target_xfsprogs}), "
            f"which does not know {', '.join(left_out)}: those options are left out, and that "
            "mkfs.xfs makes none of those features; the mkfs.xfs -N check ran with the local "
            f"xfsprogs {env.xfsprogs_version}, which knows them")
    return outcome


def _nrext64_note(ctx: Context) -> str:
    """Why nrext64 stays as this mkfs.xfs makes it, when it makes it off."""
    if ctx.geometry.features.get("nrext64", 1) != 0:
        return ""
    return ("; nrext64 stays off, as xfsprogs " + (ctx.env.xfsprogs_version or "?") + " makes "
            "it: 64-bit extent counters lift a file's limit of 2^31 data extents (2^15 "
            "attribute extents) and help only files fragmented or reflinked into billions of "
            "extents (large, long-lived VM images), while Linux before 5.19 cannot mount a "
            "filesystem with them (mkfs.xfs(8) -i nrext64)")


def _kernel_compat(ctx: Context, params: KernelCompatParams) -> Outcome:
    target = target_kernel(ctx.workload, ctx.env)
    if target is None:
        wanted = ctx.workload.must_mount_on_kernel
        if wanted is None:
            return Outcome(keep_reason="no older kernel must mount it: the current feature set"
                           + _nrext64_note(ctx))
        return Outcome(keep_reason=f"kernel {wanted} mounts what xfsprogs "
                       f"{ctx.env.xfsprogs_version} makes by default")
    wanted, who = target
    if parse_version(wanted) is None:
        distro = params.distributions.get(wanted)
        if distro is None:
            known = ", ".join(sorted(params.distributions))
            raise BadInput(f"must_mount_on_kernel: no feature table for {wanted} (known: "
                           f"{known}); give its kernel version (uname -r) instead")
        if distro.features:
            features, off = _ceiling(ctx, distro.features)
            flags = explicit_feature_flags(features, ctx.env, params.option_since)
            return _change(flags, f"{who}: what {wanted}'s kernel ({distro.kernel}, with "
                           f"its backports) mounts read-write ({distro.source})" + off)
        who = f"{who} (kernel {distro.kernel}: {distro.source})"
        wanted = distro.kernel
        progs = parse_version(ctx.env.xfsprogs_version)
        if progs and (parse_version(wanted) or (0, 0)) >= progs:
            return Outcome(keep_reason=f"{who}: it mounts what xfsprogs "
                           f"{ctx.env.xfsprogs_version} makes by default")
    kernel = parse_version(wanted) or (0, 0)
    sets = sorted({*params.features, *ctx.feature_sets},
                  key=lambda v: parse_version(v) or (0, 0))
    older = [v for v in sets if (parse_version(v) or (0, 0)) <= kernel]
    if not older:
        features, off = _ceiling(ctx, since_features(kernel, params))
        flags = explicit_feature_flags(features, ctx.env, params.option_since)
        return _change(flags, f"{who}: kernel {wanted} is older than every LTS feature "
                       f"set ({sets[0]} the oldest): only features it mounts, from the kernel "
                       "each appeared in" + off)
    profile = older[-1]
    shipped = ctx.feature_sets.get(profile)
    why = f"{who}: the features of the {profile} LTS kernel"
    if shipped:
        _, off = _ceiling(ctx, shipped.features)
        if shipped.rejection is None and not off and not ctx.env.target_older():
            return Outcome(change=Change(f"lts_{profile}", ["-c", f"options={shipped.path}"],
                                         why + f" ({shipped.path})"))
        features = shipped.features
        why += (f"; this mkfs.xfs rejects its own {Path(shipped.path).name} "
                f"({shipped.rejection}), so as explicit flags" if shipped.rejection else
                f"; {shipped.path} is the local xfsprogs {ctx.env.xfsprogs_version}'s file, "
                f"which the captured host's older xfsprogs {ctx.env.target_xfsprogs} may not "
                "ship or parse, so as explicit flags" if ctx.env.target_older() else
                " as explicit flags")
    else:
        features = params.features[profile]
        why += " (no lts_*.conf for it installed: the rule's own table)"
    features, off = _ceiling(ctx, features)
    flags = explicit_feature_flags(features, ctx.env, params.option_since)
    return _change(flags, why + off)


def _ceiling(ctx: Context, features: dict[str, dict[str, int]],
             ) -> tuple[dict[str, dict[str, int]], str]:
    """An older kernel's feature set as a ceiling: what it mounts, less what this device must
    not have (reflink on persistent memory mounted with DAX: any kernel mounts a filesystem
    without reflink). The features, and what the reason adds (empty: nothing turned off)."""
    if not_dax(ctx) is not None or features.get("metadata", {}).get("reflink") == 0:
        return features, ""
    meta = {**features.get("metadata", {}), "reflink": 0}
    return ({**features, "metadata": meta},
            "; reflink=0 all the same, as this device is persistent memory mounted with DAX "
            "(the older kernel is a ceiling on the features, not a set to copy: it mounts a "
            "filesystem without reflink)")


def _change(flags: list[str], why: str) -> Outcome:
    """The explicit flags as a change, with the reflink flag typed when they give it."""
    reflink = Change(" ".join(flags), flags, why).option_texts().get("reflink")
    values = {"reflink": reflink == "1"} if reflink in ("0", "1") else {}
    return Outcome(change=Change(" ".join(flags), flags, why, values=values))
