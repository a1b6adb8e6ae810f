"""XFS mounts from mountinfo, with the options in effect (per mount and per superblock)."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.inspect.parsers import MountEntry, parse_mountinfo
from advisor.system.sysroot import SysRoot


@dataclass(frozen=True)
class Mount:
    """An XFS mount from mountinfo, with its options."""

    entry: MountEntry
    per_mount: tuple[str, ...]
    per_super: tuple[str, ...]

    @property
    def options(self) -> list[str]:
        """Every option in effect: per-mount first, then the superblock's."""
        return [*self.per_mount, *(o for o in self.per_super if o not in self.per_mount)]


def xfs_mounts(root: SysRoot) -> list[Mount]:
    """XFS mounts, one per filesystem (a bind mount of the same one is skipped)."""
    seen: set[str] = set()
    mounts = []
    for e in parse_mountinfo(root.read("proc/self/mountinfo") or ""):
        if e.fstype != "xfs" or (e.maj_min or e.source) in seen:
            continue
        seen.add(e.maj_min or e.source)
        fields = e.raw.split()
        sep = fields.index("-", 6)
        mounts.append(Mount(e, tuple(fields[5].split(",")),
                            tuple(fields[sep + 3].split(",")) if len(fields) > sep + 3 else ()))
    return mounts
