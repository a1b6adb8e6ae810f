"""The named functions behind the rules: what data alone cannot express. Each takes the context
and the rule's `params` (validated against its own model) and returns an Outcome.

A rule file names its function in `decide`; thresholds and tables stay in the file."""

from __future__ import annotations

import math
from pathlib import Path
from typing import get_args

from pydantic import Field, model_validator

from advisor.engine.context import (
    Change,
    Context,
    GiB,
    KiB,
    MiB,
    Outcome,
    mkfs_size,
    round_down,
    round_up,
)
from advisor.engine.registry import NoParams, decider
from advisor.errors import BadInput
from advisor.models.base import Model
from advisor.models.device import stripe_hidden_below
from advisor.models.environment import Environment, parse_version
from advisor.models.units import human_size
from advisor.models.workload import Access, StorageKind, Workload, mount_target

# ---- 2.1.1 directory block size --------------------------------------------------------------

class DirBlockRow(Model):
    """One row of the guide's table 2.5, per access pattern."""

    access: Access
    """read-heavy, write-heavy or mixed."""
    max_entries_4k: int = Field(ge=0)
    """Largest directory for which 4 KiB directory blocks stay best."""
    max_entries_16k: int = Field(ge=0)
    """Largest directory for which 16 KiB blocks stay best; above it, 64 KiB."""


class DirBlockParams(Model):
    """Thresholds of the guide's table 2.5."""

    table: list[DirBlockRow] = Field(min_length=1)
    """One row per access pattern."""


def directory_block_for(entries: int, access: Access, params: DirBlockParams) -> int:
    """Directory block size in bytes for a directory of `entries` under `access`."""
    row = next((r for r in params.table if r.access == access), params.table[0])
    if entries <= row.max_entries_4k:
        return 4 * KiB
    if entries <= row.max_entries_16k:
        return 16 * KiB
    return 64 * KiB


@decider(DirBlockParams)
def dir_block_size(ctx: Context, params: DirBlockParams) -> Outcome:
    entries = ctx.workload.largest_directory_entries
    if entries is None:
        return Outcome(keep_reason="largest directory size not given: the default suits "
                       "directories up to hundreds of thousands of entries")
    default = ctx.geometry.naming_block_size
    access = ctx.workload.access
    if access is None:
        by_access = ", ".join(
            f"{r.access} {mkfs_size(max(directory_block_for(entries, r.access, params), default))}"
            for r in params.table)
        return Outcome(keep_reason=f"{entries:,} entries, but the access pattern is not given: "
                       f"table 2.5 depends on it ({by_access}), and an answer missing keeps the "
                       "default (answer access to decide)")
    size = max(directory_block_for(entries, access, params), ctx.geometry.block_size)
    if size <= default:
        return Outcome(keep_reason=f"{entries:,} entries, {access}: within the "
                       f"{mkfs_size(default)} range of table 2.5; larger blocks would only cost "
                       "CPU per operation")
    return Outcome(change=Change(
        mkfs_size(size), ["-n", f"size={mkfs_size(size)}"],
        f"{entries:,} entries, {access}: table 2.5 puts this beyond the range of smaller directory "
        f"blocks; {mkfs_size(size)} blocks need fewer IOs per lookup and modification"))


# ---- 2.1.2 allocation groups -----------------------------------------------------------------

class AgConcurrencyParams(Model):
    """How far to raise the AG count, and the limit for filesystems that will grow."""

    target_agcount: int = Field(ge=2)
    """AG count to reach (guide 2.1.2: at least 32)."""
    max_agcount_when_grown: int = Field(ge=2)
    """Most AGs once grown (guide 2.1.2.2: a few hundred)."""


def multidisk_agcount(size: int) -> int:
    """The AG count mkfs.xfs itself makes when it sees multi-disk storage of `size` bytes
    (xfsprogs calc_default_ag_geometry, xfs-facts): 32, halved at <= 512 GiB, <= 8 GiB,
    < 128 MiB, < 64 MiB and < 32 MiB. Used as the cap on small filesystems, instead of a
    minimum AG size of our own."""
    if size > 512 * GiB:
        return 32
    if size > 8 * GiB:
        return 16
    for shift, floor in ((3, 128 * MiB), (2, 64 * MiB), (1, 32 * MiB)):
        if size >= floor:
            return 1 << shift
    return 1


def metadata_writers(w: Workload) -> tuple[int | None, str]:
    """The writers that modify metadata (create, delete, rename, xattrs), and how the answers
    say so; None when there are none or none are declared."""
    if w.concurrent_writers is None:
        return None, "number of concurrent writers not given"
    if w.writer_activity == "data":
        return None, (f"{w.concurrent_writers} concurrent writers, but they write into existing "
                      "files: data-intensive work is not limited by space management (guide "
                      "2.1.2), directory and attribute changes are")
    if w.writer_activity is None:
        return w.concurrent_writers, (f"{w.concurrent_writers} concurrent writers, taken as "
                                      "creating, deleting or renaming files (writer_activity not "
                                      "answered)")
    what = ("creating, deleting or renaming files and setting xattrs"
            if w.writer_activity == "metadata" else "modifying metadata and writing data")
    return w.concurrent_writers, f"{w.concurrent_writers} concurrent writers {what} (answered)"


@decider(AgConcurrencyParams)
def ag_concurrency(ctx: Context, params: AgConcurrencyParams) -> Outcome:
    writers, who = metadata_writers(ctx.workload)
    default = ctx.geometry.agcount
    if writers is None:
        return Outcome(keep_reason=who)
    if writers <= default:
        return Outcome(keep_reason=f"{who}: no more than the {default} AGs, each of which "
                       "allocates on its own (guide 2.1.2)")
    if default >= params.target_agcount:
        return Outcome(keep_reason=f"mkfs.xfs already makes {default} AGs")
    stripe = ctx.stripe()
    if stripe:
        return Outcome(keep_reason=f"with a stripe (su={mkfs_size(stripe[0])}, sw={stripe[1]}, "
                       f"from {stripe[2]}) mkfs.xfs treats the storage as multi-disk and picks "
                       "the AG count for it")
    kind, said_by = ctx.storage()
    if kind == "single-disk":
        return Outcome(keep_reason=f"a single spinning disk ({said_by}) cannot serve more "
                       "concurrency: more AGs only spread its seeks (LKML 2015, XFS on a single "
                       "spindle)")
    target = min(params.target_agcount, multidisk_agcount(ctx.size))
    eventual = ctx.eventual_size
    if eventual:
        target = min(target, max(2, params.max_agcount_when_grown * ctx.size // eventual))
    if target <= default:
        return Outcome(keep_reason=f"{who}; at {human_size(ctx.size)} mkfs.xfs itself makes "
                       f"no more than {target} AGs even for multi-disk storage: the default "
                       f"{default} stays")
    storage = (f"storage of unknown kind ({said_by}): guide 2.1.2 says to ensure at least "
               f"{params.target_agcount} AGs when mkfs.xfs cannot detect it"
               if kind == "unknown" else f"{kind} storage ({said_by}) that mkfs.xfs sees as a "
               "single device")
    why = (f"{who} on {storage} ({default} AGs by default): {target} AGs, as mkfs.xfs makes "
           f"for multi-disk storage of {human_size(ctx.size)}, let that many allocations "
           "proceed at once")
    if ctx.env.xfsprogs_at_least(6, 8):
        return Outcome(change=Change(f"concurrency={target}", ["-d", f"concurrency={target}"],
                                     why + " (xfsprogs >= 6.8 sizes AGs for it: -d concurrency)"))
    return Outcome(change=Change(f"agcount={target}", ["-d", f"agcount={target}"], why))


class AgGrowthParams(Model):
    """Limits for filesystems that will be grown."""

    max_agcount_when_grown: int = Field(ge=2)
    """Most AGs once grown, unless AGs are at their maximum size."""
    warn_growth_factor: float = Field(ge=1)
    """Growth beyond this factor gets a warning (the guide: roughly 10x)."""
    max_ag_bytes: int = Field(ge=16 * MiB)
    """Largest AG mkfs.xfs allows (1 TiB less one block)."""


#: xfsprogs' XFS_AG_MIN_BYTES: the smallest allocation group mkfs.xfs makes (16 MiB).
MIN_AG_BYTES = 16 * MiB
#: xfsprogs' XFS_MAX_LOG_BYTES: the largest internal log (2 GiB, a format limit).
MKFS_MAX_LOG_BYTES = 2 * GiB


@decider(AgGrowthParams)
def ag_growth(ctx: Context, params: AgGrowthParams) -> Outcome:
    eventual = ctx.eventual_size
    if eventual is None:
        return Outcome(keep_reason="no growth planned (answer eventual_size or growth_factor)")
    if eventual <= ctx.size:
        return Outcome(keep_reason="the eventual size is not larger than the device")
    factor = eventual / ctx.size
    warnings = [f"XFS can grow but never shrink: size it for {human_size(eventual)} now only "
                "if that growth is real"]
    if factor > params.warn_growth_factor:
        warnings.append(f"growth of {factor:.1f}x is beyond the ~{params.warn_growth_factor:g}x "
                        "the guide recommends (2.1.2.2): AGs sized for the end are huge now, or "
                        "there are too many AGs later; consider a new filesystem at some point")
    if ctx.stripe():
        warnings.append("growing on RAID: add storage of the same geometry, and keep the device "
                        "size a whole number of AGs so that new AGs start stripe-aligned "
                        "(guide 2.1.2.2)")
    default_agsize = ctx.geometry.agsize_bytes
    grown = math.ceil(eventual / default_agsize)
    if grown <= params.max_agcount_when_grown or default_agsize >= params.max_ag_bytes - 4 * KiB:
        return Outcome(keep_reason=f"the default AGs ({human_size(default_agsize)}) make "
                       f"{grown} AGs at {human_size(eventual)}: within the few hundred the guide "
                       "allows", warnings=warnings)
    stripe = ctx.stripe()
    align = math.lcm(ctx.geometry.block_size, stripe[0] if stripe else 1)
    needed = round_up(math.ceil(eventual / params.max_agcount_when_grown), align)
    agsize = min(needed, round_down(params.max_ag_bytes, align))
    # mkfs.xfs needs two AGs (two superblocks): it accepts `-d agsize=80g` on 100 GiB (80 + 20
    # GiB) and refuses an AG as large as the device. With two AGs the internal log sits in the
    # last one (AG agcount/2), so that one keeps room for the largest log mkfs.xfs makes, twice
    # over, or half the device when it is small.
    room = max(MIN_AG_BYTES, min(ctx.size // 2, 2 * MKFS_MAX_LOG_BYTES))
    agsize = min(agsize, round_down(ctx.size - room, align))
    if stripe and agsize % (stripe[0] * stripe[1]) == 0:
        # AGs a multiple of the stripe width all start on the same disk (mkfs.xfs warns): one
        # stripe unit more moves each to the next disk; less only when more does not fit.
        grown_larger = agsize + stripe[0]
        fits = grown_larger <= min(params.max_ag_bytes, ctx.size - room)
        agsize = grown_larger if fits else agsize - stripe[0]
    if math.ceil(eventual / agsize) > params.max_agcount_when_grown:
        limit = (f"AGs cannot exceed {human_size(params.max_ag_bytes)}"
                 if needed > round_down(params.max_ag_bytes, align) else
                 f"{human_size(ctx.size)} now is too small for larger AGs")
        warnings.append(f"{human_size(eventual)} needs more than "
                        f"{params.max_agcount_when_grown} AGs: {limit}, so the largest possible "
                        "are used")
    return Outcome(change=Change(
        f"agsize={mkfs_size(agsize)}", ["-d", f"agsize={mkfs_size(agsize)}"],
        f"growing {factor:.1f}x to {human_size(eventual)}: the default "
        f"{human_size(default_agsize)} AGs would become {grown} AGs; AG size cannot change after "
        f"mkfs, so {human_size(agsize)} AGs keep it to "
        f"{math.ceil(eventual / agsize)}"), warnings=warnings)


# ---- 2.1.3 inode size ------------------------------------------------------------------------

class InodeParams(Model):
    """The on-disk format that decides how many attribute bytes stay in the inode, and the
    assumptions the rule makes where the answers are silent."""

    inode_sizes: list[int] = Field(min_length=1)
    """Inode sizes the rule may choose, smallest first (only those up to half a block exist)."""
    inode_core_bytes: int = Field(ge=1)
    """Bytes of the V5 (CRC) inode core before the literal area (struct xfs_dinode: 176)."""
    v4_inode_core_bytes: int = Field(ge=1)
    """The same for V4 inodes (crc=0, older xfsprogs: 100)."""
    min_data_fork_bytes: int = Field(ge=0)
    """Room the data fork always keeps: a bmap btree root of 3 records, 4 + 3 x 16 bytes rounded
    up to 8 (xfs_attr_shortform_bytesfit's minforkoff: 56)."""
    fork_header_bytes: int = Field(ge=0)
    """Header of the inline (shortform) attribute fork: total size, count, padding (4)."""
    entry_overhead_bytes: int = Field(ge=0)
    """Per attribute: name length, value length, flags (3)."""
    assumed_bytes_per_attribute: int = Field(ge=1)
    """No answer gives the number of attributes: assume one per this many bytes of name+value
    (rounded up). Small on purpose: more attributes mean more overhead, so the count errs high."""
    headroom_percent: int = Field(ge=0, le=50)
    """Share of the inline space left free for attributes that grow or are added later."""
    max_inline_value: int
    """Values longer than this never go inline (254 bytes: the length is one byte and 255 is
    reserved)."""


def inline_capacity(inode_size: int, v5: bool, params: InodeParams) -> int:
    """Bytes the inline attribute fork can take in an inode of this size (header and entries
    included): the literal area less the data fork's minimum, as the kernel computes it."""
    core = params.inode_core_bytes if v5 else params.v4_inode_core_bytes
    return inode_size - core - params.min_data_fork_bytes


def assumed_attributes(name_value_bytes: int, params: InodeParams) -> int:
    """How many attributes `name_value_bytes` are taken to be (no answer gives the count)."""
    return max(1, math.ceil(name_value_bytes / params.assumed_bytes_per_attribute))


def fork_bytes(name_value_bytes: int, attributes: int, params: InodeParams) -> int:
    """Bytes an inline attribute fork needs for these names and values."""
    return (params.fork_header_bytes + name_value_bytes
            + attributes * params.entry_overhead_bytes)


def usable_capacity(capacity: int, params: InodeParams) -> int:
    """The inline capacity less the headroom the rule keeps."""
    return capacity * (100 - params.headroom_percent) // 100


@decider(InodeParams)
def inode_size(ctx: Context, params: InodeParams) -> Outcome:
    w = ctx.workload
    warnings: list[str] = []
    if w.largest_xattr_value is not None and w.largest_xattr_value > params.max_inline_value:
        warnings.append(f"an xattr value of {w.largest_xattr_value} bytes is over "
                        f"{params.max_inline_value}: that inode's attributes all go to a separate "
                        "block whatever the inode size")
    if w.xattr_bytes_per_file is None or w.xattr_bytes_per_file == 0:
        return Outcome(keep_reason="no extended attributes declared", warnings=warnings)
    if warnings:
        return Outcome(keep_reason="values too large to go inline: a larger inode would not "
                       "help", warnings=warnings)
    need = w.xattr_bytes_per_file
    v5 = ctx.geometry.features.get("crc", 1) == 1
    count = assumed_attributes(need, params)
    want = fork_bytes(need, count, params)
    default = ctx.geometry.inode_size
    sizes = sorted({default, *params.inode_sizes})
    sizes = [s for s in sizes if default <= s <= ctx.geometry.block_size // 2]
    fits = [s for s in sizes if usable_capacity(inline_capacity(s, v5, params), params) >= want]
    why = (f"{need} B of attribute names and values per file, taken as {count} attribute"
           f"{'s' if count > 1 else ''} (no count is answered: one per "
           f"{params.assumed_bytes_per_attribute} B assumed), need "
           f"{params.fork_header_bytes} + {need} + {count} x {params.entry_overhead_bytes} = "
           f"{want} B of inline attribute fork")
    held = ", ".join(f"a {s}-byte inode holds {inline_capacity(s, v5, params)} B" for s in sizes)
    core = params.inode_core_bytes if v5 else params.v4_inode_core_bytes
    rule_of = (f"{held} (inode size - {core} B core - {params.min_data_fork_bytes} B kept for "
               "the data fork); "
               f"{params.headroom_percent}% is kept free for attributes that grow")
    if not fits:
        warnings.append(f"{why}: more than any inode size holds inline ({rule_of}): attributes "
                        "will live in separate blocks")
        return Outcome(keep_reason="no inode size holds them inline", warnings=warnings)
    best = fits[0]
    if best <= default:
        return Outcome(keep_reason=f"{why}; {rule_of}: they fit inline in the default "
                       f"{default}-byte inode")
    return Outcome(change=Change(str(best), ["-i", f"size={best}"],
                                 f"{why}; {rule_of}: {best}-byte inodes keep them inline (up to "
                                 "10x faster than an attribute block)"))


# ---- 2.1.4 RAID stripe geometry --------------------------------------------------------------

@decider(NoParams)
def stripe_geometry(ctx: Context, params: NoParams) -> Outcome:
    s = ctx.workload.storage
    g = ctx.device.stripe
    detected = (g.sunit_bytes, g.data_disks) if g.used_by_mkfs and g.sunit_bytes else None
    if s.raid_stripe_unit and s.raid_data_disks:
        return _answered_stripe(ctx, s.raid_stripe_unit, s.raid_data_disks, detected)
    if detected:
        return Outcome(keep_reason=f"mkfs.xfs detects su={mkfs_size(g.sunit_bytes or 0)}, "
                       f"sw={g.data_disks} from {g.source} on its own")
    if stripe_hidden_below(ctx.device) and (g.data_disks or 0) > 1:
        su, sw = g.sunit_bytes or 0, g.data_disks or 0
        return Outcome(change=Change(
            f"su={mkfs_size(su)},sw={sw}", ["-d", f"su={mkfs_size(su)},sw={sw}"],
            f"{ctx.device.display_name} does not pass up the geometry of {g.source}, so "
            f"mkfs.xfs would see no stripe: su={mkfs_size(su)},sw={sw} from the array aligns "
            "allocation to its full stripes", source=g.source))
    if g.sunit_bytes and g.ignored_reason:
        return Outcome(keep_reason=f"the device reports a stripe that mkfs.xfs ignores: "
                       f"{g.ignored_reason}")
    return Outcome(keep_reason="no stripe geometry reported or answered (hardware RAID that "
                   "hides it: answer raid_stripe_unit and raid_data_disks)")


def _answered_stripe(ctx: Context, su: int, sw: int,
                     detected: tuple[int | None, int | None] | None) -> Outcome:
    """The stripe the RAID answers give, unless it cannot be one."""
    g = ctx.device.stripe
    if sw < 2:
        return Outcome(keep_reason="raid_data_disks = 1: one data disk is no stripe",
                       warnings=["raid_data_disks = 1 describes a mirror (RAID1) or a single "
                                 "disk, not a stripe: no -d su=,sw= is given, so mkfs.xfs does "
                                 "not pad the log or align allocation for striping. For RAID10 "
                                 "the data disks are the disks / 2 (8 disks: 4); RAID5 n-1, "
                                 "RAID6 n-2"])
    if su % ctx.geometry.block_size or su % ctx.geometry.sector_size:
        return Outcome(keep_reason="the RAID answers cannot be used",
                       warnings=[f"raid_stripe_unit {su} is not a multiple of the "
                                 f"{ctx.geometry.block_size}-byte block: ignored"])
    if detected == (su, sw):
        return Outcome(keep_reason=f"mkfs.xfs detects the same geometry (su={mkfs_size(su)},"
                       f" sw={sw}) from {g.source}")
    warnings = []
    known = detected or ((g.sunit_bytes, g.data_disks) if stripe_hidden_below(ctx.device)
                         else None)
    if known:
        warnings.append(f"the answers (su={mkfs_size(su)}, sw={sw}) disagree with what "
                        f"{g.source} reports (su={mkfs_size(known[0] or 0)}, "
                        f"sw={known[1]}): the answers are used; check the RAID set-up")
    return Outcome(change=Change(
        f"su={mkfs_size(su)},sw={sw}", ["-d", f"su={mkfs_size(su)},sw={sw}"],
        f"hardware RAID geometry from the answers ({sw} data disks of "
        f"{mkfs_size(su)}): aligns allocation to full stripes", source="answers"),
        warnings=warnings)


# ---- 2.1.5 log size --------------------------------------------------------------------------

class LogSizeParams(Model):
    """How much log concurrent metadata work holds at once, and the log's limits."""

    reservation_bytes_per_writer: int = Field(ge=1)
    """Log space one namespace transaction (create, mkdir, symlink, rename, remove) reserves
    while it runs: its log reservation times its log count (the largest, measured with
    `xfs_db -c logres`)."""
    usable_log_percent: int = Field(ge=1, le=100)
    """Share of the log that reservations may fill before the kernel pushes metadata out to make
    room (fs/xfs/xfs_log.c xlog_grant_push_threshold keeps a quarter free)."""
    max_log_bytes: int = Field(ge=64 * MiB)
    """Largest internal log mkfs.xfs makes (2 GiB - 10 MiB)."""
    old_xfsprogs_min_bytes: int = Field(ge=MiB)
    """Log size to ask for when xfsprogs <= 5.14 would make a small one (5.15's minimum)."""


@decider(LogSizeParams)
def log_size(ctx: Context, params: LogSizeParams) -> Outcome:
    w = ctx.workload
    default = ctx.geometry.log_bytes
    old = ctx.env.xfsprogs_version is not None and not ctx.env.xfsprogs_at_least(5, 15)
    writers, who = metadata_writers(w)
    if writers is not None and w.access != "read-heavy":
        want = math.ceil(writers * params.reservation_bytes_per_writer * 100
                         / params.usable_log_percent)
        why = (f"{who}: each holds up to {human_size(params.reservation_bytes_per_writer)} of log "
               f"reservation, and reservations may fill {params.usable_log_percent}% of the log "
               f"before metadata is pushed out, so {human_size(want)} of log lets all of them "
               "run at once")
        if old and want < params.old_xfsprogs_min_bytes:
            want = params.old_xfsprogs_min_bytes
            why += f"; xfsprogs {ctx.env.xfsprogs_version} makes small logs"
    elif old:
        want = params.old_xfsprogs_min_bytes
        why = f"xfsprogs {ctx.env.xfsprogs_version} makes small logs"
    else:
        return Outcome(keep_reason=f"{who if writers is None else 'read-heavy access'}: the "
                       f"default {human_size(default)} log is enough")
    limits = []
    if want > min(params.max_log_bytes, ctx.geometry.agsize_bytes // 2):
        want = min(params.max_log_bytes, ctx.geometry.agsize_bytes // 2)
        limits.append("limited by the maximum log size and the AG size")
    # mkfs.xfs wants the log a whole number of log stripe units.
    want = round_up(want, math.lcm(MiB, default_log_stripe_unit(ctx) or 1))
    if want > min(params.max_log_bytes, ctx.geometry.agsize_bytes // 2):
        want -= math.lcm(MiB, default_log_stripe_unit(ctx) or 1)
    if want <= default:
        return Outcome(keep_reason=f"{why}: the default {human_size(default)} log is already "
                       f"that large" + (f" ({'; '.join(limits)})" if limits else ""))
    return Outcome(change=Change(
        mkfs_size(want), ["-l", f"size={mkfs_size(want)}"],
        f"{why}: a {human_size(want)} log (default {human_size(default)})"
        + (f" ({'; '.join(limits)})" if limits else "")))


# ---- 2.1.6 log stripe unit -------------------------------------------------------------------

class FsyncCostParams(Model):
    """How long one fsync keeps the storage busy, per storage kind, and from what share of its
    time fsyncs make the work latency-bound."""

    fsync_ms: dict[StorageKind, float]
    """Milliseconds one fsync (a data write and a log write) takes without a non-volatile
    cache, per storage.kind value (every kind is given; the sources are in the rule file)."""
    nonvolatile_fsync_ms: float = Field(gt=0)
    """The same behind a cache that survives power loss (a write lands in it)."""
    heavy_utilisation: float = Field(gt=0, lt=1)
    """Share of the storage's time taken by fsyncs from which they queue behind one another."""

    @model_validator(mode="after")
    def _every_kind(self) -> FsyncCostParams:
        missing = set(get_args(StorageKind)) - set(self.fsync_ms)
        if missing:
            raise ValueError(f"fsync_ms lacks {', '.join(sorted(missing))}")
        return self


def fsync_load(ctx: Context, params: FsyncCostParams) -> tuple[float, str] | None:
    """The share of the storage's time the answered fsync rate takes, and how that was worked
    out; None when no rate is answered."""
    fsyncs = ctx.workload.fsyncs_per_second
    if fsyncs is None:
        return None
    kind, said_by = ctx.storage()
    if kind in ("md-raid", "hardware-raid", "unknown") and ctx.device.rotational.value is False:
        kind, said_by = "ssd", f"{said_by}; queue/rotational = 0: solid-state members"
    if ctx.workload.storage.nonvolatile_write_cache:
        cost, what = params.nonvolatile_fsync_ms, "behind a non-volatile cache"
    else:
        cost, what = params.fsync_ms[kind], f"on {kind} storage ({said_by})"
    load = fsyncs * cost / 1000
    return load, (f"{fsyncs:g} fsyncs/s at about {cost:g} ms each {what} keep it busy "
                  f"{load:.0%} of the time")


class LogStripeParams(FsyncCostParams):
    """When synchronous log writes make a log stripe unit a cost."""


def default_log_stripe_unit(ctx: Context) -> int:
    """The log stripe unit in bytes mkfs.xfs makes with the options decided so far: the data
    stripe unit up to 256 KiB, 32 KiB above it, one block when the log sector is over 512 B
    (read from its dry run, not predicted)."""
    return ctx.geometry.log_sunit_blocks * ctx.geometry.block_size


@decider(LogStripeParams)
def log_stripe_unit(ctx: Context, params: LogStripeParams) -> Outcome:
    lsu = default_log_stripe_unit(ctx)
    block = ctx.geometry.block_size
    if lsu <= block:
        if ctx.stripe() is None:
            return Outcome(keep_reason="no data stripe: log writes are not padded to a stripe "
                           "unit")
        sector = ctx.geometry.sector_size
        return Outcome(keep_reason=f"mkfs.xfs already makes the log stripe unit one block "
                       f"({mkfs_size(block)})" + (f": it does so for {sector}-byte sectors "
                       "whatever the data stripe" if sector > 512 else ""))
    load = fsync_load(ctx, params)
    if load is None:
        return Outcome(keep_reason=f"fsync rate not given: log writes stay aligned to the "
                       f"{mkfs_size(lsu)} stripe unit")
    if load[0] < params.heavy_utilisation:
        return Outcome(keep_reason=f"{load[1]}: under {params.heavy_utilisation:.0%}, so "
                       f"aligned {mkfs_size(lsu)} log writes cost little")
    return Outcome(change=Change(
        mkfs_size(block), ["-l", f"su={mkfs_size(block)}"],
        f"{load[1]}: fsync latency dominates, and each fsync forces a log write padded to the "
        f"{mkfs_size(lsu)} stripe unit; one block lets small log writes go out at once"))


# ---- 2.2 mount options -----------------------------------------------------------------------

#: XFS_MAXINUMBER_32: the largest inode number 32-bit stat() and NFSv2/v3 clients can take.
MAX_INUMBER_32 = (1 << 32) - 1


def largest_inode_number(agcount: int, agblocks: int, block_size: int, inode_size: int) -> int:
    """The last possible inode number of a geometry, as the kernel computes it to decide whether
    inode32 changes anything (xfs_set_inode_alloc): AG number << (agblklog + inopblog) | the
    AG-relative number of the AG's last block. agblklog is the bits of agblocks - 1 (rounded up
    to a power of two), inopblog log2 of inodes per block."""
    agblklog = (agblocks - 1).bit_length()
    inopblog = (block_size // inode_size).bit_length() - 1
    return ((agcount - 1) << (agblklog + inopblog)) | ((agblocks - 1) << inopblog)


def inode32_ags(agblocks: int, block_size: int, inode_size: int) -> int:
    """How many AGs inode32 lets hold inodes: those whose last inode number fits in 32 bits."""
    agblklog = (agblocks - 1).bit_length()
    inopblog = (block_size // inode_size).bit_length() - 1
    last_agino = (agblocks - 1) << inopblog
    return (MAX_INUMBER_32 - last_agino) // (1 << (agblklog + inopblog)) + 1


@decider(NoParams)
def inode32(ctx: Context, params: NoParams) -> Outcome:
    if not ctx.workload.nfs_32bit_clients:
        return Outcome(keep_reason="no 32-bit NFS clients or applications declared")
    g = ctx.geometry
    agcount = g.agcount
    eventual = ctx.eventual_size
    grown = ""
    if eventual and eventual > ctx.size:
        agcount = max(agcount, math.ceil(eventual / g.agsize_bytes))
        grown = f" once grown to {human_size(eventual)}"
    largest = largest_inode_number(agcount, g.agsize_blocks, g.block_size, g.inode_size)
    geometry = (f"{agcount} AGs of {g.agsize_blocks} blocks, {g.inode_size}-byte inodes in "
                f"{g.block_size}-byte blocks")
    if largest <= MAX_INUMBER_32:
        return Outcome(keep_reason=f"the largest possible inode number{grown} is {largest:,} "
                       f"({geometry}): under 2^32, so every inode number fits in 32 bits and "
                       "inode32 would change nothing")
    allowed = inode32_ags(g.agsize_blocks, g.block_size, g.inode_size)
    return Outcome(
        change=Change("inode32", ["inode32"],
                      f"32-bit clients, and the largest possible inode number{grown} is "
                      f"{largest:,} ({geometry}), over 2^32 - 1: inode32 keeps inode numbers "
                      "under 32 bits"),
        warnings=[f"inode32 costs performance: new inodes may only go in the first {allowed} "
                  f"AGs ({human_size(allowed * g.agsize_bytes)}), away from their data, and that "
                  "space can fill up (ENOSPC on create with free space elsewhere)"])


class LogbsizeParams(FsyncCostParams):
    """When bigger log buffers pay off."""

    value_bytes: int
    """The log buffer size to use (256 KiB, the maximum)."""


def _log_intensive(ctx: Context, params: LogbsizeParams) -> str | None:
    """Why the work is log-IO intensive (guide 2.2.2): writers answered as modifying metadata,
    or fsyncs that keep the storage busy; None when neither is declared (a number of writers
    alone does not say they modify metadata, and the default stays when in doubt)."""
    writers, who = metadata_writers(ctx.workload)
    load = fsync_load(ctx, params)
    if load is not None and load[0] >= params.heavy_utilisation:
        return load[1]
    if writers is not None and ctx.workload.writer_activity is not None:
        return who
    return None


@decider(LogbsizeParams)
def logbsize(ctx: Context, params: LogbsizeParams) -> Outcome:
    w = ctx.workload
    intensive = _log_intensive(ctx, params)
    if intensive is None:
        load = fsync_load(ctx, params)
        said = [f"{load[1]}: under {params.heavy_utilisation:.0%}"] if load else []
        if ctx.workload.concurrent_writers and ctx.workload.writer_activity is None:
            said.append("writer_activity not answered")
        return Outcome(keep_reason="no log-intensive work declared"
                       + (f" ({'; '.join(said)})" if said else ""))
    nv = w.storage.nonvolatile_write_cache
    cache = ctx.device.write_cache.value
    if nv is True:
        return Outcome(keep_reason="the answers say the write cache is non-volatile: it absorbs "
                       "small log writes, so bigger buffers make little difference")
    if nv is None and cache is None:
        return Outcome(keep_reason="whether the write cache is non-volatile is unknown")
    storage = ("the answers say the cache is not non-volatile" if nv is False else
               "a volatile write-back cache" if cache == "write back" else
               "write through: every log write waits for the media; a controller in "
               "write-through mode, or with a failed battery, gains most")
    lsu_change = ctx.chosen.get("-l su")
    lsu = (ctx.geometry.block_size if lsu_change
           else default_log_stripe_unit(ctx))
    if lsu and params.value_bytes % lsu:
        return Outcome(keep_reason=f"{mkfs_size(params.value_bytes)} is not a multiple of the "
                       f"{mkfs_size(lsu)} log stripe unit")
    return Outcome(change=Change(
        mkfs_size(params.value_bytes), [f"logbsize={mkfs_size(params.value_bytes)}"],
        f"{intensive}, on storage without a non-volatile cache ({storage}): "
        f"{mkfs_size(params.value_bytes)} log buffers need fewer log IOs (fsync-heavy work does "
        "not need smaller ones: buffers are written partly full)"))


@decider(NoParams)
def logbufs(ctx: Context, params: NoParams) -> Outcome:
    return Outcome(keep_reason="8 log buffers is the default and the fastest; fewer only saves "
                   "memory with many filesystems in little memory")


@decider(NoParams)
def atime(ctx: Context, params: NoParams) -> Outcome:
    needed = ctx.workload.atime_needed
    if needed is False:
        return Outcome(change=Change("noatime", ["noatime"],
                                     "nothing relies on access times: noatime saves the inode "
                                     "writes relatime still makes once a day per file read"))
    if needed:
        return Outcome(keep_reason="access times are needed: relatime keeps them useful (newer "
                       "than mtime, updated daily)")
    return Outcome(keep_reason="whether anything needs access times is unknown: relatime is the "
                   "safe default")


@decider(NoParams)
def discard(ctx: Context, params: NoParams) -> Outcome:
    granularity = ctx.device.discard_granularity.value
    if granularity == 0:
        return Outcome(keep_reason="the device does not support discard")
    return Outcome(keep_reason="online discard slows deletes; run fstrim periodically instead "
                   "(systemctl enable --now fstrim.timer)")


# ---- versions: kernels that must mount it ----------------------------------------------------

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
            if since and not env.xfsprogs_at_least(*since):
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
    target = target_kernel(ctx.workload, ctx.env)
    if target is None:
        wanted = ctx.workload.must_mount_on_kernel
        if wanted is None:
            return Outcome(keep_reason="no older kernel must mount it: the current feature set")
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
            flags = explicit_feature_flags(distro.features, ctx.env, params.option_since)
            return Outcome(change=Change(
                " ".join(flags), flags, f"{who}: what {wanted}'s kernel ({distro.kernel}, with "
                f"its backports) mounts read-write ({distro.source})"))
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
        flags = explicit_feature_flags(since_features(kernel, params), ctx.env,
                                       params.option_since)
        return Outcome(change=Change(
            " ".join(flags), flags, f"{who}: kernel {wanted} is older than every LTS feature "
            f"set ({sets[0]} the oldest): only features it mounts, from the kernel each "
            "appeared in"))
    profile = older[-1]
    shipped = ctx.feature_sets.get(profile)
    why = f"{who}: the features of the {profile} LTS kernel"
    if shipped:
        if shipped.rejection is None:
            return Outcome(change=Change(f"lts_{profile}", ["-c", f"options={shipped.path}"],
                                         why + f" ({shipped.path})"))
        features = shipped.features
        why += (f"; this mkfs.xfs rejects its own {Path(shipped.path).name} "
                f"({shipped.rejection}), so as explicit flags")
    else:
        features = params.features[profile]
        why += " (no lts_*.conf for it installed: the rule's own table)"
    flags = explicit_feature_flags(features, ctx.env, params.option_since)
    return Outcome(change=Change(" ".join(flags), flags, why))


# ---- device warnings -------------------------------------------------------------------------

@decider(NoParams)
def device_warnings(ctx: Context, params: NoParams) -> Outcome:
    d = ctx.device
    out: list[str] = []
    if d.alignment_offset.value:
        out.append(f"{d.name} starts {d.alignment_offset.value} bytes off its physical alignment: "
                   "every IO straddles sectors and mkfs.xfs refuses without -f; re-create the "
                   "partition aligned (1 MiB boundaries)")
    nonvolatile = ctx.workload.storage.nonvolatile_write_cache
    if d.write_cache.value == "write back" and nonvolatile is True:
        out.append(f"{d.name} reports a write-back cache and the answers say it is "
                   "non-volatile: the kernel still sends cache flushes. If the cache truly "
                   "survives power loss, a udev rule setting queue/write_cache to \"write "
                   f"through\" stops them (ACTION==\"add|change\", KERNEL==\"{d.name}\", "
                   "ATTR{queue/write_cache}=\"write through\"), the modern replacement for "
                   "nobarrier (removed in Linux 4.19). Risk: if it is not (a failed battery, a "
                   "drive without power-loss protection), a power failure loses or corrupts "
                   "what XFS was told is on stable storage")
    elif d.write_cache.value == "write back" and d.fua.value is False:
        out.append(f"{d.name} has a volatile write cache without FUA: every log commit costs a "
                   "full cache flush, which hurts metadata-heavy and fsync-heavy work "
                   "(LKML 2008, XFS vs elevators); "
                   "a non-volatile cache or FUA support avoids it. Never mount with nobarrier "
                   "(removed in Linux 4.19)")
    if d.zoned.value == "host-aware":
        out.append(f"{d.name} is a host-aware zoned device: it takes random writes, so a "
                   "conventional XFS works, but XFS does not write its zones sequentially and "
                   "the drive's own handling of that may make writes slow and uneven")
    if d.usage.mountpoints:
        out.append(f"{d.name} is mounted on {', '.join(d.usage.mountpoints)}: unmount it first; "
                   "mkfs.xfs destroys what is on it")
    elif d.usage.swap:
        out.append(f"{d.name} is in use as swap")
    elif d.usage.signatures or d.usage.fstype.value:
        found = ", ".join(str(s.value) for s in d.usage.signatures if s.value) \
            or str(d.usage.fstype.value)
        out.append(f"{d.name} holds data ({found}): mkfs.xfs refuses without -f and destroys it")
    if d.holders:
        out.append(f"{d.name} is used by {', '.join(d.holders)}: format that device instead")
    partitions = [c for c in d.children if c not in d.holders]
    if partitions:
        out.append(f"{d.name} has partitions ({', '.join(partitions)}): formatting the whole "
                   "device destroys them; format a partition instead")
    if d.read_only.value:
        out.append(f"{d.name} is read-only")
    return Outcome(warnings=out)




