"""What every decider sees: the device, the answers, the host, what mkfs.xfs does on its own, and
the decisions already taken (settings are decided in a fixed order)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from advisor.models.device import Device
from advisor.models.environment import Environment, FeatureSet
from advisor.models.proposal import MkfsGeometry
from advisor.models.units import parse_size
from advisor.models.workload import Workload

KiB, MiB, GiB, TiB = 1 << 10, 1 << 20, 1 << 30, 1 << 40


@dataclass(frozen=True)
class Change:
    """A value a rule wants for its setting."""

    value: str
    """Short value shown in the decision (`64k`, `agcount=32`, `noatime`)."""
    options: list[str]
    """mkfs flag/argument pairs (`["-n", "size=64k"]`) or mount options (`["noatime"]`)."""
    reason: str


@dataclass
class Outcome:
    """What a decider says: a change, or why the default stays; and any warnings."""

    change: Change | None = None
    keep_reason: str | None = None
    warnings: list[str] = field(default_factory=list)


@dataclass
class Context:
    device: Device
    workload: Workload
    env: Environment
    defaults: MkfsGeometry
    size: int
    feature_sets: dict[str, FeatureSet] = field(default_factory=dict)
    """xfsprogs' lts_*.conf feature sets, read by the caller (only when an older kernel must
    mount the result: advisor.engine.deciders.target_kernel)."""
    chosen: dict[str, Change] = field(default_factory=dict)

    @property
    def eventual_size(self) -> int | None:
        """The planned size after growth, when an answer gives it."""
        w = self.workload
        if w.eventual_size is not None:
            return w.eventual_size
        if w.growth_factor is not None:
            return int(self.size * w.growth_factor)
        return None

    def stripe(self) -> tuple[int, int, str] | None:
        """The data stripe (unit bytes, data disks, where from) the filesystem will use: the RAID
        answers when given, else what mkfs.xfs detects."""
        s = self.workload.storage
        if "-d su/sw" in self.chosen and s.raid_stripe_unit and s.raid_data_disks:
            return s.raid_stripe_unit, s.raid_data_disks, "answers"
        g = self.device.stripe
        if g.used_by_mkfs and g.sunit_bytes and g.data_disks:
            return g.sunit_bytes, g.data_disks, g.source
        return None

    def agsize_bytes(self) -> int:
        """The AG size the proposal leads to (so far): chosen agsize/agcount, else the default."""
        change = self.chosen.get("-d agcount/agsize")
        if change:
            for arg in change.options[1::2]:
                for part in arg.split(","):
                    key, _, val = part.partition("=")
                    if key == "agcount":
                        return self.size // int(val)
                    if key == "agsize":
                        return parse_size(val)
        return self.defaults.agsize_bytes


def mkfs_size(n: int) -> str:
    """Bytes as mkfs.xfs reads them, exactly: 65536 -> '64k', 1 GiB -> '1g', 12345 -> '12345'."""
    for suffix, factor in (("t", TiB), ("g", GiB), ("m", MiB), ("k", KiB)):
        if n and n % factor == 0:
            return f"{n // factor}{suffix}"
    return str(n)


def round_up(n: int, multiple: int) -> int:
    return math.ceil(n / multiple) * multiple


def round_down(n: int, multiple: int) -> int:
    return n // multiple * multiple
