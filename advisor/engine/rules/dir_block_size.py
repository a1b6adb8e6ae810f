"""The directory block size (guide 2.1.1, table 2.5)."""

from __future__ import annotations

from pydantic import Field

from advisor.engine.context import Change, Context, KiB, Outcome, mkfs_size
from advisor.engine.registry import decider
from advisor.models.base import Model
from advisor.models.workload import Access


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
        sizes = {r.access: max(directory_block_for(entries, r.access, params),
                               ctx.geometry.block_size) for r in params.table}
        by_access = ", ".join(f"{a} {mkfs_size(max(s, default))}" for a, s in sizes.items())
        changing = [a for a, s in sizes.items() if s > default]
        if not changing:
            return Outcome(keep_reason=f"{entries:,} entries: within the {mkfs_size(default)} "
                           f"range of table 2.5 whatever the access pattern ({by_access})")
        which = ("every answer would change it" if len(changing) == len(sizes)
                 else f"{' or '.join(changing)} would change it")
        return Outcome(
            keep_reason=f"{entries:,} entries, but the access pattern is not given: table 2.5 "
            f"depends on it ({by_access}); {which}, so the answer decides: the default stays "
            "until access is answered",
            questions={"access": f"{entries:,} entries in the largest directory: {by_access} "
                       f"(default {mkfs_size(default)}); {which}"})
    size = max(directory_block_for(entries, access, params), ctx.geometry.block_size)
    if size <= default:
        return Outcome(keep_reason=f"{entries:,} entries, {access}: within the "
                       f"{mkfs_size(default)} range of table 2.5; larger blocks would only cost "
                       "CPU per operation")
    return Outcome(change=Change(
        mkfs_size(size), ["-n", f"size={mkfs_size(size)}"],
        values={"size": size}, reason=
        f"{entries:,} entries, {access}: table 2.5 puts this beyond the range of smaller directory "
        f"blocks; {mkfs_size(size)} blocks need fewer IOs per lookup and modification"))
