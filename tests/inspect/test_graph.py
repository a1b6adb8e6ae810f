"""The devices' graph a scan holds between its read and its last device (stacking.Graph): each
device's names, links and few stacking fields in columns, read back through a Node exactly as
they were read, whatever the columns could not hold; links cut to the devices listed; the order
parents first, otherwise sysfs order."""

from __future__ import annotations

import gc
import heapq
import tracemalloc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.inspect.specs import SYSFS, FactInt, FactStr, Reading, make_fact
from advisor.inspect.stacking import Graph, Node, node_record
from advisor.system.spill import Store


def _dev(name: str, kind: str = "disk", *, parents: list[str] | None = None,
         children: list[str] | None = None, holders: list[str] | None = None,
         maj_min: str | None = "8:0", display: str | None = None, path: str | None = None,
         **more: Any) -> dict[str, Any]:
    holders = holders or []
    return {"name": name, "display_name": display or name, "path": path or f"/dev/{name}",
            "maj_min": maj_min, "kind": kind, "parents": parents or [],
            "children": holders if children is None else children, "holders": holders, **more}


def _graph(entries: list[str], devices: list[dict[str, Any]], tiny: bool = False) -> Graph:
    """`devices` read from the /sys/block listing `entries`; `tiny`: in chunks of two devices,
    two of each list in memory, so that nearly everything is read back from the file."""
    graph = Graph(entries, Store(bits=1, keep=2) if tiny else None)
    for f in devices:
        graph.add(node_record(f))
    graph.resolve()
    return graph


def _reading(hint: Reading[Any]) -> tuple[Any, ...]:
    return (hint.cls, hint.value, hint.source, hint.folder, hint.file, hint.raw, hint.note)


#: Every test on a Graph held in memory, and on one whose lists are nearly all in the file.
tiny = pytest.mark.parametrize("tiny", [False, True], ids=["memory", "spilled"])


def _seen(node: Node) -> dict[str, Any]:
    keys = ("name", "display_name", "path", "maj_min", "kind", "parents", "children",
            "holders", "dm_uuid", "storage_hint", "thin", "md", "discard_max_bytes", "below")
    out = {key: node[key] for key in keys if key in node}
    if "storage_hint" in out and type(out["storage_hint"]) is Reading:
        hint = out["storage_hint"]
        out["storage_hint"] = (hint.cls, hint.value, hint.source, hint.path, hint.raw, hint.note)
    return out


#: A host with a partitioned disk under an LVM volume, an empty disk and a thin pool: the
#: partition is linked by name until the links are resolved, the empty disk is dropped.
ENTRIES = ["dm-0", "dm-1", "sda", "sdb", "sdc"]
DEVICES = [
    _dev("dm-0", "dm", parents=["sda1", "sdb", "sdc"], holders=["dm-1"], maj_min="253:0",
         display="vg-pool", path="/dev/mapper/vg-pool", dm_uuid="LVM-abc-tpool"),
    _dev("dm-1", "dm", parents=["dm-0"], maj_min="253:1", display="vg-thin",
         path="/dev/mapper/vg-thin", dm_uuid="LVM-def"),
    _dev("sda", children=["sda1"], maj_min="8:0"),
    _dev("sda1", "part", parents=["sda"], holders=["dm-0"], maj_min="8:1"),
    _dev("sdb", holders=["dm-0"], maj_min="8:16"),
]


@tiny
def test_links_name_the_devices_listed_and_drop_the_rest(tiny: bool) -> None:
    graph = _graph(ENTRIES, DEVICES, tiny)
    assert "sdc" not in graph and "sda1" in graph and graph.get("sdx") is None
    assert graph["dm-0"].parents == ("sda1", "sdb")  # sdc: empty, not listed
    assert graph["sda1"].holders == ("dm-0",) and graph["sda"].children == ("sda1",)
    assert [graph[n].below for n in ("dm-0", "dm-1", "sda", "sda1", "sdb")] \
        == [True, False, True, True, True]
    assert graph["dm-0"]["dm_uuid"] == "LVM-abc-tpool" and "dm_uuid" not in graph["dm-1"]
    assert graph["dm-1"].path == "/dev/mapper/vg-thin" and graph["dm-1"].display_name == "vg-thin"
    assert [graph.names[i] for i in graph.order()] == ["sda", "sda1", "sdb", "dm-0", "dm-1"]


@tiny
def test_values_the_columns_cannot_hold_read_back_as_read(tiny: bool) -> None:
    odd = [
        _dev("a", maj_min="08:01"), _dev("b", maj_min=None), _dev("c", maj_min="x"),
        _dev("d", maj_min="2047:1048575", path="/dev/disk/by-id/d"), _dev("i", maj_min="2048:0"),
        _dev("j", maj_min="1:1048576"),
        _dev("e", maj_min=f"1:{1 << 40}",
             discard_max_bytes=make_fact(FactInt, None, SYSFS, "p", "?", None)),
        _dev("f", discard_max_bytes=make_fact(FactInt, -5, SYSFS, "p", "-5", None)),
        _dev("g", discard_max_bytes=make_fact(FactInt, 1 << 63, SYSFS, "p", "big", None)),
        _dev("h", discard_max_bytes=make_fact(FactInt, 4096, SYSFS, "p", "4096", None)),
    ]
    graph = _graph([d["name"] for d in odd], odd, tiny)
    assert [graph[d["name"]].maj_min for d in odd[:7]] \
        == ["08:01", None, "x", "2047:1048575", "2048:0", "1:1048576", f"1:{1 << 40}"]
    assert graph["d"].path == "/dev/disk/by-id/d" and graph["a"].path == "/dev/a"
    assert "discard_max_bytes" not in graph["a"]
    assert [graph[n].discard_max_bytes for n in "efgh"] == [None, -5, 1 << 63, 4096]


@tiny
def test_storage_hints_shared_or_their_own(tiny: bool) -> None:
    """A hint that says no more than its class, value, source and note of the device's folder is
    one template for all; any other is kept as it is; the stacking pass may replace either."""
    template = [Reading(FactStr, "ssd", SYSFS, f"sys/block/{n}", None, None, "rotational = 0")
                for n in ("a", "b")]
    own = Reading(FactStr, "hdd", SYSFS, "sys/block/c", "queue/rotational", "1", None)
    fact = make_fact(FactStr, "ssd", "derived", "sys/block/e", None, "a Fact, not a Reading")
    devs = [_dev("a", storage_hint=template[0]), _dev("b", storage_hint=template[1]),
            _dev("c", storage_hint=own), _dev("d"), _dev("e", storage_hint=fact)]
    graph = _graph(["a", "b", "c", "d", "e"], devs, tiny)
    hint: Any
    for name, hint in zip("abce", (*template, own, fact.model_dump()), strict=True):
        seen = graph[name].storage_hint  # as read, whichever way kept
        if isinstance(hint, dict):
            assert seen.fact() == fact
            continue
        assert (seen.cls, seen.value, seen.source, seen.path, seen.raw, seen.note) \
            == (hint.cls, hint.value, hint.source, hint.path, hint.raw, hint.note)
    assert "storage_hint" not in graph["d"] and set(graph.extra["storage_hint"]) == {2}
    passed = make_fact(FactStr, "ssd", "derived", None, None, "from below")
    graph["a"].update({"storage_hint": passed, "thin": passed})
    graph["c"].update({"storage_hint": Reading(FactStr, "ssd", SYSFS, "sys/block/c", None, None,
                                               "rotational = 0")})
    graph["d"].update({"storage_hint": template[1]})  # another device's folder: its own
    assert graph["a"].storage_hint == passed and graph["a"]["thin"] == passed
    assert graph["c"].storage_hint.path == "sys/block/c" and graph["c"].storage_hint.raw is None
    assert _reading(graph["d"].storage_hint) == _reading(template[1])
    # kept as themselves: a's passed-up Fact and d's Reading of another folder; c's a template
    assert set(graph.extra["storage_hint"]) == {graph.index("a"), graph.index("d")}
    assert graph["b"].storage_hint.path == "sys/block/b"  # its template untouched


@tiny
def test_holders_apart_from_the_children_and_a_listing_out_of_order(tiny: bool) -> None:
    devs = [_dev("z", holders=["y"], children=["x"]), _dev("y", parents=["z"]),
            _dev("x", parents=["z"])]
    graph = _graph(["z", "y", "x"], devs, tiny)  # not sorted: found by a dict
    assert graph["z"].holders == ("y",) and graph["z"].children == ("x",)
    # y names z as a parent, but z does not name y among its children: y comes last, as in a
    # cycle (what a broken tree gets)
    assert [graph.names[i] for i in graph.order()] == ["z", "x", "y"] == _reference_order(devs)


def _reference_order(devs: list[dict[str, Any]]) -> list[str]:
    """The order as a heap of every device by its place, over names (as it was first written)."""
    by_name = {d["name"]: d for d in devs}
    place = {d["name"]: i for i, d in enumerate(devs)}
    parents = {d["name"]: [p for p in d["parents"] if p in by_name] for d in devs}
    waiting = [len(parents[d["name"]]) for d in devs]
    ready = [i for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    out: list[str] = []
    while ready:
        i = heapq.heappop(ready)
        out.append(devs[i]["name"])
        for child in devs[i]["children"]:
            if child in by_name and devs[i]["name"] in parents[child]:
                waiting[place[child]] -= 1
                if waiting[place[child]] == 0:
                    heapq.heappush(ready, place[child])
    return out + [d["name"] for d in devs if d["name"] not in out]


@st.composite
def _hosts(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Up to 12 devices linked at random: cycles, links one way only, names not listed."""
    count = draw(st.integers(1, 12))
    names = [f"d{i:02}" for i in range(count)]
    links = draw(st.lists(st.tuples(st.integers(0, count), st.integers(0, count - 1),
                                    st.sampled_from(["both", "up", "down"])), max_size=20))
    parents: dict[str, list[str]] = {n: [] for n in names}
    holders: dict[str, list[str]] = {n: [] for n in names}
    for below, above, how in links:
        low = names[below] if below < count else "gone"
        high = names[above]
        if low == high:
            continue
        if how != "down" and low not in parents[high]:
            parents[high].append(low)
        if how != "up" and low != "gone" and high not in holders[low]:
            holders[low].append(high)
    return [_dev(n, parents=parents[n], holders=holders[n]) for n in names]


@settings(max_examples=300, deadline=None)
@given(_hosts())
def test_the_order_is_parents_first_then_sysfs_order(devs: list[dict[str, Any]]) -> None:
    for tiny in (False, True):
        graph = _graph([d["name"] for d in devs], devs, tiny)
        assert [graph.names[i] for i in graph.order()] == _reference_order(devs)


def test_partitions_past_the_cap_put_every_list_in_chunks() -> None:
    """Two disks (under the store's cap of four) with seven partitions: the lists become
    chunks at the fifth device, and the graph reads as the one held in memory."""
    devs = []
    for disk in ("sda", "sdb"):
        parts = [f"{disk}{n}" for n in range(1, 5 if disk == "sda" else 4)]
        devs.append(_dev(disk, children=parts, display=f"{disk}-disk"))
        devs += [_dev(p, "part", parents=[disk], holders=["sdb1"] if p == "sda2" else [],
                      maj_min="8:1", display=f"{p}-part") for p in parts]
    small = _graph(["sda", "sdb"], devs)
    tiny = _graph(["sda", "sdb"], devs, tiny=True)
    assert not small.chunked and tiny.chunked and len(tiny) == 9
    assert {key: sorted(values) for key, values in tiny.extra.items()} \
        == {key: sorted(values) for key, values in small.extra.items()}
    for name in [d["name"] for d in devs]:
        assert _seen(tiny[name]) == _seen(small[name])
    assert list(tiny.order()) == list(small.order())
    assert tiny["sda2"].holders == ("sdb1",) and tiny["sdb1"].parents == ("sdb",)


def _san(luns: int) -> tuple[list[str], list[dict[str, Any]]]:
    """A SAN host's listing and devices: `luns` multipath dm devices over 4 paths each."""
    devs: list[dict[str, Any]] = []
    for lun in range(luns):
        paths = [f"sd{4 * lun + p:07}" for p in range(4)]
        devs.append(_dev(f"dm-{lun:06}", "dm", parents=paths, maj_min=f"253:{lun}",
                         display=f"mpath{lun}", path=f"/dev/mapper/mpath{lun}"))
        devs += [_dev(p, holders=[f"dm-{lun:06}"], maj_min=f"8:{4 * lun + k}")
                 for k, p in enumerate(paths)]
    devs.sort(key=lambda d: d["name"])
    return [d["name"] for d in devs], devs


def _held(luns: int, store: Store | None) -> int:
    """The bytes a SAN host's graph holds once resolved and ordered."""
    entries, devs = _san(luns)
    records = [node_record(d) for d in devs]
    del devs
    gc.collect()
    tracemalloc.start()
    try:
        graph = Graph(entries, store)
        for record in records:
            graph.add(record)
        graph.resolve()
        order = graph.order()
        assert len(order) == len(records)
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return held


def test_a_spilled_graph_holds_the_same_memory_for_four_times_the_devices() -> None:
    """With its lists in the file past two chunks of 64 devices, the graph of 4,000 devices
    holds about what the graph of 1,000 does (each chunk's place in the file: 16 bytes for 64
    devices, in each of a dozen lists); held in memory, it grows by tens of bytes a device."""
    small, big = 200, 800  # LUNs: 1,000 and 4,000 devices
    added = (big - small) * 5
    spilled = (_held(big, Store(bits=6, keep=2)) - _held(small, Store(bits=6, keep=2))) / added
    memory = (_held(big, None) - _held(small, None)) / added
    assert spilled < 8, spilled
    assert memory > 40, memory
