#!/usr/bin/env python3
"""How fast the interactive advisor feels. Prints its figures; not a test.

1. Start to first paint and to the filled device list: `python -m advisor --sysroot DIR`
   started in a tmux pane, the pane read every 10 ms until the device screen is painted (its
   column headers; goal: under 300 ms quiet, under 1 s at load 4) and until the list is filled
   (its "N devices" title), with the process's CPU time at first paint (which the load does
   not inflate; the scan starts at the paint, so up to a poll of its CPU time is in the
   advisor's). The scan runs after the first paint, so a large host's list fills in later.
   With --baseline DIR, an earlier checkout is started the same way, its starts interleaved
   with ours. Beside them, interleaved too, Textual's own floor: a bare App of a Header, a
   DataTable with the same columns and a Footer, started from this interpreter the same way
   (what any Textual app of that shape costs before our code runs).
2. Key press to updated proposal: in the workload form, one digit typed into "largest directory
   entries", until the new proposal is shown (the mkfs line under the form). Measured in-process
   with Textual's pilot, beside the engine's own time for the same proposal.

With --load N, N busy loops (plain Python `while True: pass`, one process each) run while the
starts are timed: the figure under load (goal: under 1 s at --load 4). They are started by the
script and always stopped by it, on Ctrl-C and on failure too. The starts begin once the
one-minute load average shows the loops (at most two minutes' wait); it is printed before and
after the starts.

Byte-code caches: an installed package has them (pip compiles at install); a checkout run with
PYTHONDONTWRITEBYTECODE=1 (as in this project's sandbox) compiles every advisor module it
imports at every start, which the bare app (Textual's own, compiled modules) does not. The
advisor packages timed (this checkout's, --baseline's) are compiled first (compileall, into the
usual __pycache__ folders), so that the script measures what an installation runs.

Usage: .venv/bin/python scripts/bench_tui.py [--sysroot DIR] [--runs N] [--baseline DIR]
                                             [--load N]
(default sysroot: the simple-nvme capture of tests/data/sysfs-dumps, unpacked to a temp
folder).
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
DUMP = REPO / "tests" / "data" / "sysfs-dumps" / "simple-nvme.tar.xz"


def unpack_default(into: Path) -> Path:
    from tests.inspect.sysfs_builder import unpack

    unpack(DUMP, into)
    return next(p for p in into.rglob("sys") if p.is_dir()).parent


#: Longest wait for the load average to show the busy loops.
LOAD_WAIT = 120


@contextlib.contextmanager
def busy_loops(count: int) -> Iterator[None]:
    """`count` processes spinning (`while True: pass`) while the block runs; each is killed
    when it ends, however it ends (an exception, Ctrl-C)."""
    loops: list[subprocess.Popen[bytes]] = []
    # A `kill` of the script ends it through the `finally` below too.
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        for _ in range(count):
            loops.append(subprocess.Popen([sys.executable, "-c", "while True: pass"],
                                          stdin=subprocess.DEVNULL))
        # The one-minute load average follows the run queue slowly: the starts are timed once it
        # shows the loops (90% of `count`), or after LOAD_WAIT seconds, whichever comes first.
        deadline = time.monotonic() + LOAD_WAIT
        while loops and os.getloadavg()[0] < 0.9 * count and time.monotonic() < deadline:
            time.sleep(1)
        yield
    finally:
        for loop in loops:
            loop.kill()
        for loop in loops:
            loop.wait()
        signal.signal(signal.SIGTERM, previous)


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (5 min: {five:.2f})"


def _cpu_ms(pid: str) -> float:
    """CPU time (user + system) a process has used so far, in ms (/proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return float("nan")
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


#: Textual's floor: a bare app of the device screen's shape (a Header, a DataTable with the
#: same column headers, a Footer), its title (in the Header) like the filled list's, so that it
#: is timed by the same two marks as the advisor.
BARE_APP = """
from textual.app import App
from textual.widgets import DataTable, Footer, Header
class Bare(App):
    TITLE = "0 devices (bare)"
    def compose(self):
        yield Header()
        yield DataTable()
        yield Footer()
    def on_mount(self):
        table = self.query_one(DataTable)
        for label in ("NAME", "SIZE", "MEDIA", "CACHE", "FUA", "STRIPE", "STATE"):
            table.add_column(label)
Bare().run()
"""

#: What `time_to_device_list` starts: the advisor imported from a checkout, or the bare app.
BARE = Path("bare Textual app")


def time_to_device_list(sysroot: Path, runs: int, folder: Path, trees: list[Path]
                        ) -> dict[Path, tuple[list[float], list[float], list[float]]]:
    """For each of `trees` (this checkout, a --baseline one, or BARE: Textual's bare app),
    `runs` starts of the advisor imported from it, interleaved (the load moves them alike):
    seconds from start to the first painted device screen (its column headers), the process's
    CPU seconds at that moment (what the machine's load does not inflate; read within a poll of
    the paint), and seconds to the filled device list (its "N devices (...)" title)."""
    socket = str(folder / "tmux.sock")
    found: dict[Path, tuple[list[float], list[float], list[float]]] = {
        tree: ([], [], []) for tree in trees}
    try:
        # The tmux server itself is started first, so its start-up is not counted.
        subprocess.run(["tmux", "-S", socket, "new-session", "-d", "-s", "keep", "sleep", "600"],
                       check=True)
        for i in range(runs):
            # Each round in another order: none is always the one right after another's exit.
            for j, tree in enumerate(trees[i % len(trees):] + trees[:i % len(trees)]):
                painted, cpu, filled = found[tree]
                session = f"s{i}-{j}"
                if tree == BARE:
                    where, argv = REPO, [sys.executable, "-c", BARE_APP]
                else:
                    where = tree
                    argv = [f"PYTHONPATH={tree}", sys.executable, "-m", "advisor", "--sysroot",
                            str(sysroot)]
                started = time.perf_counter()
                subprocess.run(["tmux", "-S", socket, "new-session", "-d", "-s", session, "-x",
                                "120", "-y", "40", "-c", str(where), "env", "-u", "COLUMNS",
                                "-u", "LINES", "TERM=xterm-256color", *argv],
                               check=True)
                pid = subprocess.run(["tmux", "-S", socket, "display", "-p", "-t", session,
                                      "#{pane_pid}"], capture_output=True, text=True,
                                     check=True).stdout.strip()
                first: float | None = None
                while True:
                    screen = subprocess.run(["tmux", "-S", socket, "capture-pane", "-p", "-t",
                                             session], capture_output=True, text=True,
                                            check=False).stdout
                    now = time.perf_counter() - started
                    if first is None and "STATE" in screen:
                        first = now
                        cpu.append(_cpu_ms(pid) / 1000)
                    if "STATE" in screen and "devices (" in screen:
                        painted.append(first if first is not None else now)
                        if first is None:
                            cpu.append(_cpu_ms(pid) / 1000)
                        filled.append(now)
                        break
                    if now > 60:
                        raise SystemExit(f"no device list after 60 s:\n{screen}")
                    time.sleep(0.01)
                subprocess.run(["tmux", "-S", socket, "send-keys", "-t", session, "q"],
                               check=False)
                time.sleep(0.3)
    finally:
        subprocess.run(["tmux", "-S", socket, "kill-server"], capture_output=True, check=False)
    return found


BREAKDOWN = """
import time, os
wall0, cpu0 = time.perf_counter(), time.process_time()
import asyncio, argparse
from advisor.session import Session
from advisor.tui.app import build_app
imported = time.perf_counter(), time.process_time()
app = build_app(Session(os.environ["BENCH_SYSROOT"]))
built = time.perf_counter(), time.process_time()
async def main():
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        shown = time.perf_counter(), time.process_time()
        for label, (w, c), (w0, c0) in (("imports", imported, (wall0, cpu0)),
                                        ("devices read", built, imported),
                                        ("app start to list laid out", shown, built)):
            print(f"{label}: {1000 * (w - w0):.0f} ms wall, {1000 * (c - c0):.0f} ms CPU")
asyncio.run(main())
"""


def startup_breakdown(sysroot: Path) -> str:
    """Where the start goes, in one process without a terminal: wall and CPU time (CPU time is
    what the machine's load does not inflate)."""
    done = subprocess.run([sys.executable, "-c", BREAKDOWN], capture_output=True, text=True,
                          check=True, cwd=REPO, env={**os.environ, "BENCH_SYSROOT": str(sysroot)})
    return done.stdout


async def time_key_to_proposal(sysroot: Path, runs: int) -> tuple[list[float], list[float]]:
    from advisor.session import Session
    from advisor.tui.app import build_app

    session = Session(str(sysroot))
    inventory = session.inventory()
    device = next((d for d in inventory.devices if d.kind == "part" and not d.usage.mountpoints),
                  None)
    if device is None:  # a host without a free partition (a generated SAN): nothing to time
        return [], []
    app = build_app(session, device=device.name, start="workload")
    state = app.state
    key_times: list[float] = []
    engine_times: list[float] = []
    shown_at: list[float] = []

    class Stopwatch:
        """Told, like the screens, when the proposal changes: notes when a new one is shown."""

        def show_proposal(self) -> None:
            if not state.proposing and state.proposal is not None:
                shown_at.append(time.perf_counter())

    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        # The form redraws its mkfs line when told (ProposalChanged): note when a new one shows.
        screen = app.screen
        redraw = screen.show_proposal  # type: ignore[attr-defined]

        def timed() -> None:
            redraw()
            if not state.proposing and state.proposal is not None:
                shown_at.append(time.perf_counter())

        screen.show_proposal = timed  # type: ignore[attr-defined]
        for i in range(runs):
            digit = str(1 + i % 9)
            shown_at.clear()
            started = time.perf_counter()
            await pilot.press(digit)  # returns only once the app is idle again
            while not shown_at:
                if time.perf_counter() - started > 30:  # typed digits beyond what it takes
                    raise SystemExit(f"no new proposal 30 s after key {i + 1}: fewer --runs")
                await asyncio.sleep(0.002)
            key_times.append(shown_at[0] - started)
            t = time.perf_counter()
            session.propose(device, state.workload)
            engine_times.append(time.perf_counter() - t)
        await pilot.press("ctrl+q")
    return key_times, engine_times


def show(label: str, values: list[float], goal: float | None = None) -> None:
    ms = sorted(v * 1000 for v in values)
    verdict = ""
    if goal is not None:
        met = "met" if statistics.median(values) < goal else "NOT met"
        verdict = f"  (goal < {goal * 1000:.0f} ms: {met})"
    print(f"{label}: median {statistics.median(ms):.0f} ms, min {ms[0]:.0f}, max {ms[-1]:.0f} "
          f"(n={len(ms)}){verdict}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sysroot", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="a checkout of an earlier version, started the same way in the same "
                        "run (its advisor package, this interpreter and packages)")
    parser.add_argument("--load", type=int, default=0, metavar="N",
                        help="N busy-loop processes running while the starts are timed")
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        raise SystemExit("needs tmux")
    with tempfile.TemporaryDirectory() as tmp:
        sysroot = args.sysroot or unpack_default(Path(tmp))
        trees = [REPO] + ([args.baseline.resolve()] if args.baseline else []) + [BARE]
        for tree in trees[:-1]:
            compileall.compile_dir(str(tree / "advisor"), quiet=1)
        print(f"sysroot {sysroot}, {os.cpu_count()} CPUs, {_load()}")
        with busy_loops(args.load):
            if args.load:
                print(f"{args.load} busy loops started: {_load()}")
            found = time_to_device_list(sysroot, args.runs, Path(tmp), trees)
            print(f"after the starts{f' (with {args.load} busy loops)' if args.load else ''}: "
                  f"{_load()}")
        painted, cpu, filled = found[REPO]
        goal = 1.0 if args.load >= 4 else 0.3 if not args.load else None
        show("start to first paint (the device screen)", painted, goal)
        show("  CPU time of the advisor at first paint", cpu)
        show("start to the filled device list", filled)
        bare_painted, bare_cpu, _ = found[BARE]
        show("bare Textual app (Header, DataTable, Footer): start to first paint", bare_painted)
        show("  its CPU time at first paint", bare_cpu)
        print(f"first paint: {statistics.median(painted) / statistics.median(bare_painted):.2f}x "
              f"the bare app's (medians), CPU at first paint "
              f"{statistics.median(cpu) / statistics.median(bare_cpu):.2f}x")
        if args.baseline:
            base = args.baseline.resolve()
            base_painted, base_cpu, base_filled = found[base]
            show(f"baseline {base}: start to first paint", base_painted)
            show("  baseline: CPU time at first paint", base_cpu)
            show("baseline: start to the filled device list", base_filled)
            print(f"first paint: {statistics.median(painted) / statistics.median(base_painted):.2f}"
                  f"x the baseline's (medians), CPU at first paint "
                  f"{statistics.median(cpu) / statistics.median(base_cpu):.2f}x")
        print("  " + startup_breakdown(sysroot).strip().replace("\n", "\n  "))
        # Each key adds a digit to the same answer: past 12 digits it is out of range (no new
        # proposal to wait for).
        keys, engine = asyncio.run(time_key_to_proposal(sysroot, min(args.runs * 2, 12)))
        if keys:
            show("key press to updated proposal on screen", keys)
            show("  of which the engine (2 mkfs.xfs -N dry runs)", engine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
