"""The settings the engine decides, one decision each, in the order they are decided and shown.
Later settings may depend on earlier ones (the log stripe unit on the data stripe, logbsize on the
log stripe unit), so the order matters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from advisor.engine.context import log_size_text, mkfs_size
from advisor.models.environment import Environment
from advisor.models.proposal import MkfsGeometry
from advisor.models.units import human_size

SettingKind = Literal["mkfs", "mount"]
#: What mkfs.xfs or the kernel uses for a setting when the proposal leaves it alone, from the
#: geometry `mkfs.xfs -N` reported for the device and the environment.
DefaultText = Callable[[MkfsGeometry, Environment], str]


def _fixed(text: str) -> DefaultText:
    return lambda g, env: text


class Setting:
    """One setting the engine decides. (A plain class, not a dataclass: making a frozen
    dataclass compiles its methods at every start.)"""

    __slots__ = ("changeable_later", "default", "kind", "name")

    def __init__(self, name: str, kind: SettingKind, changeable_later: str,
                 default: DefaultText) -> None:
        self.name = name
        self.kind = kind
        self.changeable_later = changeable_later
        self.default = default
        """The default's text, shown beside a kept or changed value."""

    def __repr__(self) -> str:
        return f"Setting({self.name!r}, {self.kind!r}, {self.changeable_later!r})"


def _features(g: MkfsGeometry, env: Environment) -> str:
    return (f"xfsprogs {env.xfsprogs_version or '?'} defaults: "
            + ",".join(f"{k}={v}" for k, v in sorted(g.features.items())))


def _data_stripe(g: MkfsGeometry, env: Environment) -> str:
    if not g.sunit_blocks:
        return "none"
    return f"su={mkfs_size(g.sunit_blocks * g.block_size)},sw={g.swidth_blocks // g.sunit_blocks}"


SETTINGS: tuple[Setting, ...] = (
    Setting("-b size", "mkfs", "no (mkfs)",
            lambda g, env: mkfs_size(g.block_size)),
    Setting("-m features", "mkfs", "no (mkfs; a few features can be added by xfs_admin)",
            _features),
    Setting("-d su/sw", "mkfs", "partly (mount -o sunit/swidth can change the alignment used)",
            _data_stripe),
    Setting("-d agcount/agsize", "mkfs", "no (mkfs)",
            lambda g, env: (f"agcount={g.agcount}, agsize {g.agsize_blocks} blocks "
                            f"({human_size(g.agsize_bytes)})")),
    Setting("-i size", "mkfs", "no (mkfs)",
            lambda g, env: str(g.inode_size)),
    Setting("-n size", "mkfs", "no (mkfs)",
            lambda g, env: mkfs_size(g.naming_block_size)),
    Setting("-l size", "mkfs", "no (mkfs; an external log needs a new mkfs too)",
            lambda g, env: log_size_text(g.log_bytes)),
    Setting("-l su", "mkfs", "no (mkfs)",
            lambda g, env: (mkfs_size(g.log_sunit_blocks * g.block_size)
                           if g.log_sunit_blocks else "none")),
    Setting("-l logdev", "mkfs", "no (mkfs; the log device is part of the filesystem)",
            _fixed("internal (inside the data section)")),
    Setting("-m rmapbt", "mkfs", "no (mkfs; xfsprogs 6.1's xfs_admin cannot add it)",
            lambda g, env: f"rmapbt={g.features.get('rmapbt', 0)}"),
    Setting("-d extszinherit", "mkfs", "for new files (xfs_io -c 'extsize SIZE' DIR; files "
            "holding data keep theirs)",
            _fixed("no extent size hint")),
    Setting("-d cowextsize", "mkfs", "yes (xfs_io -c 'cowextsize SIZE' on a directory)",
            _fixed("32 blocks (the kernel's copy-on-write hint)")),
    Setting("-i maxpct", "mkfs", "yes (xfs_growfs -m PERCENT)",
            lambda g, env: (f"{g.imaxpct}%" if g.imaxpct is not None else
                           "25% under 1 TiB, 5% under 50 TiB, 1% above")),
    Setting("-K", "mkfs", "does not apply after mkfs (fstrim discards free space at any time)",
            _fixed("discard the whole device before writing (when it takes discards)")),
    Setting("mount inode32/inode64", "mount", "yes (remount; existing inodes stay where they are)",
            _fixed("inode64")),
    Setting("mount logbsize", "mount", "yes (mount)",
            _fixed("32k, or the log stripe unit when larger")),
    Setting("mount logbufs", "mount", "yes (mount)",
            _fixed("8")),
    Setting("mount atime", "mount", "yes (remount)",
            _fixed("relatime")),
    Setting("mount discard", "mount", "yes (remount)",
            _fixed("nodiscard")),
    Setting("mount dax", "mount", "yes (mount; per file with xfs_io chattr +x)",
            _fixed("dax=inode (only files with the DAX flag)")),
    Setting("mount logdev", "mount", "no (it names where the log is: every mount needs it)",
            _fixed("none (internal log)")),
    Setting("mount swalloc", "mount", "yes (mount)",
            _fixed("no swalloc")),
    Setting("mount allocsize", "mount", "yes (mount)",
            _fixed("dynamic end-of-file preallocation")),
    Setting("mount largeio", "mount", "yes (mount)",
            _fixed("nolargeio (st_blksize = page size)")),
    Setting("mount quota", "mount", "on a fresh mount only (not by remount; / needs rootflags=)",
            _fixed("noquota")),
)

BY_NAME = {s.name: s for s in SETTINGS}
