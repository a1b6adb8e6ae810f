"""The host the proposal is for: tool versions, memory, CPUs. Rules propose only what these
allow."""

# No `from __future__ import annotations` here: pydantic then reads the models' annotations as
# the objects they are, instead of evaluating each from its text (ForwardRef) as a class is built.

import math

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
    # ---- the page size, which caps the block size before Linux 6.12 ----
    page_size: int | None = Field(default=None, ge=1024)
    """The kernel's page size in bytes (4096 on x86-64; 16384 or 65536 on some arm64 and
    ppc64le kernels), from sys/kernel/mm/transparent_hugepage/hpage_pmd_size (a capture's) or
    the live host; null when unknown."""
    kernel_xfs: dict[str, bool] = Field(default_factory=dict)
    """The kernel's XFS build options (QUOTA, ONLINE_SCRUB, ONLINE_REPAIR: CONFIG_XFS_*) -> built
    in or a module, from /proc/config.gz or /boot/config-RELEASE; empty when unknown."""

    target_xfsprogs: str | None = None
    """The xfsprogs of the host the proposal is for, when that is a capture that recorded it
    (`mkfs.xfs -V` there); null for the local host, or a capture without it."""

    def xfsprogs_at_least(self, major: int, minor: int) -> bool:
        """True when the xfsprogs version is known and >= major.minor."""
        version = parse_version(self.xfsprogs_version)
        return version is not None and version >= (major, minor)

    @property
    def command_xfsprogs(self) -> str | None:
        """The xfsprogs whose mkfs.xfs will run the command: the captured host's when recorded,
        else the local one."""
        return self.target_xfsprogs or self.xfsprogs_version

    def target_older(self) -> bool:
        """True when the command is for a captured host whose xfsprogs is older than the local
        one that checked it (major.minor)."""
        target, local = parse_version(self.target_xfsprogs), parse_version(self.xfsprogs_version)
        return target is not None and local is not None and target < local

    def mkfs_knows(self, major: int, minor: int) -> bool:
        """True when every mkfs.xfs the command is for knows options of xfsprogs major.minor:
        the local one (which checks it) and the captured host's, when recorded."""
        target = parse_version(self.target_xfsprogs)
        return self.xfsprogs_at_least(major, minor) and (target is None
                                                         or target >= (major, minor))


class FeatureSet(Model):
    """One of xfsprogs' lts_<kernel>.conf files: the on-disk features that kernel mounts."""

    version: str
    """Kernel version the set is for (e.g. 5.4)."""
    path: str
    """Where xfsprogs keeps it."""
    features: dict[str, dict[str, int]] = Field(default_factory=dict)
    """section -> feature -> value (`metadata.reflink = 1`)."""
    rejection: str | None = None
    """Why this host's mkfs.xfs rejects the file (None: it accepts `-c options=PATH`)."""


def parse_lts_conf(text: str) -> dict[str, dict[str, int]]:
    """section -> feature -> value from an xfsprogs mkfs config file (ValueError when malformed)."""
    import configparser  # only when an older kernel must mount the result: not at every start

    parser = configparser.ConfigParser(inline_comment_prefixes=("#",))
    try:
        parser.read_string(text)
        return {s: {k: int(v) for k, v in parser.items(s)} for s in parser.sections()}
    except configparser.Error as err:
        raise ValueError(str(err)) from None


#: Where a sysroot says the page size (as the size of a PMD huge page).
PAGE_SIZE_FILE = "sys/kernel/mm/transparent_hugepage/hpage_pmd_size"


def page_size_from_pmd(text: str | None) -> int | None:
    """The page size from transparent_hugepage/hpage_pmd_size: a PMD maps page_size / 8 pages of
    page_size bytes (4 KiB -> 2 MiB, 16 KiB -> 32 MiB, 64 KiB -> 512 MiB); None when the text
    is no such size (a hash-MMU ppc64 kernel's 16 MiB, garbage)."""
    try:
        pmd = int((text or "").strip())
    except ValueError:
        return None
    page = math.isqrt(pmd * 8)
    if page < 1024 or page * page != pmd * 8 or page & (page - 1):
        return None
    return page


def parse_version(text: str | None) -> tuple[int, int] | None:
    """(major, minor) from '6.1.0', '5.10' or '6.1.0-18-amd64'; None when it does not parse."""
    if not text:
        return None
    parts = text.split("-", 1)[0].split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        return None
