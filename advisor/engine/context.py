"""What every decider sees: the device, the answers, the host, what mkfs.xfs does on its own, and
the decisions already taken (settings are decided in a fixed order)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import get_args

from advisor.models.device import Device
from advisor.models.environment import Environment, FeatureSet, parse_version
from advisor.models.proposal import MkfsGeometry
from advisor.models.units import human_size, parse_size
from advisor.models.workload import StorageKind, Workload, mount_target

KiB, MiB, GiB, TiB = 1 << 10, 1 << 20, 1 << 30, 1 << 40


#: A decided value as later rules read it: bytes for sizes, a count, a flag, or text.
Typed = int | bool | str


class Change:
    """A value a rule wants for its setting. (Change, Outcome and Context are plain classes, not
    dataclasses: making a dataclass compiles its methods at every start, ~3 M instructions.)"""

    __slots__ = ("options", "reason", "source", "value", "values")

    def __init__(self, value: str, options: list[str], reason: str, source: str = "",
                 values: Mapping[str, Typed] | None = None) -> None:
        self.value = value
        """Short value shown in the decision (`64k`, `agcount=32`, `noatime`)."""
        self.options = options
        """mkfs flag/argument pairs (`["-n", "size=64k"]`) or mount options (`["noatime"]`): the
        command line, not for other rules to read."""
        self.reason = reason
        self.source = source
        """Where the value comes from, when later rules name it (the stripe: `answers`, `md0`)."""
        self.values: Mapping[str, Typed] = {} if values is None else values
        """The options' values, typed, by the name the option gives them (`su`, `sw`, `agsize`,
        `size`, `logbsize`; a bare mount option like `noatime` is True): bytes for sizes,
        counts, flags. Later rules read these (Context.decided), not the option text; the
        engine checks that they say what `options` say (`check_values`)."""

    def __repr__(self) -> str:
        return (f"Change(value={self.value!r}, options={self.options!r}, reason={self.reason!r}, "
                f"source={self.source!r}, values={self.values!r})")

    def option_texts(self) -> dict[str, str]:
        """Each sub-option's text as the command line has it (`{"su": "64k", "sw": "4"}`;
        a bare mount option maps to "")."""
        mkfs = bool(self.options) and self.options[0].startswith("-")
        parts = [p for arg in self.options[1::2] for p in arg.split(",")] if mkfs \
            else list(self.options)
        return {k: v for k, _, v in (p.partition("=") for p in parts)}


def check_values(change: Change) -> str | None:
    """Where `change.values` and `change.options` disagree (None: they agree), so a typed value
    later rules read is always what the command line says."""
    texts = change.option_texts()
    for key, value in change.values.items():
        text = texts.get(key)
        if text is None:
            return f"{key} is not in the options {change.options}"
        if isinstance(value, bool):
            agrees = text in (("", "1") if value else ("0",))
        elif isinstance(value, int):
            try:
                agrees = parse_size(text) == value
            except ValueError:
                agrees = False
        else:
            agrees = text == value
        if not agrees:
            return f"{key}={value!r} but the options say {key}={text}"
    return None


class Outcome:
    """What a decider says: a change, or why the default stays; and any warnings."""

    __slots__ = ("applies", "change", "keep_reason", "questions", "warnings")

    def __init__(self, change: Change | None = None, keep_reason: str | None = None,
                 warnings: list[str] | None = None, questions: dict[str, str] | None = None,
                 applies: bool = True) -> None:
        self.change = change
        self.keep_reason = keep_reason
        self.warnings: list[str] = [] if warnings is None else warnings
        self.questions: dict[str, str] = {} if questions is None else questions
        """Unanswered workload answers (their names) that would change this kept default ->
        what each possible answer would give."""
        self.applies = applies
        """False when the rule does not apply at all (no growth planned, not a DAX device): a
        kept default is then labelled with a rule that does, and its reason comes last."""

    def __repr__(self) -> str:
        return (f"Outcome(change={self.change!r}, keep_reason={self.keep_reason!r}, "
                f"warnings={self.warnings!r}, questions={self.questions!r}, "
                f"applies={self.applies!r})")


class Context:
    """What every decider sees (see the module's docstring)."""

    def __init__(self, device: Device, workload: Workload, env: Environment,
                 geometry: MkfsGeometry, size: int,
                 feature_sets: dict[str, FeatureSet] | None = None,
                 chosen: dict[str, Change] | None = None,
                 distribution_kernels: dict[str, str] | None = None) -> None:
        self.device = device
        self.workload = workload
        self.env = env
        self.geometry = geometry
        """What mkfs.xfs makes with the options decided so far: its defaults at first, measured
        again (by the caller's dry run) after each mkfs setting that changes, so that every
        later rule reads the AG count, AG size, log size and log stripe unit the proposal itself
        leads to (a stripe from the answers makes 32 AGs, not 4; a 4 KiB log sector keeps a
        one-block log stripe unit)."""
        self.size = size
        self.feature_sets: dict[str, FeatureSet] = {} if feature_sets is None else feature_sets
        """xfsprogs' lts_*.conf feature sets, read by the caller (only when an older kernel must
        mount the result: advisor.engine.rules.kernel_compat.target_kernel)."""
        self.chosen: dict[str, Change] = {} if chosen is None else chosen
        """The changes decided so far, by setting; read their values with `decided`."""
        self.distribution_kernels: dict[str, str] = ({} if distribution_kernels is None
                                                     else distribution_kernels)
        """rhel8, ubuntu18.04... -> its kernel's upstream version (the kernel-compat rule's
        table), so every rule reads a distribution name as the kernel it runs."""

    def must_mount_version(self) -> tuple[int, int] | None:
        """The upstream version of the oldest kernel that must mount it (`must_mount_on_kernel`,
        a distribution read as its kernel); None when no answer gives one or it is unknown."""
        wanted = self.workload.must_mount_on_kernel
        if wanted is None:
            return None
        target = mount_target(wanted) or wanted
        return parse_version(self.distribution_kernels.get(target, target))

    def decided(self, setting: str, key: str) -> Typed | None:
        """The value `key` of the change decided for `setting` (`decided("-d su/sw", "su")`:
        bytes), typed; None when the setting keeps its default or its change has no such key.
        A change that gives no typed values (a rule written before they existed) is read from
        its option text: sizes and counts as integers, a bare flag as True."""
        change = self.chosen.get(setting)
        if change is None:
            return None
        if key in change.values:
            return change.values[key]
        text = change.option_texts().get(key)
        if text is None or text == "":
            return None if text is None else True
        try:
            return parse_size(text)
        except ValueError:
            return text

    @property
    def eventual_size(self) -> int | None:
        """The planned size after growth, when an answer gives it."""
        w = self.workload
        if w.eventual_size is not None:
            return w.eventual_size
        if w.growth_factor is not None:
            return int(self.size * w.growth_factor)
        return None

    def storage(self) -> tuple[StorageKind, str]:
        """What the storage is (a storage.kind value) and who says so: the answer, the device's
        own hint, a stripe, a non-rotational queue; else `unknown`, never `single-disk` (a
        rotational flag is set by single disks, RAID LUNs, virtual disks and loop devices)."""
        answered = self.workload.storage.kind
        if answered is not None:
            return answered, "the answers"
        mirror = self.mirror()
        if mirror is not None:
            return ("ssd" if self.device.rotational.value is False else "single-disk"), mirror
        hint = self.device.storage_hint
        kinds: tuple[StorageKind, ...] = get_args(StorageKind)
        hinted = next((k for k in kinds if k == hint.value), None)
        if hinted is not None:
            return hinted, f"{hint.note} ({hint.path}" + (f" = {hint.raw})" if hint.raw
                                                              else ")")
        stripe = self.stripe()
        if stripe is not None:
            return "md-raid" if "md" in stripe[2] else "hardware-raid", f"a stripe from {stripe[2]}"
        if self.device.rotational.value is False:
            return "ssd", "queue/rotational = 0"
        return "unknown", ("rotational = 1, which single disks, hardware RAID LUNs and virtual "
                           "disks all report" if self.device.rotational.value else
                           "the device does not say")

    def mirror(self) -> str | None:
        """What says the device is an md mirror (raid1: every member holds every write, so
        for writes it is one disk), None when it is not one."""
        md = self.device.md
        if md is None or md.level.value != "raid1":
            return None
        return (f"{self.device.name} is md raid1 (md/level): a mirror, where every member "
                "writes every block, so for writes it is one disk")

    def stripe(self) -> tuple[int, int, str] | None:
        """The data stripe (unit bytes, data disks, where from) the filesystem will use: the one
        the proposal gives with -d su=,sw= (from the answers, or from an md array a dm device
        hides), else what mkfs.xfs detects."""
        su, sw = self.decided("-d su/sw", "su"), self.decided("-d su/sw", "sw")
        if isinstance(su, int) and isinstance(sw, int):
            return su, sw, self.chosen["-d su/sw"].source
        g = self.device.stripe
        if g.used_by_mkfs and g.sunit_bytes and g.data_disks:
            return g.sunit_bytes, g.data_disks, g.source
        return None


def mkfs_size(n: int) -> str:
    """Bytes as mkfs.xfs reads them, exactly: 65536 -> '64k', 1 GiB -> '1g', 12345 -> '12345'."""
    for suffix, factor in (("t", TiB), ("g", GiB), ("m", MiB), ("k", KiB)):
        if n and n % factor == 0:
            return f"{n // factor}{suffix}"
    return str(n)


def log_size_text(n: int) -> str:
    """A log size as mkfs.xfs makes and reports it: in whole MiB when it is (its largest is
    2038 MiB, which rounded would read "2 GiB"), else rounded (human_size)."""
    return f"{n // MiB} MiB" if n % MiB == 0 else human_size(n)


def round_up(n: int, multiple: int) -> int:
    return math.ceil(n / multiple) * multiple


def round_down(n: int, multiple: int) -> int:
    return n // multiple * multiple
