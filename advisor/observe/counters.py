"""The counters the kernel keeps anyway: a mounted XFS filesystem's statistics
(/sys/fs/xfs/DEV/stats/stats) and its block device's (/sys/dev/block/MAJ:MIN/stat). Parsers take
text; readings are taken through SysRoot like every other sysfs read.

The stats file is one named line per group of counters, in the order of `struct __xfsstats`
(fs/xfs/xfs_stats.h); the names of the fields below follow that header. A line this table does
not know, or a line longer than it expects (a newer kernel), keeps its extra fields as
`line.N`, so that nothing a kernel adds is lost or misread.
"""

from __future__ import annotations

from advisor.errors import BadInput

#: Field names of the stats lines the findings use, in kernel order (fs/xfs/xfs_stats.h).
STATS_FIELDS: dict[str, tuple[str, ...]] = {
    "extent_alloc": ("alloc_extents", "alloc_blocks", "free_extents", "free_blocks"),
    "abt": ("lookup", "compare", "insrec", "delrec"),
    "blk_map": ("read_ops", "write_ops", "unmap", "add_exlist", "del_exlist", "look_exlist",
                "cmp_exlist"),
    "bmbt": ("lookup", "compare", "insrec", "delrec"),
    "dir": ("lookup", "create", "remove", "getdents"),
    "trans": ("sync", "async", "empty"),
    "ig": ("attempts", "found", "frecycle", "missed", "dup", "reclaims", "attrchg"),
    "log": ("writes", "blocks", "noiclogs", "force", "force_sleep"),
    "push_ail": ("try_logspace", "sleep_logspace", "pushes", "success", "pushbuf", "pinned",
                 "locked", "flushing", "restarts", "flush"),
    "xstrat": ("quick", "split"),
    "rw": ("write_calls", "read_calls"),
    "attr": ("get", "set", "remove", "list"),
    "icluster": ("iflush_count", "flushcnt", "flushinode"),
    "vnodes": ("active", "alloc", "get", "hold", "rele", "reclaim", "remove", "free"),
    "buf": ("get", "create", "get_locked", "get_locked_waited", "busy_locked", "miss_locked",
            "page_retries", "page_found", "get_read"),
    "xpc": ("xstrat_bytes", "write_bytes", "read_bytes"),
    "defer_relog": ("count",),
}

#: /sys/block/DEV/stat fields (Documentation/block/stat.rst), in order.
BLOCK_FIELDS = ("read_ios", "read_merges", "read_sectors", "read_ticks", "write_ios",
                "write_merges", "write_sectors", "write_ticks", "in_flight", "io_ticks",
                "time_in_queue", "discard_ios", "discard_merges", "discard_sectors",
                "discard_ticks", "flush_ios", "flush_ticks")

#: Counters that are levels, not running totals: a delta of them means nothing.
LEVELS = frozenset({"vnodes.active", "in_flight"})


def parse_xfs_stats(text: str) -> dict[str, int]:
    """`line.field` -> value for every number in an XFS stats file. BadInput when the text is not
    one (no `log` line, or a field that is not a whole number)."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        name, numbers = words[0], words[1:]
        fields = STATS_FIELDS.get(name, ())
        for i, word in enumerate(numbers):
            try:
                value = int(word)
            except ValueError:
                raise BadInput(f"not an XFS statistics file: {line[:60]!r}") from None
            values[f"{name}.{fields[i] if i < len(fields) else i}"] = value
    if "log.writes" not in values:
        raise BadInput("not an XFS statistics file: it has no log line")
    return values


def parse_block_stat(text: str) -> dict[str, int]:
    """field -> value of a block device's stat file (older kernels have fewer fields)."""
    words = text.split()
    try:
        numbers = [int(w) for w in words]
    except ValueError:
        raise BadInput(f"not a block device stat file: {text[:60]!r}") from None
    if len(numbers) < 11:
        raise BadInput(f"not a block device stat file: {len(numbers)} fields")
    return dict(zip(BLOCK_FIELDS, numbers, strict=False))


def deltas(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """How much each running total moved. A counter that went down (the statistics were cleared
    through stats_clear during the interval, or the device was replaced) counts from zero."""
    moved: dict[str, int] = {}
    for key, end in after.items():
        if key in LEVELS:
            continue
        start = before.get(key, 0)
        moved[key] = end - start if end >= start else end
    return moved
