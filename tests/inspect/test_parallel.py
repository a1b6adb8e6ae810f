"""The two-process scan of a large /sys/block (advisor.inspect.parallel): the same inventory as
one process reads, both processes really share the work, and a child that fails, sees a device
vanish or is left behind by Ctrl-C never changes the answer or outlives the scan."""

from __future__ import annotations

import importlib.util
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from advisor.errors import DeviceProblem
from advisor.inspect import parallel
from advisor.inspect.devices import inspect_devices
from advisor.inspect.specs import FactBool, FactInt, FactStr, make_fact
from advisor.system.sysroot import SysRoot
from tests.conftest import REPO, memory_folder, require, require_root_tools

CLASSES = (FactInt, FactBool, FactStr)


def _generator() -> Any:
    """scripts/bench_devices.py's SAN host generator (the benchmark's own tree)."""
    spec = importlib.util.spec_from_file_location("bench_devices",
                                                  REPO / "scripts" / "bench_devices.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def san() -> Iterator[Path]:
    """160 LUNs over 3 paths and their multipath devices: 640 entries, above MIN_ENTRIES."""
    with memory_folder("san") as root:
        assert _generator().generate(root, 160, 3) == 640 > parallel.MIN_ENTRIES
        yield root


def _two_cpus() -> None:
    require(parallel.usable_cpus() >= 2, "needs two CPUs")


def test_two_processes_read_the_same_inventory_as_one(san: Path, forks: list[int],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    _two_cpus()
    together = inspect_devices(SysRoot.open(san))
    assert len(forks) == 1 and not Path(f"/proc/{forks[0]}").exists()  # forked, and reaped
    monkeypatch.setattr(parallel, "MIN_ENTRIES", 10**9)
    alone = inspect_devices(SysRoot.open(san))
    assert len(forks) == 1
    assert together.model_dump_json() == alone.model_dump_json()
    assert len(together.devices) == 640
    dm = together.get("mpath7")
    # dm-* sort before sd*: a multipath device and its paths are in different pieces.
    assert dm is not None and dm.parents == ["sdv", "sdw", "sdx"]


def _pid_reader(delay: float = 0.0, fail: Callable[[str], None] | None = None
                ) -> Callable[[str], list[dict[str, Any]]]:
    parent = os.getpid()

    def read_one(name: str) -> list[dict[str, Any]]:
        if os.getpid() != parent and fail is not None:
            fail(name)
        time.sleep(delay)
        return [{"name": name, "pid": os.getpid(),
                 "size": make_fact(FactInt, len(name), "sysfs", f"sys/block/{name}/size", "1",
                                   None)}]
    return read_one


NAMES = [f"sd{i:04d}" for i in range(700)]


def _read(read_one: Callable[[str], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """[*read_one(name) for name in NAMES], read as the scan reads (each piece kept whole)."""
    pieces = parallel.read_pieces(SysRoot(Path("/")), NAMES, read_one, CLASSES, make_fact,
                                  lambda devices, packed, summaries: devices)
    return [f for piece in pieces for f in piece]


def test_both_processes_take_pieces_and_the_order_is_kept(forks: list[int]) -> None:
    _two_cpus()
    out = _read(_pid_reader(delay=0.002))
    assert [d["name"] for d in out] == NAMES
    assert {d["pid"] for d in out} == {os.getpid(), forks[0]}  # the child did some of the work
    assert all(d["size"].value == 6 and d["size"].path.endswith("/size") for d in out)


def test_a_failing_child_leaves_its_pieces_to_the_parent(forks: list[int]) -> None:
    _two_cpus()

    def boom(name: str) -> None:
        raise RuntimeError("child broke")

    out = _read(_pid_reader(delay=0.0005, fail=boom))
    assert [d["name"] for d in out] == NAMES
    assert {d["pid"] for d in out} == {os.getpid()}
    assert len(forks) == 1 and not Path(f"/proc/{forks[0]}").exists()


def test_a_garbled_piece_from_the_child_is_read_by_the_parent(
        forks: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """A piece the child sent that does not unpack (here its second and those after): this
    process reads it and the child's later ones itself, and keeps those that unpacked."""
    _two_cpus()
    real = parallel.pack
    parent = os.getpid()
    packed: list[int] = []

    def garbling(devices: list[dict[str, Any]], classes: Any) -> parallel.Packed:
        packed.append(1)
        if os.getpid() != parent and len(packed) >= 2:
            return (b"not deflated", b"", b"")
        return real(devices, classes)

    monkeypatch.setattr(parallel, "pack", garbling)
    out = _read(_pid_reader(delay=0.001))
    assert [d["name"] for d in out] == NAMES
    assert all(d["size"].value == 6 for d in out)
    assert {d["pid"] for d in out} == {os.getpid(), forks[0]}  # its first piece kept


def test_a_device_vanishing_in_the_child_is_the_scan_s_answer(forks: list[int]) -> None:
    _two_cpus()

    def vanish(name: str) -> None:
        raise DeviceProblem(f"device {name} disappeared while it was being inspected")

    with pytest.raises(DeviceProblem, match="disappeared while it was being inspected"):
        _read(_pid_reader(delay=0.0005, fail=vanish))
    assert len(forks) == 1 and not Path(f"/proc/{forks[0]}").exists()


def test_what_cannot_cross_the_pipe_is_read_by_the_parent(forks: list[int]) -> None:
    _two_cpus()
    parent = os.getpid()

    def read_one(name: str) -> list[dict[str, Any]]:
        time.sleep(0.0005)
        return [{"name": name, "pid": os.getpid(), "odd": {1, 2}}]  # a set: not plain data

    out = _read(read_one)
    assert [d["name"] for d in out] == NAMES and {d["pid"] for d in out} == {parent}


def test_ctrl_c_in_the_parent_kills_and_reaps_the_child(forks: list[int]) -> None:
    _two_cpus()
    parent = os.getpid()
    seen = []

    def read_one(name: str) -> list[dict[str, Any]]:
        time.sleep(0.001)
        if os.getpid() == parent:
            seen.append(name)
            if len(seen) == 100:
                raise KeyboardInterrupt
        return [{"name": name}]

    with pytest.raises(KeyboardInterrupt):
        _read(read_one)
    assert len(forks) == 1 and not Path(f"/proc/{forks[0]}").exists()
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # nothing of ours left to reap


def test_no_fork_with_threads_capture_or_few_devices(san: Path, forks: list[int]) -> None:
    root = SysRoot.open(san)
    names = root.listdir("sys/block")
    _two_cpus()
    assert parallel.worth_forking(root, names)
    assert not parallel.worth_forking(root, names[:parallel.MIN_ENTRIES - 1])
    recording = SysRoot.open(san)
    recording.recorded = set()
    assert not parallel.worth_forking(recording, names)  # capture must see every path read
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not parallel.worth_forking(root, names)  # the TUI: never fork with threads
        inspect_devices(root)
    finally:
        stop.set()
        thread.join()
    assert forks == []


#: A scan that takes a few seconds, run as its own process: prints the child's pid, then reads.
SLOW_SCAN = """
import os, sys, time
from pathlib import Path
from advisor.inspect import parallel
from advisor.inspect.specs import FactBool, FactInt, FactStr, make_fact
from advisor.system.sysroot import SysRoot
real = os.fork
def fork():
    pid = real()
    if pid:
        print(pid, flush=True)
    return pid
parallel.os.fork = fork
def read_one(name):
    time.sleep(0.002)
    return [{"name": name}]
parallel.read_pieces(SysRoot(Path("/")), [f"sd{i}" for i in range(3000)], read_one,
                     (FactInt, FactBool, FactStr), make_fact, lambda *piece: piece[0])
print("finished", flush=True)
"""


def _exited(pid: int) -> bool:
    """Gone, or a zombie waiting for whoever adopted it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_a_killed_scan_leaves_no_child_reading(sig: str) -> None:
    """SIGTERM or a dropped SSH session (SIGHUP) kill the parent outright; its child notices at
    the next piece (64 entries, ~0.13 s here) instead of reading its share to the end (~3 s)."""
    import signal
    import subprocess
    import sys

    _two_cpus()
    proc = subprocess.Popen([sys.executable, "-c", SLOW_SCAN], stdout=subprocess.PIPE,
                            text=True, cwd=REPO)
    try:
        assert proc.stdout is not None
        child = int(proc.stdout.readline())
        time.sleep(0.3)
        proc.send_signal(getattr(signal, sig))
        assert proc.wait(timeout=10) == -getattr(signal, sig)
        deadline = time.monotonic() + 1.5
        while not _exited(child) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _exited(child)
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("capacity", [4096, 8192, 65536])
@pytest.mark.parametrize("count", [1, 64, 65, 100_000, 1_000_000])
def test_every_piece_number_fits_in_the_pipe_before_the_fork(capacity: int, count: int) -> None:
    """The numbers are written before the child exists to read them: more than the pipe holds
    would block the scan for ever (a pipe is one page once its user holds too many). Every name
    is in one piece, in order."""
    names = [f"sd{i}" for i in range(count)]
    pieces = parallel.cut(names, capacity)
    assert 2 * len(pieces) <= capacity
    assert [n for piece in pieces for n in piece] == names
    assert all(len(piece) >= parallel.CHUNK for piece in pieces[:-1])



#: Devices per rendered piece in the tests of in_order (render_chunk): 11 pieces of ITEMS,
#: more than MIN_ENTRIES in all, so that two processes render them.
CHUNK = 128
ITEMS = list(range(10 * CHUNK + 5))
assert len(ITEMS) >= parallel.MIN_ENTRIES


@pytest.fixture
def render_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "RENDER_CHUNK", CHUNK)


@pytest.fixture
def child_started() -> Iterator[tuple[Callable[[], None], Callable[[], None]]]:
    """(started, wait): the child calls started() as it takes its first piece; wait() in the
    parent returns once it has (or after 10 s): a test that needs the child to render a piece
    does not depend on when a busy machine first runs it."""
    read_end, write_end = os.pipe()
    told: list[bool] = []

    def started() -> None:
        if not told:
            told.append(True)
            os.write(write_end, b"x")

    def wait() -> None:
        import select

        select.select([read_end], [], [], 10)

    yield started, wait
    os.close(read_end)
    os.close(write_end)


def _pid_render(gate: tuple[Callable[[], None], Callable[[], None]],
                fail: Callable[[], None] | None = None) -> Callable[[list[int]], bytes]:
    """Each piece as "pid:items;", rendered in 2 ms; the parent's second piece waits for the
    child to have started."""
    parent = os.getpid()
    started, wait = gate
    mine: list[int] = []

    def render(piece: list[int]) -> bytes:
        if os.getpid() != parent:
            started()
            if fail is not None:
                fail()
        else:
            mine.append(piece[0])
            if len(mine) == 2:
                wait()
        time.sleep(0.002)
        return f"{os.getpid()}:{','.join(map(str, piece))};".encode()
    return render


def _rendered(out: list[bytes]) -> tuple[list[int], set[int]]:
    """The items in the order rendered, and the pids that rendered them."""
    pieces = [p.decode().rstrip(";").split(":") for p in out]
    return [int(i) for _, items in pieces for i in items.split(",")], {int(p) for p, _ in pieces}


@pytest.mark.usefixtures("render_chunk")
def test_both_processes_render_pieces_and_they_are_given_in_order(
        forks: list[int], child_started: tuple[Callable[[], None], Callable[[], None]]) -> None:
    _two_cpus()
    out = list(parallel.in_order(SysRoot(Path("/")), ITEMS, _pid_render(child_started)))
    items, pids = _rendered(out)
    assert items == ITEMS and len(out) == 11
    assert pids == {os.getpid(), forks[0]}  # the child rendered some of them
    assert len(forks) == 1 and _exited(forks[0])
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # reaped


@pytest.mark.usefixtures("render_chunk")
def test_a_child_that_fails_to_render_leaves_its_pieces_to_the_parent(
        forks: list[int], child_started: tuple[Callable[[], None], Callable[[], None]]) -> None:
    _two_cpus()

    def boom() -> None:
        raise RuntimeError("child broke")

    render = _pid_render(child_started, boom)
    items, pids = _rendered(list(parallel.in_order(SysRoot(Path("/")), ITEMS, render)))
    assert items == ITEMS and pids == {os.getpid()}
    assert len(forks) == 1 and not Path(f"/proc/{forks[0]}").exists()


@pytest.mark.usefixtures("render_chunk")
@pytest.mark.parametrize("how", ["stops early", "fails"])
def test_the_render_child_is_reaped_when_the_caller_stops_or_fails(forks: list[int],
                                                                   how: str) -> None:
    _two_cpus()
    parent = os.getpid()
    here: list[int] = []

    def render(piece: list[int]) -> bytes:
        if os.getpid() == parent:
            here.append(piece[0])
            if how == "fails" and len(here) == 3:
                raise KeyboardInterrupt
        time.sleep(0.002)
        return b"x"

    pieces = parallel.in_order(SysRoot(Path("/")), ITEMS, render)
    if how == "stops early":
        assert [next(pieces), next(pieces), next(pieces)] == [b"x"] * 3
        pieces.close()
    else:
        with pytest.raises(KeyboardInterrupt):
            list(pieces)
    assert len(forks) == 1 and not Path(f"/proc/{forks[0]}").exists()
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_devices_json_made_on_two_cpus_is_the_inventory_s(san: Path, forks: list[int]) -> None:
    """`devices --json` writes the devices a piece at a time, every other piece made by a
    child: byte for byte the inventory's own JSON."""
    import io

    from advisor.commands.devices import write_json

    _two_cpus()
    root = SysRoot.open(san)
    out = io.BytesIO()
    write_json(out, root, root.live, None)
    assert len(forks) == 2  # one to read, one to make and render
    inv = inspect_devices(root)
    assert out.getvalue() == inv.__pydantic_serializer__.to_json(inv, indent=2) + b"\n"


def test_a_closed_output_ends_the_render_child_at_once(san: Path, forks: list[int]) -> None:
    """`devices --json | head`: the write fails, and the child making the devices is killed
    and reaped before the error is reported."""
    from advisor.commands.devices import write_json

    _two_cpus()

    class Closed:
        writes = 0

        def write(self, data: bytes) -> int:
            self.writes += 1
            if self.writes > 1:
                raise BrokenPipeError(32, "Broken pipe")
            return len(data)

        def flush(self) -> None:
            pass

    root = SysRoot.open(san)
    with pytest.raises(BrokenPipeError) as caught:
        write_json(Closed(), root, root.live, None)  # type: ignore[arg-type]
    # While the error (and the frames of its traceback) is still held, as the CLI holds it.
    assert caught.value.errno == 32
    assert len(forks) == 2 and all(not Path(f"/proc/{pid}").exists() for pid in forks)


@pytest.mark.usefixtures("render_chunk")
@pytest.mark.parametrize("slow", ["child", "parent"])
def test_the_faster_process_renders_more_and_the_order_is_kept(forks: list[int],
                                                               slow: str) -> None:
    """The pieces go to whichever process asks first, and every piece comes out in its turn. A
    slow parent (a busy CPU) leaves most of them to the child: here stuck in its first piece
    until the child has rendered most, for as long as that takes, not for a time. A slow child
    (0.5 s a piece) leaves the parent at least every other piece: the parent renders one piece
    ahead while it waits for the child's in turn, so which of them takes the first piece
    decides who gets the odd one (5 or 6 of 11), not who is faster."""
    _two_cpus()
    parent = os.getpid()
    most = len(ITEMS) // CHUNK // 2 + 1  # of the 11 pieces: 6
    signal_r, signal_w = os.pipe()
    rendered: list[int] = []  # the child's own copy counts its pieces

    def render(piece: Sequence[int]) -> bytes:
        here = os.getpid() == parent
        if slow == "child":
            time.sleep(0.002 if here else 0.5)
        elif here:
            select.select([signal_r], [], [], 60)  # until the child has rendered `most`
        else:
            rendered.append(1)
            if len(rendered) == most:
                os.write(signal_w, b"x")
        return f"{os.getpid()}:{','.join(map(str, piece))};".encode()

    try:
        out = list(parallel.in_order(SysRoot(Path("/")), ITEMS, render))
    finally:
        os.close(signal_r)
        os.close(signal_w)
    items, _ = _rendered(out)
    assert items == ITEMS
    by_parent = sum(p.startswith(f"{parent}:".encode()) for p in out)
    if slow == "child":
        assert by_parent >= len(out) // 2
    else:  # (whether the parent takes a piece before the child takes them all, likewise)
        assert by_parent < most


@pytest.mark.usefixtures("render_chunk")
def test_a_child_failing_halfway_leaves_the_rest_to_the_parent(
        forks: list[int], child_started: tuple[Callable[[], None], Callable[[], None]]) -> None:
    _two_cpus()
    done: list[bool] = []

    def second_piece() -> None:
        done.append(True)  # the child's own copy of the list
        if len(done) == 2:
            os._exit(1)  # dies on its second piece, having sent its first

    out = list(parallel.in_order(SysRoot(Path("/")), ITEMS,
                                 _pid_render(child_started, second_piece)))
    items, pids = _rendered(out)
    assert items == ITEMS and pids == {os.getpid(), forks[0]}
    assert sum(p.startswith(f"{forks[0]}:".encode()) for p in out) == 1


@pytest.mark.root
def test_a_refused_fork_leaves_the_whole_scan_to_one_process(san: Path) -> None:
    """At the user's process limit (RLIMIT_NPROC: fork fails with EAGAIN) the scan and the
    writing are done in one process, as on one CPU: the same document, not an error."""
    _two_cpus()
    require_root_tools("runuser", "prlimit")
    os.chmod(san, 0o755)
    # Not this run's temporary folder (private to root): nobody has to reach what it uses.
    env = {k: v for k, v in os.environ.items() if k != "TMPDIR"}
    nobody = ["runuser", "-u", "nobody", "--"]
    limited = [*nobody, "prlimit", "--nproc=1", "--"]
    refused = subprocess.run([*limited, sys.executable, "-c", "import os; os.fork()"],
                             capture_output=True, text=True, env=env)
    assert refused.returncode != 0 and "BlockingIOError" in refused.stderr, refused.stderr
    argv = [sys.executable, "-m", "advisor", "devices", "--json", "--sysroot", str(san)]
    free = subprocess.run([*nobody, *argv], capture_output=True, cwd=REPO, env=env)
    alone = subprocess.run([*limited, *argv], capture_output=True, cwd=REPO, env=env)
    assert free.returncode == 0, free.stderr
    assert alone.returncode == 0, alone.stderr
    assert alone.stdout == free.stdout and len(json.loads(alone.stdout)["devices"]) == 640
