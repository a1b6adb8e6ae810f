"""What stands in the way of formatting a device, judged once, in one wording, from the device's own
facts (pure: no inventory, no live system). Read by the scratch-device guard (advisor.bench.guard,
which adds what only the whole inventory or the kernel can tell: system mounts, what is built on
the device, loop bindings, the size), the rule book's device rules (advisor.engine.rules.
device_obstacle), and the device lists of the command line and the TUI (advisor.render.devices).

Each obstacle says it three ways, all made here: `badge` for a list column (`mounted /srv`),
`says` for a sentence after the device's name (`sdb is mounted on /srv`, or the guard's `it is
mounted on /srv`), and `advice`, what to do about it, for the proposal's warning."""

from __future__ import annotations

from typing import Literal

from advisor.models.device import Device

ObstacleKind = Literal["mounted", "swap", "held", "looped", "partitions", "data", "read-only",
                       "zoned", "misaligned"]

#: Every kind, in the order `obstacles` reports them.
OBSTACLE_KINDS: tuple[ObstacleKind, ...] = ("mounted", "swap", "held", "looped", "partitions",
                                            "data", "read-only", "zoned", "misaligned")


class Obstacle:
    """One thing that stands in the way of formatting a device, or makes the result worse. (A
    plain class, not a dataclass: making a frozen dataclass compiles its methods at every
    start.)"""

    __slots__ = ("advice", "badge", "blocks", "kind", "says")

    def __init__(self, kind: ObstacleKind, blocks: bool, badge: str, says: str,
                 advice: str) -> None:
        self.kind = kind
        self.blocks = blocks
        """True: formatting would destroy something in use, or cannot work (the guard refuses);
        False: it can be formatted, but the result suffers (a misaligned start, a host-aware
        zoned drive)."""
        self.badge = badge
        """A few words for a device list (`mounted /srv`, `held by dm-0`, `holds xfs`)."""
        self.says = says
        """The words after the device's name (`is mounted on /srv`)."""
        self.advice = advice
        """What to do about it, for a warning (`unmount it first: mkfs.xfs destroys what is on
        it`)."""

    def __repr__(self) -> str:
        return (f"Obstacle({self.kind!r}, {self.blocks!r}, {self.badge!r}, {self.says!r}, "
                f"{self.advice!r})")

    def sentence(self, subject: str) -> str:
        """`subject says: advice`, the proposal's warning."""
        return f"{subject} {self.says}: {self.advice}"


def signature_text(device: Device) -> str | None:
    """What libblkid found on the device, in its own words:
    `ext4 (TYPE=ext4 USAGE=filesystem VERSION=1.0)`; None when nothing (or not probed). Only the
    signatures count, not `usage.fstype`: a mounted filesystem is the `mounted` obstacle, and
    a signature dropped on purpose (a killed run's own test filesystem) must not come back."""
    found = [s for s in device.usage.signatures if s.value]
    if not found:
        return None
    return "; ".join(f"{s.value} ({s.note + ', ' if s.note else ''}{s.raw or s.source})"
                     for s in found)


def partitions(device: Device) -> list[str]:
    """The partitions on the device: what is built on it that does not hold it (a partition has
    none of its own)."""
    if device.kind == "part":
        return []
    return [c for c in device.children if c not in device.holders]


def obstacles(device: Device) -> list[Obstacle]:
    """Everything about the device itself that stands in the way of formatting it, in
    OBSTACLE_KINDS order; empty when nothing does. What is mounted or swapped on holds data by
    definition: `data` is reported only for a device that is neither."""
    found: list[Obstacle] = []
    usage = device.usage
    if usage.mountpoints:
        where = ", ".join(usage.mountpoints)
        found.append(Obstacle("mounted", True, f"mounted {usage.mountpoints[0]}",
                              f"is mounted on {where}",
                              "unmount it first (mkfs.xfs destroys what is on it)"))
    if usage.swap:
        found.append(Obstacle("swap", True, "swap", "is in use as swap (/proc/swaps)",
                              "swapoff it first (mkfs.xfs destroys what is on it)"))
    if device.holders:
        held = ", ".join(device.holders)
        found.append(Obstacle("held", True, "held by " + ",".join(device.holders),
                              f"is held by {held} (LVM, md, dm-crypt or multipath use it)",
                              "format that device instead"))
    if usage.loops:
        found.append(Obstacle("looped", True, "backs " + ",".join(usage.loops),
                              f"is the backing of loop device {', '.join(usage.loops)}",
                              "detach the loop device first (losetup -d): formatting destroys "
                              "what it holds, at whatever offset it starts"))
    parts = partitions(device)
    if parts:
        found.append(Obstacle("partitions", True, "has " + ",".join(parts),
                              f"has partitions ({', '.join(parts)})",
                              "formatting the whole device destroys them; format a partition "
                              "instead"))
    signature = signature_text(device)
    if signature and not usage.mountpoints and not usage.swap:
        short = next(str(s.value) for s in usage.signatures if s.value)
        found.append(Obstacle("data", True, f"holds {short}", f"holds data: {signature}",
                              "mkfs.xfs refuses without -f and destroys it"))
    if device.read_only.value:
        found.append(Obstacle("read-only", True, "read-only", "is read-only",
                              "nothing can be written to it"))
    zoned = device.zoned.value
    if zoned == "host-managed":
        found.append(Obstacle("zoned", True, "zoned host-managed",
                              "is a host-managed zoned device (sequential writes only)",
                              "a conventional XFS cannot live on it and these rules do not cover "
                              "zoned XFS. Zoned XFS needs Linux 6.15 or later and xfsprogs 6.15 "
                              "or later (whose mkfs.xfs sets it up itself); on older systems, "
                              "dm-zoned (dmzadm --format) makes it a conventional device to "
                              "format instead"))
    elif zoned and zoned != "none":
        found.append(Obstacle("zoned", False, f"zoned {zoned}",
                              f"is a {zoned} zoned device",
                              "it takes random writes, so a conventional XFS works, but XFS does "
                              "not write its zones sequentially and the drive's own handling of "
                              "that may make writes slow and uneven"))
    offset = device.alignment_offset.value
    if offset:
        found.append(Obstacle("misaligned", False, f"misaligned +{offset}B",
                              f"starts {offset} bytes off its physical alignment",
                              "every IO straddles sectors and mkfs.xfs refuses without -f; "
                              "re-create the partition aligned (1 MiB boundaries)"))
    return found
