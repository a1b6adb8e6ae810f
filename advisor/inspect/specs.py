"""What is read of each /sys/block entry, and how a read becomes a Fact: the fact specs (Device
field, file, Fact class, parser), which of them a scan asking for some fields needs, the reader
that turns one entry's files into Readings (a missing or garbage attribute is a null fact with a
note), and the Facts and Devices made from them without validating trusted values again."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from sys import intern
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from advisor.inspect import parsers
from advisor.models.device import Device, Fact
from advisor.system.sysroot import Folder, SysRoot

T = TypeVar("T")

SYSFS = "sysfs"

# Concrete Fact classes, built once: parametrising a generic model on every call is costly.
FactInt = Fact[int]
FactBool = Fact[bool]
FactStr = Fact[str]


_FACT_FIELDS = frozenset(Fact.model_fields)
_new = object.__new__
_set = object.__setattr__


def make_fact(cls: type[Fact[T]], value: T | None, source: str, path: str | None,
              raw: str | None, note: str | None) -> Fact[T]:
    """A Fact from values already parsed and typed, built the way model_construct does but with
    one shared fields-set: a SAN host has ~150,000 facts, and a per-instance set (700 bytes) and
    model_construct's Python loop (6 us) would double the memory and the time of a scan.
    tests/inspect/test_parsers.py checks these equal validated Facts."""
    fact = _new(cls)
    _set(fact, "__dict__", {"value": value, "source": source, "path": path, "raw": raw,
                            "note": note})
    _set(fact, "__pydantic_fields_set__", _FACT_FIELDS)
    _set(fact, "__pydantic_extra__", None)
    _set(fact, "__pydantic_private__", None)
    return fact


def _device_defaults() -> tuple[dict[str, Any], dict[str, Callable[[], Any]], frozenset[str]]:
    """Every Device field in model order with its default, which instances may share (None,
    plain values, frozen models; None for a required field); the factories of the defaults
    that may not be shared (lists, models that are not frozen); the required fields."""
    template: dict[str, Any] = {}
    made: dict[str, Callable[[], Any]] = {}
    required: set[str] = set()
    for name, info in Device.model_fields.items():
        template[name] = None
        if info.is_required():
            required.add(name)
        elif info.default_factory is not None:
            made[name] = info.default_factory  # type: ignore[assignment]  # takes no argument
        elif isinstance(info.default, BaseModel) and not info.default.model_config.get("frozen"):
            made[name] = functools.partial(info.default.model_copy, deep=True)
        else:
            template[name] = info.default
    return template, made, frozenset(required)


_DEVICE_TEMPLATE, _DEVICE_MADE, _DEVICE_REQUIRED = _device_defaults()


def make_device(fields: dict[str, Any]) -> Device:
    """A Device from the scan's own fields, already typed (Facts, lists of names, a Usage), built
    as make_fact builds a Fact: validating each again would cost a tenth of a scan's time.
    Fields not given get Device's defaults (frozen ones shared); the fields-set is the keys
    given, as Device(**fields) would have it. tests/inspect/test_fixture_hosts.py checks these
    equal validated Devices."""
    keys = fields.keys()
    if not keys <= _DEVICE_TEMPLATE.keys() or not keys >= _DEVICE_REQUIRED:
        unknown = sorted(keys - _DEVICE_TEMPLATE.keys())
        raise TypeError(f"not Device fields: {unknown}" if unknown
                        else f"a Device needs its {', '.join(sorted(_DEVICE_REQUIRED - keys))}")
    values = _DEVICE_TEMPLATE.copy()  # model order, whatever order the fields came in
    values.update(fields)
    for name, factory in _DEVICE_MADE.items():
        if name not in fields:
            values[name] = factory()
    device = _new(Device)
    _set(device, "__dict__", values)
    _set(device, "__pydantic_fields_set__", set(keys))
    _set(device, "__pydantic_extra__", None)
    _set(device, "__pydantic_private__", None)
    return device


class Reading(Generic[T]):
    """A fact as the scan holds it until its device is written: a Fact's values, with its path
    kept as the folder and the file in it (the folder is the device's own string, the file the
    spec's), and without a model's dict. A scan holds every device's facts until the last
    device is made (what a device inherits comes from the devices below it): on a host with
    100,000 devices, Facts and their path strings would be most of the scan's memory."""

    __slots__ = ("cls", "file", "folder", "note", "raw", "source", "value")

    def __init__(self, cls: type[Fact[T]], value: T | None, source: str, folder: str | None,
                 file: str | None, raw: str | None, note: str | None) -> None:
        self.cls = cls
        self.value = value
        self.source = source
        self.folder = folder
        #: None: the folder is the whole path.
        self.file = file
        self.raw = raw
        self.note = note

    @property
    def path(self) -> str | None:
        return self.folder if self.file is None else f"{self.folder}/{self.file}"

    def fact(self) -> Fact[T]:
        """The Fact, as make_fact builds it (inlined: it runs for every fact of a scan)."""
        fact = _new(self.cls)
        _set(fact, "__dict__", {
            "value": self.value, "source": self.source,
            "path": self.folder if self.file is None else f"{self.folder}/{self.file}",
            "raw": self.raw, "note": self.note})
        _set(fact, "__pydantic_fields_set__", _FACT_FIELDS)
        _set(fact, "__pydantic_extra__", None)
        _set(fact, "__pydantic_private__", None)
        return fact


#: The Fact classes a Held device's layout names by index (the same in both processes of a scan).
HELD_CLASSES: tuple[type[Fact[Any]], ...] = (FactInt, FactBool, FactStr)
_HELD_INDEX = {cls: i for i, cls in enumerate(HELD_CLASSES)}


def fact_tuple(fact: Fact[Any] | Reading[Any],
               classes: tuple[type[Fact[Any]], ...] = HELD_CLASSES) -> tuple[Any, ...]:
    """A Fact (or a Reading, as its Fact) as plain data marshal carries: (its class's index in
    `classes`, value, source, path, raw, note); make_fact(classes[t[0]], *t[1:]) makes it
    again."""
    if type(fact) is Reading:
        return (classes.index(fact.cls), fact.value, fact.source, fact.path, fact.raw,
                fact.note)
    d = fact.__dict__
    return (classes.index(type(fact)), d["value"], d["source"], d["path"], d["raw"], d["note"])

#: (field, index in HELD_CLASSES, source, file (None: the folder is the path), slot of the
#: folder, slot of the value, whether it has a note) of each fact a Held device keeps in its
#: list: the value, then its raw text, then its note when it has one.
HeldEntry = tuple[str, int, str, str | None, int, int, bool]


class Layout:
    """Which facts a Held device keeps in its list, and where: one object for every device read
    the same way (a SAN host's paths share one, its multipath devices another)."""

    __slots__ = ("entries", "index")

    def __init__(self, entries: tuple[HeldEntry, ...]) -> None:
        #: Plain data (marshal carries it from the child of a two-process scan).
        self.entries = entries
        self.index = {e[0]: e for e in entries}


_LAYOUTS: dict[tuple[HeldEntry, ...], Layout] = {}


def layout_of(entries: tuple[HeldEntry, ...]) -> Layout:
    """The one Layout of these entries."""
    layout = _LAYOUTS.get(entries)
    if layout is None:
        layout = _LAYOUTS[entries] = Layout(entries)
    return layout


class Held(dict[str, Any]):
    """A device's fields as a scan holds them from its read until its device is made: its facts
    read (Readings) as one list of their values, raw texts, notes and folders, laid out as
    `layout` says; every other field (names, links, notes, Facts, models) in the dict itself.
    A scan holds every device until the last is made (what a device inherits comes from the
    devices below it): a Reading and a dict entry per fact came to 4.5 KB a device, 450 MB on
    a host with 100,000 devices. A fact read by key (the stacking pass reads the devices below)
    is given as a Reading; `fields()` gives them all as Facts."""

    __slots__ = ("layout", "packed")

    layout: Layout
    packed: tuple[Any, ...]

    def __missing__(self, key: str) -> Reading[Any]:
        entry = self.layout.index.get(key)
        if entry is None:
            raise KeyError(key)
        _, cls, source, file, folder, at, noted = entry
        packed = self.packed
        return Reading(HELD_CLASSES[cls], packed[at], source, packed[folder], file,
                       packed[at + 1], packed[at + 2] if noted else None)

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self.layout.index

    def get(self, key: str, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        return self.__missing__(key) if key in self.layout.index else default

    def fields(self) -> dict[str, Any]:
        """Every field, each fact as a Fact (as Reading.fact makes it)."""
        packed = self.packed
        out: dict[str, Any] = {}
        for key, cls, source, file, folder, at, noted in self.layout.entries:
            fact = _new(HELD_CLASSES[cls])
            _set(fact, "__dict__", {
                "value": packed[at], "source": source,
                "path": packed[folder] if file is None else f"{packed[folder]}/{file}",
                "raw": packed[at + 1], "note": packed[at + 2] if noted else None})
            _set(fact, "__pydantic_fields_set__", _FACT_FIELDS)
            _set(fact, "__pydantic_extra__", None)
            _set(fact, "__pydantic_private__", None)
            out[key] = fact
        for key, value in self.items():
            out[key] = value.fact() if type(value) is Reading else value
        return out


def held(fields: dict[str, Any]) -> Held:
    """`fields` (a device's, as read) as a Held device."""
    out = Held()
    entries: list[HeldEntry] = []
    packed: list[Any] = []
    folders: dict[str, int] = {}
    index = _HELD_INDEX
    for key, value in fields.items():
        if type(value) is Reading and value.folder is not None:
            folder = folders.get(value.folder)
            if folder is None:
                folder = folders[value.folder] = len(packed)
                packed.append(value.folder)
            noted = value.note is not None
            entries.append((key, index[value.cls], value.source, value.file, folder, len(packed),
                            noted))
            packed.append(value.value)
            packed.append(value.raw)
            if noted:
                packed.append(value.note)
        else:
            dict.__setitem__(out, key, value)
    out.layout = layout_of(tuple(entries))
    out.packed = tuple(packed)  # exact: a list keeps room to grow
    return out


def reading(cls: type[Fact[T]], value: T | None, source: str, path: str | None,
            raw: str | None, note: str | None) -> Reading[T]:
    """A Reading of a fact whose path is made whole (make_fact's arguments)."""
    return Reading(cls, value, source, path, None, raw, note)


@dataclass
class Reader:
    """Reads one attribute into a Reading, collecting notes about garbage values for the
    device."""

    root: SysRoot
    notes: list[str] = field(default_factory=list)

    def parsed(self, cls: type[Fact[T]], base: str, rel: str, raw: str | None,
               parse: Callable[[str], T], optional: bool = False) -> Reading[T]:
        """`optional`: an empty file is as good as a missing one (identity strings)."""
        if raw is None or (optional and not raw):
            return Reading(cls, None, SYSFS, base, rel, None, "missing")
        try:
            value = parse(raw)
        except ValueError as err:
            self.notes.append(f"{base}/{rel}: unparsable ({err})")
            return Reading(cls, None, SYSFS, base, rel, raw[:200], f"unparsable: {err}")
        return Reading(cls, value, SYSFS, base, rel, raw, None)

    def batch(self, base: str, specs: list[Spec], folder: Folder | None = None
              ) -> dict[str, Reading[Any]]:
        """Readings for (field, file under base, class, parser, optional) specs, read in one go
        (from `folder`, base opened already, when given). The common case (present and
        parsable) is inlined: this loop runs ~120,000 times on a SAN host."""
        names = [spec[1] for spec in specs]
        raws = self.root.read_many(base, names) if folder is None else folder.read_many(names)
        out: dict[str, Reading[Any]] = {}
        for (attr, rel, cls, parse, optional), raw in zip(specs, raws, strict=True):
            if raw:
                # Interned, and parsed once a scan: most values repeat from device to device
                # ("0", "512", "none"), and a scan keeps every one until its last device is
                # written (an int or a string parsed out is 30-60 bytes each time).
                raw = intern(raw)
                known = _PARSED.setdefault(parse, {})
                value = known.get(raw, _UNPARSED)
                if value is _UNPARSED:
                    try:
                        value = parse(raw)
                    except ValueError:
                        out[attr] = self.parsed(cls, base, rel, raw, parse, optional)
                        continue
                    if len(known) < _PARSED_MAX:
                        known[raw] = value
                out[attr] = Reading(cls, value, SYSFS, base, rel, raw, None)
                continue
            out[attr] = self.parsed(cls, base, rel, raw, parse, optional)
        return out


#: The values parsed so far, by parser and raw text (parsers are pure, their values immutable).
#: Capped: a host's unique values (sizes, WWIDs) would otherwise be kept twice.
_PARSED: dict[Callable[[str], Any], dict[str, Any]] = {}
_PARSED_MAX = 4096
_UNPARSED = object()


Spec = tuple[str, str, type[Fact[Any]], Callable[[str], Any], bool]

#: Queue attributes: Device field, file under queue/, parser. Partitions share their disk's.
QUEUE: tuple[tuple[str, str, type[Fact[Any]], Callable[[str], Any]], ...] = (
    ("rotational", "rotational", FactBool, parsers.parse_flag),
    ("nr_requests", "nr_requests", FactInt, parsers.parse_int),
    ("write_cache", "write_cache", FactStr, parsers.parse_write_cache),
    ("fua", "fua", FactBool, parsers.parse_flag),
    ("dax", "dax", FactBool, parsers.parse_flag),
    ("zoned", "zoned", FactStr, parsers.parse_zoned),
    ("scheduler", "scheduler", FactStr, parsers.parse_scheduler),
    ("discard_granularity", "discard_granularity", FactInt, parsers.parse_int),
    ("discard_max_bytes", "discard_max_bytes", FactInt, parsers.parse_int),
    ("logical_sector", "logical_block_size", FactInt, parsers.parse_int),
    ("physical_sector", "physical_block_size", FactInt, parsers.parse_int),
    ("min_io", "minimum_io_size", FactInt, parsers.parse_int),
    ("opt_io", "optimal_io_size", FactInt, parsers.parse_int),
)


#: What a whole device and a partition are both asked.
_EVERY_ENTRY: list[Spec] = [
    ("maj_min", "dev", FactStr, parsers.parse_maj_min, False),
    ("size_bytes", "size", FactInt, parsers.parse_sectors, False),
    ("read_only", "ro", FactBool, parsers.parse_flag, False),
    ("alignment_offset", "alignment_offset", FactInt, parsers.parse_int, False),
]
#: What every /sys/block entry is asked.
COMMON: list[Spec] = [
    *_EVERY_ENTRY,
    ("removable", "removable", FactBool, parsers.parse_flag, False),
    *((attr, f"queue/{fname}", cls, parse, False) for attr, fname, cls, parse in QUEUE),
]
#: What a partition is asked (its queue is its disk's).
PARTITION: list[Spec] = [
    *_EVERY_ENTRY,
    ("partition_start", "start", FactInt, parsers.parse_sectors, False),
]
DM: list[Spec] = [
    ("dm_name", "dm/name", FactStr, parsers.parse_word, True),
    ("dm_uuid", "dm/uuid", FactStr, parsers.parse_word, True),
]
MD: list[Spec] = [
    ("level", "md/level", FactStr, parsers.parse_word, False),
    ("chunk_bytes", "md/chunk_size", FactInt, parsers.parse_int, False),
    ("raid_disks", "md/raid_disks", FactInt, parsers.parse_int, False),
    ("layout", "md/layout", FactInt, parsers.parse_int, False),
]


#: Device fields every scan fills, whatever was asked: who the device is and where it sits in the
#: tree (lsblk reads these for any column set too), and the notes.
IDENTITY = frozenset({"name", "display_name", "path", "maj_min", "kind", "dm_kind", "transport",
                      "dm_name", "dm_uuid", "parents", "children", "holders", "notes"})
#: Read whatever was asked: sizes and device numbers decide which devices are listed at all.
_ALWAYS_READ = frozenset({"maj_min", "size_bytes", "dm_name", "dm_uuid"})
#: Derived fields and the facts they are derived from.
_DERIVED_FROM: dict[str, frozenset[str]] = {
    "stripe": frozenset({"min_io", "opt_io", "physical_sector", "logical_sector", "md"}),
    "storage_hint": frozenset({"model"}),
    "discard_below": frozenset({"discard_max_bytes"}),
}
#: Fields the libblkid/udev probe fills or corrects: without them the probe is not run.
PROBED = frozenset({"usage", "model", "serial", "wwn"})


def fields_needed(fields: frozenset[str] | None) -> frozenset[str] | None:
    """What a scan that must fill `fields` (Device field names; None: all) has to read."""
    if fields is None:
        return None
    needed = set(fields) | IDENTITY | _ALWAYS_READ
    for name in fields:
        needed |= _DERIVED_FROM.get(name, frozenset())
    return frozenset(needed)


def wanted(specs: list[Spec], needed: frozenset[str] | None) -> list[Spec]:
    """A new list (callers extend it) of the specs whose field is needed."""
    return list(specs) if needed is None else [s for s in specs if s[0] in needed]


def identity_specs(transport: str | None) -> list[Spec]:
    """Where the kernel puts model, serial and WWID depends on the driver: asking only there
    saves thousands of failed opens on a SAN host."""
    specs: list[Spec] = [
        ("queue_depth", "device/queue_depth", FactInt, parsers.parse_int, False),
        ("model", "device/model", FactStr, parsers.parse_word, True),
        ("wwn", "wwid" if transport == "nvme" else "device/wwid", FactStr, parsers.parse_word,
         True),
    ]
    serial_at = {"nvme": "device/serial", "virtio": "serial"}.get(transport or "")
    if serial_at:
        specs.append(("serial", serial_at, FactStr, parsers.parse_word, True))
    return specs

