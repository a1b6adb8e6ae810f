"""The stacking pass: devices built on devices (partitions on disks, md arrays and dm devices on
either), as parents, children and holders. Parents come before children, so what a device
inherits from below (the stripe geometry an md array passes up, thin provisioning, the discards
a dm layer drops, the storage a dm device sits on) is known when it is made."""

from __future__ import annotations

import array
import bisect
import heapq
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from advisor.inspect import geometry
from advisor.inspect.specs import (
    HELD_CLASSES,
    SYSFS,
    FactInt,
    FactStr,
    Reading,
    fact_tuple,
    make_fact,
)
from advisor.inspect.sysblock import kind_of
from advisor.models.device import Fact, MdInfo, StripeGeometry
from advisor.system.spill import Chunks, Store, sorted_strings
from advisor.system.sysroot import SysRoot


def node_record(fields: dict[str, Any]) -> tuple[Any, ...]:
    """What Graph.add keeps of a device, as plain data (marshal carries it: each piece's records
    are kept compressed until every piece is read, parallel.summarize): its name, display name,
    path, device number, kind, parents, children and holders; a thin pool's dm uuid (None
    otherwise); discard_max_bytes' value as a 1-tuple (None: not read); its storage hint as a
    Reading's values (class index, value, source, folder, file, raw, note; None: not read); thin
    provisioning as a Fact's (class index, value, source, path, raw, note) and an md array's
    facts as {field: that}, None when it has none. (A hint given as a Fact is the Reading of its
    path as the folder: the same Fact again.)"""
    uuid = fields.get("dm_uuid")
    discard = fields["discard_max_bytes"].value if "discard_max_bytes" in fields else _SKIP
    hint = fields.get("storage_hint")
    if hint is not None and type(hint) is not Reading:
        cls, value, source, path, raw, note = fact_tuple(hint)
        hint = Reading(HELD_CLASSES[cls], value, source, path, None, raw, note)
    thin, md = fields.get("thin"), fields.get("md")
    return (fields["name"], fields["display_name"], fields["path"], fields["maj_min"],
            fields["kind"], list(fields["parents"]), list(fields["children"]),
            list(fields["holders"]),
            uuid if uuid is not None and uuid.endswith("-tpool") else None,  # what is read of it
            None if discard is _SKIP else (discard,),
            None if hint is None else (HELD_CLASSES.index(hint.cls), hint.value, hint.source,
                                       hint.folder, hint.file, hint.raw, hint.note),
            None if thin is None else fact_tuple(thin),
            None if md is None else {k: fact_tuple(getattr(md, k)) for k in MdInfo.model_fields})


_SKIP = object()


def _fact(values: tuple[Any, ...]) -> Fact[Any]:
    return make_fact(HELD_CLASSES[values[0]], *values[1:])


#: Graph's columns (those add() fills) and their kinds.
_COLUMNS = {"names": "s", "kinds": "B", "flags": "B", "maj_min": "i", "discard": "q",
            "hints": "H", "parent_count": "I", "holder_count": "I", "link_end": "I",
            "links": "i", "unresolved": "s"}


def _bisect(names: Sequence[str], name: str) -> int:
    """bisect_left of a sorted list of names, which may be a Chunks (one chunk read)."""
    return names.bisect_left(name) if type(names) is Chunks else bisect.bisect_left(names, name)


def _extra_data(value: Any) -> Any:
    """A value of Graph.extra as plain data marshal carries (it may be in the scan's temporary
    file): a string as itself (a dm name, a path: most of them), a Reading, a Fact, an MdInfo,
    or another value marshal carries, tagged."""
    if type(value) is str:
        return value
    if type(value) is Reading:
        return ("r", HELD_CLASSES.index(value.cls), value.value, value.source, value.folder,
                value.file, value.raw, value.note)
    if isinstance(value, Fact):
        return ("f", fact_tuple(value))
    if type(value) is MdInfo:
        return ("m", {k: fact_tuple(getattr(value, k)) for k in MdInfo.model_fields})
    return ("=", value)


def _extra_value(data: Any) -> Any:
    """_extra_data's value made again."""
    if type(data) is str:
        return data
    tag = data[0]
    if tag == "=":
        return data[1]
    if tag == "r":
        return Reading(HELD_CLASSES[data[1]], *data[2:])
    if tag == "f":
        return _fact(data[1])
    return MdInfo(**{k: _fact(v) for k, v in data[1].items()})


#: Sentinels of Graph's int columns (maj_min, discard_max_bytes): the device has no such field,
#: or has it as None; any other value a column cannot hold is in Graph.extra.
_ABSENT, _NONE = -1, -2
#: What each int column holds besides its sentinels (maj_min: a device number as major << 20 |
#: minor, the kernel's layout, in 31 bits; discard_max_bytes: 62).
_LIMIT = {"maj_min": 1 << 31, "discard_max_bytes": 1 << 62}
#: Graph.flags: another listed device is built on it (it passes up to them); its path is
#: /dev/mapper/DISPLAY_NAME (a dm device's); its path is in Graph.extra.
BELOW, MAPPER_PATH, OWN_PATH = 1, 2, 4
#: Graph.hints: no storage hint; one in Graph.extra (not one of the shared templates).
_NO_HINT, _OWN_HINT = 0, 0xFFFF
#: Graph.holders: the holders are not the tail of the children (in Graph.extra).
_HOLDERS_APART = 0xFFFFFFFF

#: The kinds and storage hints Graphs share, by index (the hints that say no more than their
#: class, value, source and note about the device's own folder: most of a SAN host's).
_KINDS: list[str] = []
_HINTS: list[tuple[Any, ...]] = []
_HINT_INDEX: dict[tuple[Any, ...], int] = {}


def _kind_index(kind: str) -> int:
    try:
        return _KINDS.index(kind)
    except ValueError:
        _KINDS.append(kind)
        return len(_KINDS) - 1


class Graph:
    """What the devices around a device read of it (the stacking pass, the order devices are
    made in, the usage tables), kept column by column from the read until the last device is
    made, while the rest of each device's facts waits packed: on a host with 100,000 devices a
    Python object per device and per link would be most of the scan's memory.

    Device `i` is the i-th device read (sysfs order, each disk's partitions after it). Its name
    is names[i] (the string of the /sys/block listing when it is an entry of it, so held once);
    its kind, device number, discard_max_bytes, storage hint and flags are an int each; its
    links (parents, then children, whose tail is its holders) a run of `links` ending at
    link_end[i]. Fields few devices have (a dm device's display name, a thin pool's uuid, an
    md array's geometry, thin provisioning, what a device inherits, a value a column cannot
    hold) are in `extra`, by field and device.

    A Graph is built a device at a time in read order (add), its links naming devices by their
    place in the /sys/block listing (or, for a partition, by name in `unresolved`) until
    resolve() makes them places in `names` and drops those not listed (an empty or excluded
    device), as the tree shows them. Read like a mapping of names to devices (graph[name] is a
    Node, `name in graph`).

    Every list and map of it is a `store`'s (advisor.system.spill): past a few chunks of
    devices, what is not in use is in the scan's temporary file, so a host of 200,000 devices
    takes the memory of one of 10,000."""

    def __init__(self, entries: Sequence[str], store: Store | None = None) -> None:
        self.store = Store() if store is None else store
        #: Whether the lists are the store's Chunks (past its memory cap: a host of thousands
        #: of devices) or arrays and lists (all in memory, as fast as Python reads them).
        self.chunked = len(entries) > self.store.cap
        #: The /sys/block entries read, sorted (a name is found by bisection, not a dict of
        #: 100,000 names and ints), or by a dict when they are not.
        self.entries = entries
        # Each column: an array, bytearray or list, or a Chunks of the same (see chunked).
        self.names: Any = self._list("s")
        self.kinds: Any = self._list("B")
        self.flags: Any = self._list("B")
        self.maj_min: Any = self._list("i")
        self.discard: Any = self._list("q")
        self.hints: Any = self._list("H")
        self.parent_count: Any = self._list("I")
        self.holder_count: Any = self._list("I")
        self.link_end: Any = self._list("I")
        self.links: Any = self._list("i")
        self.unresolved: Any = self._list("s")
        #: Fields few devices have, by device: dicts, or the store's Sparse maps when chunked.
        self.extra: dict[str, Any] = {}
        #: After resolve(): each /sys/block entry's device (-1: none); the partitions as
        #: "NAME\0PLACE", sorted (found by bisection).
        self.at_entry: Any = self._list("i")
        self.partitions: Sequence[str] = []
        #: The listing's next entry, as read order follows it (add finds most names there).
        self._next = 0
        self._index: dict[str, int] | None = None
        if any(a >= b for a, b in itertools.pairwise(self.entries)):
            self._index = {name: k for k, name in enumerate(self.entries)}

    # ---- building ----

    def _list(self, kind: str, items: Iterable[Any] = ()) -> Any:
        """A new list of `kind` (an array typecode, or "s"): the store's Chunks when chunked."""
        if self.chunked:
            return self.store.chunks(kind, items)
        if kind == "s":
            return list(items)
        return bytearray(items) if kind == "B" else array.array(kind, items)

    def _next_place(self) -> int:
        """The next device's place; every list chunked first when it is past the cap."""
        i = len(self.names)
        if i == self.store.cap and not self.chunked:
            self._chunk_all()
        return i

    def _chunk_all(self) -> None:
        """Every list and map into the store's Chunks and Sparse maps: the devices read (a
        listing's partitions) have passed the store's memory cap."""
        self.chunked = True
        for attr, kind in _COLUMNS.items():
            setattr(self, attr, self._list(kind, getattr(self, attr)))
        for key, values in self.extra.items():
            sparse = self.store.sparse(_extra_data, _extra_value)
            for i in sorted(values):
                sparse[i] = values[i]
            self.extra[key] = sparse

    def _entry(self, name: str) -> int:
        """The place of `name` in the /sys/block listing; -1 when it is not an entry."""
        if self._index is not None:
            return self._index.get(name, -1)
        entries = self.entries
        k = self._next
        if k < len(entries) and entries[k] == name:
            return k
        k = _bisect(entries, name)
        return k if k < len(entries) and entries[k] == name else -1

    def _link(self, name: str) -> int:
        k = self._entry(name)
        if k >= 0:
            return k
        self.unresolved.append(name)
        return -len(self.unresolved)

    def _set_extra(self, key: str, i: int, value: Any) -> None:
        values = self.extra.get(key)
        if values is None:
            values = self.extra[key] = self.store.sparse(_extra_data, _extra_value) \
                if self.chunked else {}
        values[i] = value

    def add(self, record: tuple[Any, ...]) -> None:
        """A device read (its node_record) as the next device."""
        (name, display, path, devno, kind, parents, children, holders, pool, discard, hint, thin,
         md) = record
        i = self._next_place()
        k = self._entry(name)
        if k >= 0:
            self._next = k + 1
        self.names.append(name)
        self.kinds.append(_kind_index(kind))
        flags = 0
        if display != name:
            self._set_extra("display_name", i, display)
        if path == f"/dev/mapper/{display}" and path != f"/dev/{name}":
            flags |= MAPPER_PATH
        elif path != f"/dev/{name}":
            flags |= OWN_PATH
            self._set_extra("path", i, path)
        self.flags.append(flags)
        self.maj_min.append(self._column(i, "maj_min", devno, _devno(devno)))
        if discard is None:
            self.discard.append(_ABSENT)
        else:
            value = discard[0]
            self.discard.append(self._column(i, "discard_max_bytes", value,
                                             value if type(value) is int else None))
        self.hints.append(_NO_HINT)
        if hint is not None:
            self._add_hint(i, *hint)
        if pool is not None:
            self._set_extra("dm_uuid", i, pool)
        if thin is not None:
            self._set_extra("thin", i, _fact(thin))
        if md is not None:
            self._set_extra("md", i, MdInfo(**{k: _fact(v) for k, v in md.items()}))
        self._add_links(i, parents, children, holders)

    def _add_links(self, i: int, parents: list[str], children: list[str],
                   holders: list[str]) -> None:
        links = self.links
        links.extend([self._link(p) for p in parents])
        links.extend([self._link(c) for c in children])
        self.parent_count.append(len(parents))
        if children[len(children) - len(holders):] == holders:
            self.holder_count.append(len(holders))
        else:
            self.holder_count.append(_HOLDERS_APART)
            self._set_extra("holders", i, [self._link(h) for h in holders])
        self.link_end.append(len(links))

    def _column(self, i: int, key: str, value: Any, fits: int | None) -> int:
        """The int a column holds for `value`: itself, a sentinel, or _ABSENT with the value in
        extra (what the column cannot say)."""
        if value is None:
            return _NONE
        if fits is not None and 0 <= fits < _LIMIT[key]:
            return fits
        self._set_extra(key, i, value)
        return _ABSENT

    def resolve(self) -> None:
        """The links as places in `names`, each device's parents, children and holders cut to
        those listed (a holder or slave that is excluded or empty is not shown), and those
        another is built on marked BELOW."""
        self.at_entry = at = self._list("i", itertools.repeat(-1, len(self.entries)))
        self.partitions = sorted_strings(self._places(at), self.store)
        named = self.unresolved

        def place(k: int) -> int:
            return at[k] if k >= 0 else self._partition(named[-k - 1])

        links, ends, parents, holders = self.links, self.link_end, self.parent_count, \
            self.holder_count
        apart = self.extra.get("holders")
        new = self._list("i")
        start = 0
        for i, end in enumerate(ends):
            found = [place(k) for k in links[start:start + parents[i]]]
            kept = [j for j in found if j >= 0]
            for j in kept:
                self.flags[j] |= BELOW
            new.extend(kept)
            parents[i] = len(kept)
            children = [j for j in map(place, links[start + len(found):end]) if j >= 0]
            new.extend(children)
            if holders[i] == _HOLDERS_APART:
                assert apart is not None
                apart[i] = [j for j in map(place, apart[i]) if j >= 0]
            else:
                holders[i] = sum(1 for k in links[end - holders[i]:end] if place(k) >= 0)
            start = end
            ends[i] = len(new)
        self.links = new
        self.unresolved = self._list("s")

    def _places(self, at: Any) -> Iterator[str]:
        """Each device's place, in one pass: into `at` by its /sys/block entry; as "NAME\0PLACE"
        (what Graph.partitions holds, sorted) for one that is not an entry, a partition."""
        self._next = 0
        for i, name in enumerate(self.names):
            k = self._entry(name)
            if k >= 0:
                at[k] = i
                self._next = k + 1
            else:
                yield f"{name}\0{i}"

    def _partition(self, name: str) -> int:
        """The place of the partition `name`; -1 when it is not one."""
        key = f"{name}\0"
        k = _bisect(self.partitions, key)
        if k < len(self.partitions) and self.partitions[k].startswith(key):
            return int(self.partitions[k][len(key):])
        return -1

    def set_hint(self, i: int, hint: Any) -> None:
        """Device i's storage hint: a template's index when it is one (made again when read),
        itself in extra otherwise."""
        if type(hint) is Reading and hint.file is None and hint.raw is None \
                and self._template(i, (hint.cls, hint.value, hint.source, hint.note), hint.folder):
            return
        self.hints[i] = _OWN_HINT
        self._set_extra("storage_hint", i, hint)

    def _add_hint(self, i: int, cls: int, value: Any, source: str, folder: str | None,
                  file: str | None, raw: str | None, note: str | None) -> None:
        """set_hint of the Reading these are the values of, made only when it is no template."""
        if file is not None or raw is not None or not self._template(
                i, (HELD_CLASSES[cls], value, source, note), folder):
            self.set_hint(i, Reading(HELD_CLASSES[cls], value, source, folder, file, raw, note))

    def _template(self, i: int, key: tuple[Any, ...], folder: str | None) -> bool:
        """Device i's hint as the template `key` (class, value, source, note), when its folder
        is the device's own and the template is one of the 64 shared: whether it is."""
        if folder != f"sys/block/{self.names[i]}":
            return False
        found = _HINT_INDEX.get(key)
        if found is None:
            if len(_HINTS) >= 64:
                return False
            _HINTS.append(key)
            found = _HINT_INDEX[key] = len(_HINTS)
        self.hints[i] = found
        own = self.extra.get("storage_hint")
        if own is not None:
            own.pop(i, None)
        return True

    # ---- reading ----

    def index(self, name: str) -> int:
        """The place of the device called `name`; -1 when none is (after resolve)."""
        k = self._entry(name)
        if k >= 0:
            place: int = self.at_entry[k]
            return place
        return self._partition(name)

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: object) -> bool:
        return type(name) is str and self.index(name) >= 0

    def __getitem__(self, name: str) -> Node:
        i = self.index(name)
        if i < 0:
            raise KeyError(name)
        return Node(self, i)

    def get(self, name: str) -> Node | None:
        i = self.index(name)
        return None if i < 0 else Node(self, i)

    def nodes(self) -> Nodes:
        """Every device, as Nodes, in read order (each made as it is reached)."""
        return Nodes(self)

    def parents_of(self, i: int) -> Sequence[int]:
        start = self.link_end[i - 1] if i else 0
        found: Sequence[int] = self.links[start:start + self.parent_count[i]]
        return found

    def children_of(self, i: int) -> Sequence[int]:
        start = self.link_end[i - 1] if i else 0
        found: Sequence[int] = self.links[start + self.parent_count[i]:self.link_end[i]]
        return found

    def holders_of(self, i: int) -> Sequence[int]:
        count = self.holder_count[i]
        if count == _HOLDERS_APART:
            held: list[int] = self.extra["holders"][i]
            return held
        end = self.link_end[i]
        found: Sequence[int] = self.links[end - count:end]
        return found

    def order(self) -> Sequence[int]:
        """Parents before children, otherwise in sysfs order (read order); a cycle in a broken
        tree keeps the rest in sysfs order. Those with no parent are taken in order as they
        come, so the heap holds only those whose last parent has been taken."""
        count = len(self.names)
        waiting = self._list("I", self.parent_count)
        parents = self.parent_count
        done = self._list("B", itertools.repeat(0, count))
        order = self._list("i")
        later: list[int] = []
        first = 0
        while True:
            while first < count and parents[first]:
                first += 1
            if later and (first >= count or later[0] < first):
                i = heapq.heappop(later)
            elif first < count:
                i = first
                first += 1
            else:
                break
            done[i] = 1
            order.append(i)
            for child in self.children_of(i):
                if i in self.parents_of(child):
                    waiting[child] -= 1
                    if waiting[child] == 0:
                        heapq.heappush(later, child)
        if len(order) < count:
            order.extend(i for i in range(count) if not done[i])
        made: Sequence[int] = order
        return made


def _devno(text: Any) -> int | None:
    """A device number "MAJOR:MINOR" as one int (major << 20 | minor), when it says exactly that
    and fits in maj_min's column."""
    if type(text) is not str:
        return None
    major, sep, minor = text.partition(":")
    if not (sep and major.isdigit() and minor.isdigit() and major.isascii() and minor.isascii()
            and len(major) < 6 and len(minor) < 9):
        return None
    devno = int(major) << 20 | int(minor)
    return devno if int(major) < 1 << 11 and int(minor) < 1 << 20 \
        and _format_devno(devno) == text else None


class Nodes:
    """A Graph's devices in read order, each a Node made when reached (the usage tables walk
    them a few times)."""

    __slots__ = ("graph",)

    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    def __len__(self) -> int:
        return len(self.graph.names)

    def __iter__(self) -> Iterator[Node]:
        graph = self.graph
        return (Node(graph, i) for i in range(len(graph.names)))


class Node:
    """Device `i` of a Graph, read like the device's fields: node["kind"], node.get("md"),
    "thin" in node (a field the device does not have is not in it); discard_max_bytes is its
    value alone (an int, not a Fact: all that is read of it). Made when needed, held by
    nothing: the Graph holds the device."""

    __slots__ = ("graph", "i")

    #: The fields every device has, and those some have (in Graph.extra or a column).
    _ALWAYS = frozenset({"name", "display_name", "path", "maj_min", "kind", "parents",
                         "children", "holders"})

    def __init__(self, graph: Graph, i: int) -> None:
        self.graph = graph
        self.i = i

    @property
    def name(self) -> str:
        name: str = self.graph.names[self.i]
        return name

    @property
    def display_name(self) -> str:
        graph, i = self.graph, self.i
        names = graph.extra.get("display_name")
        name: str = graph.names[i]
        return name if names is None else names.get(i, name)

    @property
    def path(self) -> str:
        flags = self.graph.flags[self.i]
        if flags & MAPPER_PATH:
            return f"/dev/mapper/{self.display_name}"
        if flags & OWN_PATH:
            path: str = self.graph.extra["path"][self.i]
            return path
        return f"/dev/{self.name}"

    @property
    def kind(self) -> str:
        at: int = self.graph.kinds[self.i]
        return _KINDS[at]

    @property
    def below(self) -> bool:
        """Whether a listed device is built on it: it passes up to it."""
        return bool(self.graph.flags[self.i] & BELOW)

    @property
    def maj_min(self) -> str | None:
        value: str | None = self._int("maj_min", self.graph.maj_min[self.i], _format_devno)
        return value

    @property
    def discard_max_bytes(self) -> int | None:
        value: int | None = self._int("discard_max_bytes", self.graph.discard[self.i], int)
        return value

    def _int(self, key: str, value: int, made: Callable[[int], Any]) -> Any:
        if value >= 0:
            return made(value)
        if value == _NONE:
            return None
        values = self.graph.extra.get(key)
        if values is not None and self.i in values:
            return values[self.i]
        raise AttributeError(key)

    @property
    def parents(self) -> tuple[str, ...]:
        names = self.graph.names
        return tuple(names[j] for j in self.graph.parents_of(self.i))

    @property
    def children(self) -> tuple[str, ...]:
        names = self.graph.names
        return tuple(names[j] for j in self.graph.children_of(self.i))

    @property
    def holders(self) -> tuple[str, ...]:
        names = self.graph.names
        return tuple(names[j] for j in self.graph.holders_of(self.i))

    @property
    def storage_hint(self) -> Any:
        """Its storage hint: as read (a Reading), passed up (a Fact), or made again from its
        template (class, value, source and note about the device's own folder)."""
        at = self.graph.hints[self.i]
        if at == _NO_HINT:
            raise AttributeError("storage_hint")
        if at == _OWN_HINT:
            return self.graph.extra["storage_hint"][self.i]
        cls, value, source, note = _HINTS[at - 1]
        return Reading(cls, value, source, f"sys/block/{self.name}", None, None, note)

    @property
    def dm_uuid(self) -> str:
        """A thin pool's dm uuid (the only one the devices above read)."""
        value: str = self._extra("dm_uuid")
        return value

    @property
    def thin(self) -> Any:
        return self._extra("thin")

    @property
    def md(self) -> MdInfo:
        value: MdInfo = self._extra("md")
        return value

    @property
    def discard_below(self) -> Any:
        return self._extra("discard_below")

    def _extra(self, key: str) -> Any:
        values = self.graph.extra.get(key)
        if values is None or self.i not in values:
            raise AttributeError(key)
        return values[self.i]

    def parent_nodes(self) -> list[Node]:
        """The devices it is built on (those listed), in its parents' order."""
        graph = self.graph
        return [Node(graph, j) for j in graph.parents_of(self.i)]

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def __contains__(self, key: str) -> bool:
        return key in self._ALWAYS or hasattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def update(self, values: dict[str, Any]) -> None:
        """What the stacking pass sets: storage_hint, thin, discard_below."""
        for key, value in values.items():
            if key == "storage_hint":
                self.graph.set_hint(self.i, value)
            elif key in ("thin", "discard_below"):
                self.graph._set_extra(key, self.i, value)
            else:
                raise KeyError(key)

    def inherited(self) -> dict[str, Any]:
        """The fields the stacking pass sets, as the device has them: its tree (cut to the
        devices listed), its storage hint, thin provisioning and discards below."""
        out: dict[str, Any] = {"parents": list(self.parents), "children": list(self.children),
                               "holders": list(self.holders)}
        for key in ("storage_hint", "thin", "discard_below"):
            value = getattr(self, key, None)
            if value is not None:
                out[key] = value.fact() if type(value) is Reading else value
        return out


def _format_devno(devno: int) -> str:
    return f"{devno >> 20}:{devno & 0xFFFFF}"


def passed_up(dev: Node, needed: frozenset[str] | None) -> dict[str, Any]:
    """What `dev` inherits from the devices below it (passed up into theirs first: topological
    order): a dm device's storage hint, thin provisioning and discards below. (Its stripe,
    which nothing above reads, is stripe_of's.) `needed`: the fields asked for (None: all)."""
    out: dict[str, Any] = {}
    if dev["kind"] == "dm" and (needed is None or "storage_hint" in needed):
        out["storage_hint"] = inherited_hint(dev)
    if needed is None or not needed.isdisjoint(("thin", "discard_below")):
        out.update(thin_and_discards(dev))
    return out


def _md_origin(dev: dict[str, Any] | Node) -> tuple[tuple[int, int], str] | None:
    md: MdInfo | None = dev.get("md")
    if md is None:
        return None
    found = geometry.md_stripe(md.chunk_bytes.value, md.data_disks.value)
    if found is None:
        return None
    from advisor.models.units import format_size  # here: only an md array needs it

    unit = found[0]
    label = (f"{dev['name']} (md {md.level.value}, {md.raid_disks.value} disks, "
             f"chunk {format_size(unit)})")
    return found, label


def stripe_of(dev: dict[str, Any], node: Node) -> StripeGeometry:
    """The stripe geometry of `dev` (a device's fields; `node`: its place in the graph): its
    own, named after an md array it is, or passed up to, or hidden by a layer above one."""
    stripe = geometry.mkfs_detected_stripe(
        min_io=dev["min_io"].value, opt_io=dev["opt_io"].value,
        physical_sector=dev["physical_sector"].value, logical_sector=dev["logical_sector"].value,
        size_bytes=dev["size_bytes"].value, source=f"{dev['name']} (min/opt io)")
    own = _md_origin(dev)
    if own is not None:
        return geometry.with_origin(stripe, own[1]) if stripe.source != "none" else stripe
    # An md array further down (LVM or dm-crypt on md RAID): name it as the origin.
    seen: set[int] = set()
    stack = node.parent_nodes()
    while stack:
        under = stack.pop()
        if under.i in seen:
            continue
        seen.add(under.i)
        below = _md_origin(under)
        if below is None:
            stack.extend(under.parent_nodes())
            continue
        md_geometry, label = below
        if stripe.sunit_bytes == md_geometry[0] and stripe.swidth_bytes == md_geometry[1]:
            return geometry.with_origin(stripe, f"{label}, passed up to {dev['display_name']}")
        if stripe.source == "none" and dev["kind"] != "part":
            return geometry.hidden_below(md_geometry, label, dev["display_name"])
    return stripe


# ---- what sits below (thin provisioning, discards a dm layer drops) ----

def thin_and_discards(dev: Node) -> dict[str, Any]:
    """`thin` and `discard_below` of a device; parents are done first (topological order)."""
    out: dict[str, Any] = {}
    parents = dev.parent_nodes()
    if dev["kind"] == "disk" and "thin" in dev:  # logical block provisioning, read with it
        out["thin"] = dev["thin"]
    pool = next((p for p in parents if (p.get("dm_uuid") or "").endswith("-tpool")), None)
    if pool is not None:
        out["thin"] = make_fact(FactStr, "dm-thin", "derived",
                                f"sys/block/{pool['name']}/dm/uuid", pool["dm_uuid"],
                                f"built on the thin pool {pool['display_name']}")
    elif "thin" not in out:
        inherited = next((p["thin"] for p in parents
                          if isinstance(p.get("thin"), Fact) and p["thin"].value), None)
        if inherited is not None:
            out["thin"] = inherited
    own = dev.get("discard_max_bytes") if dev["kind"] == "dm" else None
    if own == 0:
        # The nearest devices below that take discards (a thin pool's own layers may not).
        below: list[tuple[int, str]] = []
        level, seen = parents, set[str]()
        while level and not below:
            seen.update(p["name"] for p in level)
            below = [(p["discard_max_bytes"], p["name"]) for p in level
                     if p["discard_max_bytes"]]
            level = [q for p in level for q in p.parent_nodes() if q.name not in seen]
        if below:
            value, name = max(below)
            out["discard_below"] = make_fact(
                FactInt, value, SYSFS, f"sys/block/{name}/queue/discard_max_bytes", str(value),
                f"{name} takes discards; {dev['display_name']} does not")
    return out


def inherited_hint(dev: Node) -> Fact[str]:
    """A dm device (LVM, dm-crypt, multipath) is on the storage of what it is built on, when all
    of that says the same."""
    parents = dev.parent_nodes()
    hints = {p["storage_hint"].value for p in parents}
    if len(hints) != 1 or None in hints:
        return make_fact(FactStr, None, "derived", None, None,
                         "nothing below it says what the storage is")
    first = parents[0]["storage_hint"]
    return make_fact(FactStr, first.value, "derived", first.path, first.raw,
                     f"from {', '.join(dev['parents'])}: {first.note}")


def entries_for(root: SysRoot, name: str) -> tuple[str, list[str]] | None:
    """The kernel name of the device `name` (as find_device takes it) and the /sys/block
    entries its facts depend on: those it is built on (transitively), those built on it
    (whether they are listed), the loop devices (which of them is bound over it), in sysfs
    order. Every dm device's name is read (which one `name` may be). None when `name` does not
    name exactly one entry or partition this way.

    The listing is gone through once and not kept (on a host with 100,000 devices it would be
    most of a proposal's memory): what is kept of it is the entries `name` may be and the loop
    devices; whether a name is an entry is asked of sysfs (SysRoot.has_entry)."""
    key = name.removeprefix("/dev/mapper/").removeprefix("/dev/")
    found: set[tuple[str, str]] = set()  # (its /sys/block entry, its name)
    loops: list[str] = []
    dms: list[str] = []  # dm devices whose name is not read yet

    def read_dm_names() -> None:
        names = root.read_many("sys/block", [f"{e}/dm/name" for e in dms])
        found.update((entry, entry) for entry, dm_name in zip(dms, names, strict=True)
                     if dm_name == key)
        dms.clear()

    for entry in root.iter_names("sys/block"):
        if entry == key:
            found.add((key, key))
        if entry.startswith("dm-"):
            dms.append(entry)
            if len(dms) == _DM_NAMES_AT_ONCE:
                read_dm_names()
        elif entry.startswith("loop") and kind_of(entry) == "loop":  # the prefix first: cheaper
            loops.append(entry)
        if key.startswith(entry) and key != entry and "/" not in key \
                and root.exists(f"sys/block/{entry}/{key}/partition"):  # sys/block/DISK/NAME
            found.add((entry, key))
        if len(found) > 1:
            return None
    read_dm_names()
    if len(found) != 1:
        return None
    (unit, kernel_name), = found
    wanted = _built_on(root, unit)
    here = f"sys/block/{unit}" if unit == kernel_name else f"sys/block/{unit}/{kernel_name}"
    wanted.update(h for h in root.listdir(f"{here}/holders") if root.has_entry("sys/block", h))
    wanted.update(loops)
    return kernel_name, sorted(wanted)


#: How many dm devices' names entries_for reads at once (through one open of /sys/block).
_DM_NAMES_AT_ONCE = 128


def _built_on(root: SysRoot, unit: str) -> set[str]:
    """`unit` and the /sys/block entries it is built on, and what those are built on."""
    wanted = {unit}
    todo = [unit]
    while todo:
        entry = todo.pop()
        for slave in root.listdir(f"sys/block/{entry}/slaves"):
            below = _entry_of(root, entry, slave)
            if below is not None and below not in wanted:
                wanted.add(below)
                todo.append(below)
    return wanted


def _entry_of(root: SysRoot, holder: str, slave: str) -> str | None:
    """The /sys/block entry of `slave` (a name under sys/block/HOLDER/slaves): itself, or the
    disk of a partition, as the slave link's target says (.../block/DISK/PART), or else the
    longest entry its name starts with."""
    if root.has_entry("sys/block", slave):
        return slave
    link = root.readlink(f"sys/block/{holder}/slaves/{slave}") or ""
    parts = link.rstrip("/").split("/")
    if len(parts) >= 2 and parts[-1] == slave and root.has_entry("sys/block", parts[-2]):
        return parts[-2]
    return next((slave[:n] for n in range(len(slave) - 1, 0, -1)
                 if root.has_entry("sys/block", slave[:n])), None)
