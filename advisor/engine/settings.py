"""The settings the engine decides, one decision each, in the order they are decided and shown.
Later settings may depend on earlier ones (the log stripe unit on the data stripe, logbsize on the
log stripe unit), so the order matters."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SettingKind = Literal["mkfs", "mount"]


@dataclass(frozen=True)
class Setting:
    name: str
    kind: SettingKind
    changeable_later: str


SETTINGS: tuple[Setting, ...] = (
    Setting("-b size", "mkfs", "no (mkfs)"),
    Setting("-m features", "mkfs", "no (mkfs; a few features can be added by xfs_admin)"),
    Setting("-d su/sw", "mkfs", "partly (mount -o sunit/swidth can change the alignment used)"),
    Setting("-d agcount/agsize", "mkfs", "no (mkfs)"),
    Setting("-i size", "mkfs", "no (mkfs)"),
    Setting("-n size", "mkfs", "no (mkfs)"),
    Setting("-l size", "mkfs", "no (mkfs; an external log needs a new mkfs too)"),
    Setting("-l su", "mkfs", "no (mkfs)"),
    Setting("-l logdev", "mkfs", "no (mkfs; the log device is part of the filesystem)"),
    Setting("-m rmapbt", "mkfs", "no (mkfs; xfsprogs 6.1's xfs_admin cannot add it)"),
    Setting("-d extszinherit", "mkfs", "for new files (xfs_io -c 'extsize SIZE' DIR; files "
            "holding data keep theirs)"),
    Setting("-d cowextsize", "mkfs", "yes (xfs_io -c 'cowextsize SIZE' on a directory)"),
    Setting("-i maxpct", "mkfs", "yes (xfs_growfs -m PERCENT)"),
    Setting("-K", "mkfs", "does not apply after mkfs (fstrim discards free space at any time)"),
    Setting("mount inode32/inode64", "mount", "yes (remount; existing inodes stay where they are)"),
    Setting("mount logbsize", "mount", "yes (mount)"),
    Setting("mount logbufs", "mount", "yes (mount)"),
    Setting("mount atime", "mount", "yes (remount)"),
    Setting("mount discard", "mount", "yes (remount)"),
    Setting("mount dax", "mount", "yes (mount; per file with xfs_io chattr +x)"),
    Setting("mount logdev", "mount", "no (it names where the log is: every mount needs it)"),
    Setting("mount swalloc", "mount", "yes (mount)"),
    Setting("mount allocsize", "mount", "yes (mount)"),
    Setting("mount largeio", "mount", "yes (mount)"),
    Setting("mount quota", "mount", "on a fresh mount only (not by remount; / needs rootflags=)"),
)

BY_NAME = {s.name: s for s in SETTINGS}
