"""What the host runs: xfsprogs version (`mkfs.xfs -V`), kernel, memory, CPUs, and which
`lts_<kernel>.conf` feature sets xfsprogs ships. Live or from a captured sysroot."""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections.abc import Callable
from pathlib import Path

from advisor.errors import ToolProblem
from advisor.models.environment import PAGE_SIZE_FILE, Environment, page_size_from_pmd
from advisor.system import argv
from advisor.system.runner import run
from advisor.system.sysroot import SysRoot

LTS_DIR = Path("/usr/share/xfsprogs/mkfs")
#: Where a capture keeps its host's `mkfs.xfs -V` output (relative to the capture's root).
XFSPROGS_FILE = "xfs-advisor-mkfs-version"


def parse_mkfs_version(text: str) -> str | None:
    """'mkfs.xfs version 6.1.0' -> '6.1.0'."""
    m = re.search(r"version\s+(\d+\.\d+(?:\.\d+)?)", text)
    return m.group(1) if m else None


def parse_meminfo(text: str) -> int | None:
    """MemTotal in bytes from /proc/meminfo text."""
    m = re.search(r"^MemTotal:\s+(\d+)\s*kB", text, re.MULTILINE)
    return int(m.group(1)) * 1024 if m else None


def parse_cpu_list(text: str) -> int | None:
    """Number of CPUs in a list like '0-3,8,10-11'."""
    count = 0
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        try:
            count += int(hi or lo) - int(lo) + 1
        except ValueError:
            return None
    return count or None


#: directory -> (its modification time, what lts_configs found there).
_LTS_FOUND: dict[Path, tuple[int, dict[str, str]]] = {}


def lts_configs(directory: Path = LTS_DIR) -> dict[str, str]:
    """Kernel version -> lts_<version>.conf path, oldest kernel first. Listed again only when
    the folder changed (every host of a fleet report asks)."""
    try:
        changed = directory.stat().st_mtime_ns
    except OSError:
        return {}
    known = _LTS_FOUND.get(directory)
    if known is not None and known[0] == changed:
        return dict(known[1])
    found: dict[tuple[int, int], tuple[str, str]] = {}
    for conf in directory.glob("lts_*.conf"):
        version = conf.stem.removeprefix("lts_")
        m = re.fullmatch(r"(\d+)\.(\d+)", version)
        if m:
            found[(int(m.group(1)), int(m.group(2)))] = (version, str(conf))
    listed = dict(found[k] for k in sorted(found))
    _LTS_FOUND[directory] = (changed, listed)
    return dict(listed)


#: The kernel's XFS build options the rules read (CONFIG_XFS_<name>).
KERNEL_XFS_OPTIONS = ("QUOTA", "ONLINE_SCRUB", "ONLINE_REPAIR")


def parse_kernel_config(text: str) -> dict[str, bool]:
    """CONFIG_XFS_<name> of KERNEL_XFS_OPTIONS -> built in or a module ("=y"/"=m"), from a
    kernel config's text; empty when XFS itself is not in it (not a kernel config)."""
    if not re.search(r"^CONFIG_XFS_FS=[ym]$", text, re.MULTILINE):
        return {}
    return {name: re.search(rf"^CONFIG_XFS_{name}=[ym]$", text, re.MULTILINE) is not None
            for name in KERNEL_XFS_OPTIONS}


def kernel_xfs(root: SysRoot, release: str | None) -> dict[str, bool]:
    """The kernel's XFS options: /boot/config-RELEASE (a capture holds it as text), else the
    live kernel's /proc/config.gz; empty when neither is readable."""
    text = root.read(f"boot/config-{release}") if release else None
    if text is None and root.live:
        try:
            with gzip.open("/proc/config.gz", "rt", encoding="utf-8") as f:
                text = f.read()
        except (OSError, EOFError, zlib.error):
            text = None
    return parse_kernel_config(text) if text else {}


def xfsprogs_version() -> str | None:
    """The local mkfs.xfs's version, or None when mkfs.xfs is missing."""
    try:
        result = run(argv.mkfs_version(), timeout=10)
    except ToolProblem:
        return None
    return parse_mkfs_version(result.stdout + result.stderr)


def read_environment(root: SysRoot | None = None, *,
                     local_xfsprogs: Callable[[], str | None] = xfsprogs_version) -> Environment:
    """The environment of the live host, or of a captured one (memory, CPUs and kernel come from
    the capture when it holds them; xfsprogs is always the local one, which does the checks:
    `local_xfsprogs` asks for its version, once per host unless it keeps the answer)."""
    root = root or SysRoot()
    kernel = root.read("proc/sys/kernel/osrelease")
    if kernel is None and root.live:
        kernel = os.uname().release
    meminfo = root.read("proc/meminfo")
    cpus = root.read("sys/devices/system/cpu/online")
    cpu_count = parse_cpu_list(cpus) if cpus else None
    if cpu_count is None and root.live:
        cpu_count = os.cpu_count()
    return Environment(
        xfsprogs_version=local_xfsprogs(),
        kernel=kernel,
        memory_bytes=parse_meminfo(meminfo) if meminfo else None,
        cpu_count=cpu_count,
        lts_configs=lts_configs(),
        page_size=_page_size(root),
        kernel_xfs=kernel_xfs(root, kernel),
        target_xfsprogs=None if root.live else parse_mkfs_version(root.read(XFSPROGS_FILE) or ""),
    )


def _page_size(root: SysRoot) -> int | None:
    """The page size of the host the root shows: from sysfs (a capture's too), else the live
    host's own (the block size rule reads it)."""
    size = page_size_from_pmd(root.read(PAGE_SIZE_FILE))
    if size is None and root.live:
        size = os.sysconf("SC_PAGE_SIZE")
    return size
