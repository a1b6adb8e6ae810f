"""Every block device of a host, from sysfs and /proc (live or a captured tree), plus libblkid and
udev on the live system. One code path: the live system is just the sysroot `/`.

Reads go through SysRoot; parsing is in advisor.inspect.parsers. The scan, in the modules it is
made of: what each /sys/block entry is asked (advisor.inspect.specs) and the reader of one entry
(advisor.inspect.sysblock), read for every entry (on two CPUs, advisor.inspect.parallel); the
stacking pass, parents before children (advisor.inspect.stacking, the stripe rules in
advisor.inspect.geometry); what each device is used for (advisor.inspect.usage); the libblkid
and udev probes (advisor.inspect.probes).
"""

from __future__ import annotations

import array
import bisect
import contextlib
import gc
import os
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any

from advisor import SCHEMA_VERSION
from advisor.errors import DeviceProblem
from advisor.inspect import parallel
from advisor.inspect.probes import Probes, can_probe, load_probes, probe_live
from advisor.inspect.specs import (
    HELD_CLASSES,
    PROBED,
    FactStr,
    Held,
    Reading,
    fields_needed,
    make_device,
    make_fact,
)
from advisor.inspect.stacking import (
    BELOW,
    Graph,
    Node,
    entries_for,
    node_record,
    passed_up,
    stripe_of,
)
from advisor.inspect.sysblock import read_device
from advisor.inspect.usage import UsageTables, no_usage, usage_tables
from advisor.models.device import Device, Inventory
from advisor.system.spill import Store, sorted_strings
from advisor.system.sysroot import SysRoot


def inspect_devices(root: SysRoot, *, probe: bool = True,
                    fields: frozenset[str] | None = None, users: bool = False) -> Inventory:
    """Every block device under `root` (partitions included), parents before children.

    With `probe`, libblkid and udev are asked too: on the live system when running as root, or
    from the probe file of a capture. `fields`: only these Device fields are filled (and only
    what they need is read; the tree and IDENTITY always are), the rest keep their defaults
    (`devices --json --fields`, lsblk's -o). Raises DeviceProblem when a device vanishes
    mid-scan. `users`: also which processes hold each device open (usage.held_open: one scan of
    /proc, on the live system as root)."""
    return inspect_with_probes(root, probe=probe, fields=fields, users=users)[0]


def inspect_with_probes(root: SysRoot, *, probe: bool = True,
                        fields: frozenset[str] | None = None,
                        users: bool = False) -> tuple[Inventory, Probes]:
    """inspect_devices, also returning the live-only probe results it used (for capture)."""
    used: list[Probes] = []
    with _collector_paused():
        devices = list(_inspect(root, probe=probe, needed=fields_needed(fields),
                                probes_used=used, users=users))
    inventory = Inventory(schema_version=SCHEMA_VERSION, sysroot=str(root.root),
                          live=root.live, devices=devices)
    return inventory, used[0]


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a scan (back on after, if it was): a scan allocates
    hundreds of thousands of small objects and frees none of them, and the collector would walk
    them again and again for nothing (a quarter of a SAN host's scan)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def iter_rendered(root: SysRoot, render: Callable[[Device], bytes], *, probe: bool = True,
                  fields: frozenset[str] | None = None, users: bool = False,
                  separator: bytes = b"") -> Generator[bytes, None, None]:
    """render(device) of inspect_devices' devices, in the same order, joined by `separator` a
    piece of devices at a time (`devices --json`: each device's JSON). On a large host the
    devices are made and rendered on two CPUs (parallel.in_order): after the read, making and
    writing 100,000 devices is a third of the scan, on one CPU. Everything is read before the
    first piece is given (a vanished device is DeviceProblem then, and nothing is written).
    Until its device is made, what the devices around a device read of it is kept in the
    scan's stacking.Graph (a device's stripe and storage hint come from the devices below it),
    and the rest of its facts packed with those read with it (parallel.pack), in a temporary
    file (parallel.Shelf): on a host with 100,000 devices neither their facts, nor the Device
    objects and their JSON, are ever all held at once."""
    with _collector_paused():
        scan = _Scan(root, probe=probe, needed=fields_needed(fields), probes_used=[],
                     users=users, packed=True)
        scan.pass_up()  # first: a piece is made without the others

        def piece(places: Sequence[int]) -> bytes:
            return separator.join([render(scan.device(Node(scan.graph, i))) for i in places])

        yield from parallel.in_order(root, scan.order, piece)


class _Scan:
    """Every device read, in the order they are made (parents first), with what making them
    takes: the devices' graph (stacking.Graph: names, links, what the stacking pass reads), the
    probes and the usage tables. `entries`: the /sys/block entries to read (None: every one);
    `users`: look for processes holding each device open (as root on the live system);
    `packed`: keep each piece of devices read packed (parallel.pack) until its devices are
    made, in the scan's temporary file (parallel.Shelf: in memory when none can be made), only
    the graph at hand, and no device's probe results once it is made."""

    def __init__(self, root: SysRoot, *, probe: bool, needed: frozenset[str] | None,
                 probes_used: list[Probes], entries: list[str] | None = None,
                 users: bool = False, packed: bool = False) -> None:
        hosts: dict[str, str] = {}
        #: Where the scan's lists go past a few thousand devices (advisor.system.spill), and a
        #: packed scan's pieces.
        self.store = store = Store(folder=parallel.SPILL_FOLDER)
        listing: Sequence[str] = sorted_strings(root.iter_names("sys/block"), store) \
            if entries is None else entries

        #: Each piece's packed facts, and its devices' summaries until the graph is made of
        #: them: in a temporary file (when a packed scan can have one), only where each is here.
        self.facts = parallel.Shelf(store.spill if packed else None, 3)
        summaries = parallel.Shelf(self.facts.spill, 1)

        def keep(devices: list[dict[str, Any]] | None, sent: parallel.Packed | None,
                 made_of: bytes | None) -> tuple[int | list[dict[str, Any]],
                                                 int | list[dict[str, Any]]]:
            """What the graph is made of (the number of the piece's devices' summaries, or the
            devices), and the devices' facts until they are made (the number of the piece
            packed, or the devices as read)."""
            if devices is None:  # the read's child packed and summarized them
                assert sent is not None and made_of is not None
                return summaries.put((made_of,)), self.facts.put(sent)
            if not packed:
                return devices, devices
            made = summaries.put((parallel.summarize(devices, node_record),))
            try:
                return made, self.facts.put(parallel.pack(devices, HELD_CLASSES))
            except (TypeError, ValueError):  # a value pack cannot carry: kept as read (rare)
                return made, devices

        def read_one(name: str) -> list[dict[str, Any]]:
            return read_device(root, name, needed, hosts)

        self.read_one = read_one
        read = parallel.read_pieces(root, listing, read_one, HELD_CLASSES, make_fact, keep,
                                    node_record if packed else None)
        #: Each piece's packed facts, by their number in `facts` (-1: kept as read, in
        #: `as_read`); and where each piece starts in the graph, the devices in read order.
        self.pieces = array.array("q")
        self.as_read: dict[int, list[dict[str, Any]]] = {}
        self.starts = array.array("q")
        #: What the devices around each device read of it (names, links, hints), made in read
        #: order once every piece is read, each piece's summaries let go as they are added.
        self.graph = graph = Graph(listing, store)
        for made_of, facts in read:
            self.starts.append(len(graph))
            if isinstance(facts, list):
                self.as_read[len(self.pieces)] = facts
            self.pieces.append(-1 if isinstance(facts, list) else facts)
            for record in (map(node_record, made_of) if isinstance(made_of, list)
                           else parallel.summaries_of(summaries.take(made_of)[0])):
                graph.add(record)
        del read
        graph.resolve()
        self.root = root
        self.headers: parallel.Headers = {}
        self.needed = needed
        self.probes = _probes(root, probe, needed, keep=not packed)
        self.want_usage = needed is None or "usage" in needed
        self.tables = usage_tables(root, graph.nodes(), users) if self.want_usage \
            else UsageTables()
        probes_used.append(self.probes)
        #: The devices' places in the graph, in the order they are made (parents first).
        self.order = graph.order()

    def pass_up(self) -> None:
        """What each device another is built on inherits (stacking.passed_up), into the graph,
        parents first, where the devices above it find it. Only those need it (BELOW): a device
        at the top of a stack (a SAN host's multipath devices) gets it when it is made, and the
        graph does not hold it."""
        graph = self.graph
        for i in self.order:
            if graph.flags[i] & BELOW:
                node = Node(graph, i)
                node.update(passed_up(node, self.needed))

    def held(self, node: Node) -> dict[str, Any]:
        """The device's fields as read (a Held device), from its piece (unpacked now when
        packed). A packed piece that does not unpack (garbled: the read's child sent it) is
        read again, as read_pieces does with one that does not arrive whole: the result never
        depends on the child."""
        at = bisect.bisect_right(self.starts, node.i) - 1
        k = self.pieces[at]
        if k >= 0:
            try:
                return parallel.unpack_one(self.facts.get(k), node.i - self.starts[at],
                                           HELD_CLASSES, make_fact, self.headers, at)
            except parallel.UNPACK_ERRORS:
                self.as_read[at] = self._read_again(at)
                self.pieces[at] = -1
        return self.as_read[at][node.i - self.starts[at]]

    def _read_again(self, at: int) -> list[dict[str, Any]]:
        """Piece `at`'s devices read again: its /sys/block entries are its devices but their
        partitions (read with their disk). DeviceProblem when they are no longer those."""
        end = self.starts[at + 1] if at + 1 < len(self.starts) else len(self.graph)
        nodes = [Node(self.graph, i) for i in range(self.starts[at], end)]  # in read order
        devices = [f for n in nodes if n.kind != "part" for f in self.read_one(n.name)]
        if [f["name"] for f in devices] != [n.name for n in nodes]:
            raise DeviceProblem("the devices changed while they were read: "
                                f"{', '.join(n.name for n in nodes)}")
        return devices

    def device(self, node: Node) -> Device:
        """The Device of `node` (what it inherits passed up already, _Scan.pass_up)."""
        needed = self.needed
        f = self.held(node)
        # The device's own Facts, made now and let go once it is written.
        device = f.fields() if type(f) is Held else {
            k: v.fact() if type(v) is Reading else v for k, v in f.items()}
        device.update(node.inherited())
        if not node.below:  # passed up to nothing: not held
            device.update(passed_up(node, needed))
        if needed is None or "stripe" in needed:
            device["stripe"] = stripe_of(device, node)
        # Given even when not asked: a default Usage is deep-copied per device (a third of the
        # time of a `--fields` scan of a SAN host).
        device["usage"] = self.tables.usage(device, self.probes) if self.want_usage \
            else no_usage()
        _probed(device, self.probes, needed)
        return make_device(device)


def _inspect(root: SysRoot, *, probe: bool, needed: frozenset[str] | None,
             probes_used: list[Probes], entries: list[str] | None = None,
             users: bool = False) -> Iterator[Device]:
    """_Scan's devices, made one at a time."""
    scan = _Scan(root, probe=probe, needed=needed, probes_used=probes_used, entries=entries,
                 users=users)
    scan.pass_up()
    for i in scan.order:
        yield scan.device(Node(scan.graph, i))


def _probes(root: SysRoot, probe: bool, needed: frozenset[str] | None, keep: bool) -> Probes:
    """The libblkid and udev results for the devices, when asked and a field needs them. The one
    place that decides: libblkid and udev on the live system as root (each device asked when it
    is made; `keep`: every result kept, for capture), a capture's own probe file for a captured
    tree, nothing on the live system otherwise."""
    if not probe or not (needed is None or not needed.isdisjoint(PROBED)):
        return Probes()
    if can_probe(root):
        return probe_live(keep=keep)
    if not root.live:
        return load_probes(root)
    return Probes()


def _probed(f: dict[str, Any], probes: Probes, needed: frozenset[str] | None) -> None:
    """What libblkid and udev say of the device, into its fields: a probe error as a note, and
    udev's model, serial and WWN over sysfs'."""
    probed = probes.of(f["name"])
    error = probed.error
    if error:
        f["notes"] = [*f["notes"], f"libblkid: {error}"]
    udev = probed.udev
    for attr, key in (("model", "ID_MODEL"), ("serial", "ID_SERIAL_SHORT"), ("wwn", "ID_WWN")):
        if key in udev and (needed is None or attr in needed):
            f[attr] = FactStr(value=udev[key], source="udev", path=f"udev:{key}", raw=udev[key],
                              note=None)


def inspect_one(root: SysRoot, name: str) -> Device | None:
    """The device `name` (as find_device takes it), equal to what inspect_devices would say of
    it, reading only what its facts depend on (stacking.entries_for). A proposal on a host with
    100,000 devices then reads a handful. None when `name` does not name exactly one listed
    device this way: the caller scans everything (and gets the same answer, or the same
    error)."""
    found = entries_for(root, name)
    if found is None:
        return None
    kernel_name, subset = found
    with _collector_paused():
        for dev in _inspect(root, probe=True, needed=None, probes_used=[], entries=subset):
            if dev.name == kernel_name:
                return dev
    return None  # not listed (empty, or a RAM disk): the full scan says so


def find_device(inv: Inventory, name: str) -> Device:
    """The device called `name` (kernel name, dm name, /dev path); DeviceProblem listing the known
    ones otherwise. On the live system a symbolic link to a device node (/dev/disk/by-id/...,
    /dev/VG/LV) names the device it points to now: resolved here once, so that everything after
    (the guard's checks, the prompt, every write) names the device itself. A captured tree's
    links are not on this machine: not followed."""
    dev = inv.get(name)
    if dev is None and inv.live and os.path.islink(name):
        real = os.path.realpath(name)
        dev = inv.get(real) if real.startswith("/dev/") else None
    if dev is None:
        known = ", ".join(d.display_name for d in inv.devices) or "none"
        raise DeviceProblem(f"unknown device '{name}' (known: {known})")
    return dev

