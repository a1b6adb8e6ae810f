"""The host the proposal is for: tool versions, memory, CPUs. Rules propose only what these
allow."""

from __future__ import annotations

from pydantic import Field

from advisor.models.base import Model


class Environment(Model):
    """Versions and resources the rules take into account."""

    xfsprogs_version: str | None = None
    """xfsprogs version from `mkfs.xfs -V` (e.g. 6.1.0); null when mkfs.xfs is missing."""
    kernel: str | None = None
    """Kernel release (e.g. 6.1.0-18-amd64), from proc/sys/kernel/osrelease or uname."""
    memory_bytes: int | None = Field(default=None, ge=0)
    """MemTotal from /proc/meminfo, in bytes."""
    cpu_count: int | None = Field(default=None, ge=1)
    """Online CPUs (sys/devices/system/cpu/online)."""
    lts_configs: dict[str, str] = Field(default_factory=dict)
    """Kernel version -> path of xfsprogs' lts_<kernel>.conf feature sets for older kernels."""

    def xfsprogs_at_least(self, major: int, minor: int) -> bool:
        """True when the xfsprogs version is known and >= major.minor."""
        version = parse_version(self.xfsprogs_version)
        return version is not None and version >= (major, minor)


def parse_version(text: str | None) -> tuple[int, int] | None:
    """(major, minor) from '6.1.0', '5.10' or '6.1.0-18-amd64'; None when it does not parse."""
    if not text:
        return None
    parts = text.split("-", 1)[0].split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        return None
