"""The stacking pass: devices built on devices (partitions on disks, md arrays and dm devices on
either), as parents, children and holders. Parents come before children, so what a device
inherits from below (the stripe geometry an md array passes up, thin provisioning, the discards
a dm layer drops, the storage a dm device sits on) is known when it is made."""

from __future__ import annotations

import heapq
from typing import Any

from advisor.inspect import geometry
from advisor.inspect.specs import SYSFS, FactInt, FactStr, Reading, make_fact
from advisor.inspect.sysblock import kind_of
from advisor.models.device import Fact, MdInfo, StripeGeometry
from advisor.system.sysroot import SysRoot

#: The fields of a device its Node keeps (of discard_max_bytes, the value).
NODE_FIELDS = ("name", "display_name", "path", "maj_min", "kind", "parents", "children",
               "holders", "dm_uuid", "storage_hint", "thin", "md", "discard_max_bytes")


def node_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """What Node(fields) reads of a device's fields (what the child of a two-process read sends
    of each device beside its packed facts)."""
    return {key: fields[key] for key in NODE_FIELDS if key in fields}


#: The storage hints Nodes share (Node.storage_hint), by what they say.
_HINTS: dict[tuple[Any, ...], tuple[Any, ...]] = {}


class Node:
    """What the devices around a device read of it (the stacking pass, the tree, the usage
    tables), kept from its read until the last device is made, while the rest of its facts wait
    packed (a few fields instead of ~40 facts a device on a host with 100,000 devices). Read
    like the device's fields: node["kind"], node.get("md"), "thin" in node; a field the device
    does not have is not in it (its own bookkeeping, below, i, hint and other_path, always is);
    discard_max_bytes is its value alone (an int, not a Fact: all that is read of it).
    The stacking pass sets what the device inherits (storage_hint, thin, discard_below); `i`:
    the device's place in the scan's read order. Kept small: a host with 100,000 devices holds
    100,000 of them (a path only when it is not /dev/NAME, one tuple for a disk's children
    when they are its holders)."""

    __slots__ = (
        "below",
        "children",
        "discard_below",
        "discard_max_bytes",
        "display_name",
        "dm_uuid",
        "hint",
        "holders",
        "i",
        "kind",
        "maj_min",
        "md",
        "name",
        "other_path",
        "parents",
        "thin",
    )

    name: str
    display_name: str
    other_path: str | None
    maj_min: str | None
    kind: str
    parents: tuple[str, ...]
    children: tuple[str, ...]
    holders: tuple[str, ...]
    i: int

    def __init__(self, fields: dict[str, Any]) -> None:
        #: Whether a listed device is built on it (prune_links): it passes up to it.
        self.below = False
        self.name = fields["name"]
        self.display_name = fields["display_name"]
        path = fields["path"]
        self.other_path = None if path == f"/dev/{self.name}" else path
        self.maj_min = fields["maj_min"]
        self.kind = fields["kind"]
        self.parents = tuple(fields["parents"])
        self.holders = tuple(fields["holders"])
        children = tuple(fields["children"])
        self.children = self.holders if children == self.holders else children
        for key in ("dm_uuid", "storage_hint", "thin", "md"):
            if key in fields:
                setattr(self, key, fields[key])  # the hint: through storage_hint's setter
        if "discard_max_bytes" in fields:
            self.discard_max_bytes = fields["discard_max_bytes"].value

    @property
    def path(self) -> str:
        return f"/dev/{self.name}" if self.other_path is None else self.other_path

    @property
    def storage_hint(self) -> Any:
        """Its storage hint: as read (a Reading), passed up (a Fact), or made again from the
        one template of the hints that say nothing more than their class, value, source and
        note about the device's own folder (most of a SAN host's: one object for all)."""
        hint = self.hint
        if type(hint) is not tuple:
            return hint
        cls, value, source, note = hint
        return Reading(cls, value, source, f"sys/block/{self.name}", None, None, note)

    @storage_hint.setter
    def storage_hint(self, hint: Any) -> None:
        if type(hint) is Reading and hint.file is None and hint.raw is None \
                and hint.folder == f"sys/block/{self.name}":
            key = (hint.cls, hint.value, hint.source, hint.note)
            self.hint = _HINTS.setdefault(key, key) if len(_HINTS) < 64 else hint
        else:
            self.hint = hint

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self, key, value)

    def __contains__(self, key: str) -> bool:
        return hasattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)

    def update(self, values: dict[str, Any]) -> None:
        for key, value in values.items():
            setattr(self, key, value)

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


def prune_links(nodes: list[Node]) -> dict[str, Node]:
    """The devices by name, each one's parents, children and holders cut to those listed (a
    holder or slave that is excluded or empty is not shown), and those another is built on
    marked (Node.below)."""
    by_name = {n.name: n for n in nodes}
    for n in nodes:
        if not all(p in by_name for p in n.parents):
            n.parents = tuple(p for p in n.parents if p in by_name)
        for p in n.parents:
            by_name[p].below = True
        if not all(c in by_name for c in n.children):
            n.children = tuple(c for c in n.children if c in by_name)
        if not all(h in by_name for h in n.holders):
            n.holders = tuple(h for h in n.holders if h in by_name)
    return by_name


def passed_up(root: SysRoot, dev: Node, by_name: dict[str, Node],
              needed: frozenset[str] | None) -> dict[str, Any]:
    """What `dev` inherits from the devices below it (passed up into theirs first: topological
    order): a dm device's storage hint, thin provisioning and discards below. (Its stripe,
    which nothing above reads, is stripe_of's.) `needed`: the fields asked for (None: all)."""
    out: dict[str, Any] = {}
    if dev["kind"] == "dm" and (needed is None or "storage_hint" in needed):
        out["storage_hint"] = inherited_hint(dev, by_name)
    if needed is None or not needed.isdisjoint(("thin", "discard_below")):
        out.update(thin_and_discards(root, dev, by_name))
    return out


def topological(nodes: list[Node], by_name: dict[str, Node]) -> list[Node]:
    """Parents before children, otherwise in sysfs order (`nodes`, each its place as `i`)."""
    waiting = [sum(1 for p in n.parents if p in by_name) for n in nodes]
    ready = [i for i, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order: list[Node] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(nodes[i])
        for child in nodes[i].children:
            above = by_name.get(child)
            if above is not None and nodes[i].name in above.parents:
                waiting[above.i] -= 1
                if waiting[above.i] == 0:
                    heapq.heappush(ready, above.i)
    if len(order) < len(nodes):  # a cycle in a broken tree: keep the rest in sysfs order
        seen = {n.name for n in order}
        order.extend(n for n in nodes if n.name not in seen)
    return order


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


def stripe_of(dev: dict[str, Any], by_name: dict[str, Node]) -> StripeGeometry:
    stripe = geometry.mkfs_detected_stripe(
        min_io=dev["min_io"].value, opt_io=dev["opt_io"].value,
        physical_sector=dev["physical_sector"].value, logical_sector=dev["logical_sector"].value,
        size_bytes=dev["size_bytes"].value, source=f"{dev['name']} (min/opt io)")
    own = _md_origin(dev)
    if own is not None:
        return geometry.with_origin(stripe, own[1]) if stripe.source != "none" else stripe
    # An md array further down (LVM or dm-crypt on md RAID): name it as the origin.
    seen: set[str] = set()
    stack = list(dev["parents"])
    while stack:
        name = stack.pop()
        if name in seen or name not in by_name:
            continue
        seen.add(name)
        below = _md_origin(by_name[name])
        if below is None:
            stack.extend(by_name[name]["parents"])
            continue
        md_geometry, label = below
        if stripe.sunit_bytes == md_geometry[0] and stripe.swidth_bytes == md_geometry[1]:
            return geometry.with_origin(stripe, f"{label}, passed up to {dev['display_name']}")
        if stripe.source == "none" and dev["kind"] != "part":
            return geometry.hidden_below(md_geometry, label, dev["display_name"])
    return stripe


# ---- what sits below (thin provisioning, discards a dm layer drops) ----

def thin_and_discards(root: SysRoot, dev: Node, by_name: dict[str, Node]) -> dict[str, Any]:
    """`thin` and `discard_below` of a device; parents are done first (topological order)."""
    out: dict[str, Any] = {}
    parents = [by_name[p] for p in dev["parents"] if p in by_name]
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
            level = [by_name[n] for p in level for n in p["parents"]
                     if n in by_name and n not in seen]
        if below:
            value, name = max(below)
            out["discard_below"] = make_fact(
                FactInt, value, SYSFS, f"sys/block/{name}/queue/discard_max_bytes", str(value),
                f"{name} takes discards; {dev['display_name']} does not")
    return out


def inherited_hint(dev: Node, by_name: dict[str, Node]) -> Fact[str]:
    """A dm device (LVM, dm-crypt, multipath) is on the storage of what it is built on, when all
    of that says the same."""
    hints = {by_name[p]["storage_hint"].value for p in dev["parents"] if p in by_name}
    if len(hints) != 1 or None in hints:
        return make_fact(FactStr, None, "derived", None, None,
                         "nothing below it says what the storage is")
    first = by_name[dev["parents"][0]]["storage_hint"]
    return make_fact(FactStr, first.value, "derived", first.path, first.raw,
                     f"from {', '.join(dev['parents'])}: {first.note}")


def entries_for(root: SysRoot, name: str) -> tuple[str, list[str]] | None:
    """The kernel name of the device `name` (as find_device takes it) and the /sys/block
    entries its facts depend on: those it is built on (transitively), those built on it
    (whether they are listed), the loop devices (which of them is bound over it), in sysfs
    order. Every dm device's name is read (which one `name` may be). None when `name` does not
    name exactly one entry or partition this way."""
    entries = root.listdir("sys/block")
    present = set(entries)
    key = name.removeprefix("/dev/mapper/").removeprefix("/dev/")
    found: set[tuple[str, str]] = set()  # (its /sys/block entry, its name)
    if key in present:
        found.add((key, key))
    dms = [e for e in entries if e.startswith("dm-")]
    for entry, dm_name in zip(dms, root.read_many("sys/block", [f"{e}/dm/name" for e in dms]),
                              strict=True):
        if dm_name == key:
            found.add((entry, entry))
    for entry in entries:  # a partition: sys/block/DISK/NAME
        if key.startswith(entry) and key != entry and "/" not in key \
                and root.exists(f"sys/block/{entry}/{key}/partition"):
            found.add((entry, key))
    if len(found) != 1:
        return None
    (unit, kernel_name), = found
    wanted = _built_on(root, unit, present)
    here = f"sys/block/{unit}" if unit == kernel_name else f"sys/block/{unit}/{kernel_name}"
    wanted.update(h for h in root.listdir(f"{here}/holders") if h in present)
    wanted.update(e for e in entries if kind_of(e) == "loop")
    return kernel_name, [e for e in entries if e in wanted]


def _built_on(root: SysRoot, unit: str, present: set[str]) -> set[str]:
    """`unit` and the /sys/block entries it is built on, and what those are built on."""
    wanted = {unit}
    todo = [unit]
    while todo:
        entry = todo.pop()
        for slave in root.listdir(f"sys/block/{entry}/slaves"):
            below = _entry_of(root, entry, slave, present)
            if below is not None and below not in wanted:
                wanted.add(below)
                todo.append(below)
    return wanted


def _entry_of(root: SysRoot, holder: str, slave: str, present: set[str]) -> str | None:
    """The /sys/block entry of `slave` (a name under sys/block/HOLDER/slaves): itself, or the
    disk of a partition, as the slave link's target says (.../block/DISK/PART)."""
    if slave in present:
        return slave
    link = root.readlink(f"sys/block/{holder}/slaves/{slave}") or ""
    parts = link.rstrip("/").split("/")
    if len(parts) >= 2 and parts[-1] == slave and parts[-2] in present:
        return parts[-2]
    return next((e for e in sorted(present, key=len, reverse=True)
                 if slave.startswith(e) and slave != e), None)

