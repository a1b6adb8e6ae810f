"""Pure parsers for the text of sysfs and /proc files. They take strings and never touch the host.

Each returns the parsed value, or raises ValueError with a short reason: the caller turns that into
a null fact with a note, so one garbage attribute never stops an inspection.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SECTOR = 512
_MAJ_MIN = re.compile(r"^\d+:\d+$")


def parse_int(text: str) -> int:
    """A non-negative decimal integer, as sysfs prints them."""
    text = text.strip()
    if not text.isdigit():
        raise ValueError(f"not a non-negative integer: {text[:40]!r}")
    return int(text)


def parse_sectors(text: str) -> int:
    """Bytes from a count of 512-byte sectors (sysfs `size` and `start`, whatever the device's
    logical sector size)."""
    return parse_int(text) * SECTOR


def parse_flag(text: str) -> bool:
    """A 0/1 sysfs flag."""
    text = text.strip()
    if text not in ("0", "1"):
        raise ValueError(f"not a 0/1 flag: {text[:40]!r}")
    return text == "1"


def parse_scheduler(text: str) -> str:
    """The active scheduler from `none [mq-deadline] kyber` (the bracketed one; a lone name when
    the queue offers just one)."""
    words = text.split()
    for word in words:
        if word.startswith("[") and word.endswith("]") and len(word) > 2:
            return word[1:-1]
    if len(words) == 1 and re.fullmatch(r"[\w-]+", words[0]):
        return words[0]
    raise ValueError(f"no active scheduler in {text[:60]!r}")


def parse_write_cache(text: str) -> str:
    """`write back` (a volatile cache: the kernel sends flushes) or `write through`."""
    text = " ".join(text.split())
    if text not in ("write back", "write through"):
        raise ValueError(f"unknown write_cache mode {text[:40]!r}")
    return text


def parse_zoned(text: str) -> str:
    text = text.strip()
    if text not in ("none", "host-aware", "host-managed"):
        raise ValueError(f"unknown zoned model {text[:40]!r}")
    return text


def parse_maj_min(text: str) -> str:
    text = text.strip()
    if not _MAJ_MIN.match(text):
        raise ValueError(f"not MAJ:MIN: {text[:40]!r}")
    return text


def parse_word(text: str) -> str:
    """A single non-empty token (md level, model names are taken as stripped text)."""
    text = text.strip()
    if not text:
        raise ValueError("empty")
    return text


def md_data_disks(level: str, raid_disks: int, layout: int = 0) -> int:
    """Disks holding distinct data in one stripe, as the kernel counts them for optimal_io_size:
    raid0 n, raid1 1, raid4/5 n-1, raid6 n-2, raid10 n / near copies (near = layout & 0xff; far
    and offset copies do not count: drivers/md/raid10.c raid10_nr_stripes, so f2 on 4 disks is
    4 and n2 on 8 disks is 4), or n itself when the near copies do not divide n."""
    if raid_disks < 1:
        raise ValueError(f"raid_disks must be >= 1, not {raid_disks}")
    level = level.lower()
    if level in ("raid0", "0"):
        return raid_disks
    if level in ("raid1", "1", "linear"):  # linear concatenates: no stripe across members
        return 1
    if level in ("raid4", "raid5", "4", "5"):
        if raid_disks < 2:
            raise ValueError(f"{level} needs at least 2 disks")
        return raid_disks - 1
    if level in ("raid6", "6"):
        if raid_disks < 3:
            raise ValueError(f"{level} needs at least 3 disks")
        return raid_disks - 2
    if level in ("raid10", "10"):
        near = max(layout & 0xFF, 1)
        return raid_disks if raid_disks % near else raid_disks // near
    raise ValueError(f"no data-disk rule for md level {level!r}")


def dm_kind_from_uuid(uuid: str) -> str:
    """lvm, crypt, multipath or other, from the dm uuid's prefix (what lsblk uses for TYPE)."""
    prefix = uuid.split("-", 1)[0].upper() if "-" in uuid else ""
    if prefix == "LVM":
        return "lvm"
    if prefix == "CRYPT":
        return "crypt"
    if prefix == "MPATH":
        return "multipath"
    return "other"


_OCTAL = re.compile(r"\\([0-7]{3})")


def unescape_mount_path(text: str) -> str:
    """mountinfo and /proc/mounts write space, tab, newline and backslash as octal escapes.
    (Most paths hold none: they are returned as they are, without a regular expression run.)"""
    if "\\" not in text:
        return text
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), text)


@dataclass(frozen=True)
class MountEntry:
    """One mounted filesystem: the device it came from (MAJ:MIN when known, and the source)."""

    maj_min: str | None
    source: str
    mountpoint: str
    fstype: str
    raw: str


def parse_mountinfo(text: str) -> list[MountEntry]:
    """Entries of /proc/self/mountinfo; malformed lines are skipped. The kernel escapes only
    space, tab, newline and backslash in a path: lines end at a newline and fields at a space,
    nothing else (a mount point holding a carriage return, NEL or U+2028 is still one field)."""
    entries: list[MountEntry] = []
    for line in text.split("\n"):
        fields = line.split(" ")
        if " - " not in line or len(fields) < 10:
            continue
        sep = fields.index("-", 6)
        if len(fields) < sep + 3:
            continue
        maj_min = fields[2] if _MAJ_MIN.match(fields[2]) else None
        entries.append(MountEntry(maj_min=maj_min, source=unescape_mount_path(fields[sep + 2]),
                                  mountpoint=unescape_mount_path(fields[4]),
                                  fstype=fields[sep + 1], raw=line))
    return entries


def parse_proc_mounts(text: str) -> list[MountEntry]:
    """Entries of /proc/mounts (no MAJ:MIN: matched by source path)."""
    entries: list[MountEntry] = []
    for line in text.split("\n"):
        fields = line.split(" ")
        if len(fields) < 3:
            continue
        entries.append(MountEntry(maj_min=None, source=unescape_mount_path(fields[0]),
                                  mountpoint=unescape_mount_path(fields[1]), fstype=fields[2],
                                  raw=line))
    return entries


def parse_swaps(text: str) -> list[str]:
    """Paths in /proc/swaps (devices or files), header skipped."""
    paths: list[str] = []
    for line in text.split("\n")[1:]:
        fields = re.split(r"[ \t]+", line.strip(" \t"))
        if len(fields) >= 2:
            paths.append(unescape_mount_path(fields[0]))
    return paths


def transport_from_link(target: str) -> str | None:
    """The bus a disk hangs off, from its /sys/block symlink target (a sysfs devices path)."""
    if "/virtual/" in target:
        return None
    for marker, name in (("/nvme", "nvme"), ("/usb", "usb"), ("/ata", "sata"),
                         ("/virtio", "virtio"), ("/session", "iscsi"), ("/rport-", "fc"),
                         ("/mmc", "mmc"), ("/host", "scsi")):
        if marker in target:
            return name
    return None
