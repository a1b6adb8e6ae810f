"""Layer contracts: the core never imports Textual (`xfs-advisor --json` must start fast and work
without a TUI), and the rule engine never reaches the host."""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import advisor

CORE_MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(advisor.__path__, "advisor.")
    if not m.name.startswith("advisor.tui") and m.name != "advisor.__main__"
)


def test_core_modules_import_without_textual() -> None:
    # A fresh interpreter with textual made unimportable: every non-TUI module must still import.
    code = (
        "import sys, importlib\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'textual' or name.startswith(('textual.', 'textual_plotext')):\n"
        "            raise ImportError('textual is blocked in the core')\n"
        "sys.meta_path.insert(0, Block())\n"
        f"for m in {CORE_MODULES!r}:\n"
        "    importlib.import_module(m)\n"
        "assert not any(k.startswith('textual') for k in sys.modules)\n"
        "print(len(sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert len(CORE_MODULES) > 5


# ---- layer contracts, read from the source (as import-linter would) ----

ADVISOR = Path(advisor.__file__).parent
#: What the rule engine may not reach: processes, the host, the clock, the screen. It gets every
#: input as an argument (advisor.advice asks the host's mkfs.xfs, then gates the draft).
ENGINE_FORBIDDEN = ("subprocess", "sh", "os", "time", "shutil", "tempfile", "advisor.system",
                    "advisor.inspect", "advisor.bench", "advisor.commands", "advisor.tui",
                    "advisor.advice", "textual")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _forbidden(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


#: The exceptions: the rule-book loader reads rule files through the regular-file reader, and the
#: decisions' option fragments are merged by the argv builder (pure: it builds lists, runs nothing).
ENGINE_ALLOWED = {"rulebook.py": {"advisor.system.files"}, "decide.py": {"advisor.system.argv"}}


def test_the_engine_never_runs_processes_or_reads_the_host() -> None:
    engine = ADVISOR / "engine"
    modules = sorted(engine.rglob("*.py"))
    assert len(list((engine / "rules").glob("*.py"))) >= 10, "the rule modules are scanned too"
    bad = {f"{m.relative_to(engine)}: {name}" for m in modules for name in _imports(m)
           if _forbidden(name, ENGINE_FORBIDDEN)
           and name not in ENGINE_ALLOWED.get(str(m.relative_to(engine)), set())}
    assert not bad, bad


def test_the_contract_scan_sees_a_forbidden_import(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("import os\nfrom advisor.system.runner import run\n")
    assert {n for n in _imports(planted) if _forbidden(n, ENGINE_FORBIDDEN)} == {
        "os", "advisor.system.runner"}


#: What the TUI may not reach past the Session: the benchmark, the host's tools and files, the
#: device reader, the engine, the audit, the profiler, the live observer and the fleet report.
#: It may use the models (data), the renderers (words shared with the command line),
#: advisor.answers (the command line's flags) and advisor.errors. Imports under
#: `if TYPE_CHECKING:` are names for annotations only (the validation plan's type lives in
#: advisor.bench.plan): they never run, so they are not counted.
TUI_FORBIDDEN = ("subprocess", "sh", "advisor.bench", "advisor.system", "advisor.inspect",
                 "advisor.engine", "advisor.advice", "advisor.audit", "advisor.profile",
                 "advisor.observe", "advisor.fleet", "advisor.commands")
def _runtime_imports(path: Path) -> set[str]:
    """_imports without what an `if TYPE_CHECKING:` block imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING",
                                                                    "typing.TYPE_CHECKING"):
            typing_only |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_the_tui_reaches_the_core_only_through_the_session() -> None:
    tui = ADVISOR / "tui"
    modules = sorted(tui.rglob("*.py"))
    assert len(modules) >= 10
    bad = {f"{m.name}: {name}" for m in modules for name in _runtime_imports(m)
           if _forbidden(name, TUI_FORBIDDEN)}
    assert not bad, bad
    # The scan sees what it must: the session is imported, and a typing-only import is not.
    assert any("advisor.session" in _runtime_imports(m) for m in modules)
    assert "advisor.bench.plan" in _imports(tui / "validate" / "run.py")
    assert "advisor.bench.plan" not in _runtime_imports(tui / "validate" / "run.py")


# ---- what `devices` imports: start-up cost is a contract too ----

#: Modules `devices --json` has no use for: the TUI, the benchmark (fio jobs and their output),
#: the statistics, the rule engine and its rule book, the workload profiler, and the package
#: metadata reader (pydantic's plugin search imports it: ~17 ms of CPU each start).
DEVICES_NEVER_IMPORTS = ("textual", "rich", "advisor.tui", "advisor.bench", "advisor.engine",
                         "advisor.audit", "advisor.profile", "advisor.models.bench",
                         "advisor.models.rule", "statistics", "sh", "importlib.metadata",
                         "tomllib")


def _devices_imports(argv: list[str]) -> list[str]:
    """The modules a `python -m advisor` run of argv had loaded when it finished."""
    code = (
        "import json, sys\n"
        f"sys.argv = ['xfs-advisor', *{argv!r}]\n"
        "from advisor.__main__ import entry\n"
        "code = entry()\n"
        "sys.stderr.write(json.dumps({'code': code, 'modules': sorted(sys.modules)}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stderr)
    assert result["code"] == 0, proc.stderr
    assert proc.stdout.strip()
    modules: list[str] = result["modules"]
    return modules


def test_devices_imports_only_what_it_needs(tmp_path: Path) -> None:
    from tests.inspect.sysfs_builder import Dev, write_tree

    root = write_tree(tmp_path / "host", [Dev("sda", 100 << 30, "8:0")])
    for argv in (["devices", "--json", "--sysroot", str(root)],
                 ["devices", "--sysroot", str(root)],
                 ["devices", "--json", "--fields", "size_bytes", "--sysroot", str(root)]):
        modules = _devices_imports(argv)
        assert "advisor.inspect.devices" in modules  # the check sees the run's own modules
        bad = [m for m in modules if _forbidden(m, DEVICES_NEVER_IMPORTS)]
        assert not bad, f"{' '.join(argv)} imported {bad}"


def test_profile_without_a_workload_file_imports_no_toml_writer(tmp_path: Path) -> None:
    """`profile --json` writes no file: the TOML writer (tomlkit) and the proposal's modules are
    start-up it does not need."""
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "file").write_text("x")
    modules = _devices_imports(["profile", "--json", str(tmp_path / "tree")])
    assert "advisor.profile.walker" in modules
    bad = [m for m in modules if _forbidden(m, ("tomlkit", "advisor.profile.workload_file",
                                                "textual", "advisor.engine", "sh"))]
    assert not bad, f"profile --json imported {bad}"


#: What a proposal without a subcommand (`xfs-advisor --json --device D`, the command people
#: script) has no use for: the other subcommands' modules, and the import costs the runner once
#: paid (sh: asyncio and the package metadata reader, 20-45 ms of CPU each start).
PROPOSAL_NEVER_IMPORTS = ("textual", "advisor.tui", "advisor.bench", "advisor.audit",
                          "advisor.profile", "sh", "asyncio", "importlib.metadata", "statistics")


def test_a_proposal_imports_no_other_subcommand(tmp_path: Path) -> None:
    from tests.inspect.sysfs_builder import Dev, write_tree

    root = write_tree(tmp_path / "host", [Dev("sda", 100 << 30, "8:0")])
    modules = _devices_imports(["--json", "--sysroot", str(root), "--device", "sda"])
    assert "advisor.engine.decide" in modules  # the check sees a proposal being made
    commands = {m for m in modules if m.startswith("advisor.commands.")}
    assert commands == {"advisor.commands.parser", "advisor.commands.propose"}
    bad = [m for m in modules if _forbidden(m, PROPOSAL_NEVER_IMPORTS)]
    assert not bad, f"a proposal imported {bad}"


#: What the interactive advisor's first frame ("reading the devices...") has no use for: the
#: device and workload models, and so pydantic. The first scan loads them, after that frame.
#: (FIRST_FRAME starts the app in-process; the process's own start, with advisor.__main__, is
#: checked further down.)
FIRST_FRAME_NEVER_IMPORTS = ("pydantic", "advisor.models", "advisor.answers",
                             "advisor.render.devices", "advisor.inspect", "pyudev")

FIRST_FRAME = """
import asyncio, json, sys
from advisor.commands.parser import parse
from advisor.tui.app import app_from_args

app = app_from_args(parse(sys.argv[1:])[1])
seen = {}
read_devices = app._read_devices_first

def first_scan():  # called once the first frame is drawn
    table = app.screen.query_one("#device-table")
    seen.update(modules=sorted(sys.modules), title=str(table.border_title))
    read_devices()

app._read_devices_first = first_scan

async def main():
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(600):
            await pilot.pause(0.05)
            if seen and not app.state.reading_devices:
                break
        await pilot.pause()
        table = app.screen.query_one("#device-table")
        seen.update(rows=table.row_count, filled=str(table.border_title),
                    # started, or said why not ("not following hotplug: ...")
                    hotplug=app._observer is not None
                    or any("hotplug" in str(n.message) for n in app._notifications))

asyncio.run(main())
print(json.dumps(seen))
"""


def _first_frame(argv: list[str]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", FIRST_FRAME, *argv], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    seen: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    assert seen["title"].startswith("reading the devices..."), seen["title"]
    assert "advisor.tui.devices" in seen["modules"]  # the check sees the first screen's modules
    bad = [m for m in seen["modules"] if _forbidden(m, FIRST_FRAME_NEVER_IMPORTS)]
    assert not bad, f"{' '.join(argv)}: the first frame imported {bad}"
    return seen


def test_the_tui_paints_its_first_frame_before_loading_the_models(tmp_path: Path) -> None:
    from tests.inspect.sysfs_builder import Dev, write_tree

    root = write_tree(tmp_path / "host", [Dev("sda", 100 << 30, "8:0")])
    seen = _first_frame(["--sysroot", str(root)])
    # ...and the list fills in once they are loaded.
    assert seen["rows"] == 1 and seen["filled"].startswith("1 device ("), seen


def test_the_live_tui_follows_hotplug_only_after_its_first_frame() -> None:
    """On the live system (read only), the hotplug monitor (pyudev) starts with the first scan,
    after the first frame, like the models."""
    seen = _first_frame([])
    assert seen["rows"] >= 1 and "(live system)" in seen["filled"], seen
    assert seen["hotplug"], seen


# ---- the interactive start as a person runs it: `xfs-advisor` in a terminal ----

#: What the interactive advisor's start has no use for until its first screen is drawn: the
#: above, pydantic_core too (advisor.__main__ loads it first for every command but this start),
#: the other steps' screens and what they bring (the plots, the proposal's engine, the benchmark,
#: fio's output, the statistics, the live observer).
FIRST_SCREEN_NEVER_IMPORTS = (*FIRST_FRAME_NEVER_IMPORTS, "pydantic_core", "advisor.tui.workload",
                              "advisor.tui.form", "advisor.tui.proposal", "advisor.tui.validate",
                              "advisor.tui.observe", "advisor.tui.audit", "advisor.tui.help",
                              "textual_plotext", "plotext", "advisor.engine", "advisor.advice",
                              "advisor.bench", "advisor.observe", "statistics")

#: The process's own start (advisor.__main__.entry), stopped once its first frame is drawn:
#: the modules then loaded (a stand-in put in sys.modules without a spec, such as entry()'s
#: pydantic plugin loader, is not a module that was imported), the screen and its list's title,
#: and whether the cyclic garbage collector is on (off for the start, on from the first frame).
FIRST_SCREEN = """
import json, os, sys
import advisor.tui.app as tui

def first_scan(self):  # called once the first frame is drawn
    seen = {"modules": sorted(name for name, module in sys.modules.items()
                              if getattr(module, "__spec__", None) is not None),
            "screen": type(self.screen).__name__,
            "title": str(self.screen.query_one("#device-table").border_title),
            "collecting": __import__("gc").isenabled()}
    with open(os.environ["FIRST_SCREEN"], "w") as out:
        json.dump(seen, out)
    self.exit()

tui.AdvisorApp._read_devices_first = first_scan
sys.argv = ["xfs-advisor", *sys.argv[1:]]
from advisor.__main__ import entry
raise SystemExit(entry())
"""


def _started_in_a_terminal(argv: list[str], out: Path) -> dict[str, Any]:
    """FIRST_SCREEN run with argv in a pseudo-terminal of 120x40 (read until the process ends,
    so that it never blocks writing), and what it saw."""
    import fcntl
    import os
    import select
    import struct
    import termios

    master, slave = os.openpty()
    try:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        env.update(TERM="xterm-256color", FIRST_SCREEN=str(out))
        proc = subprocess.Popen([sys.executable, "-c", FIRST_SCREEN, *argv], stdin=slave,
                                stdout=slave, stderr=slave, env=env, start_new_session=True)
        os.close(slave)
        slave = -1
        screen = b""
        try:
            deadline = time.monotonic() + 60
            while proc.poll() is None and time.monotonic() < deadline:
                if select.select([master], [], [], 0.1)[0]:
                    try:
                        screen += os.read(master, 65536)
                    except OSError:  # the terminal's other side is closed: the process ended
                        break
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        finally:
            proc.kill()
            proc.wait()
        assert proc.returncode == 0, screen[-3000:].decode(errors="replace")
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    seen: dict[str, Any] = json.loads(out.read_text())
    return seen


def test_the_interactive_start_draws_its_first_screen_before_loading_pydantic(
        tmp_path: Path) -> None:
    from tests.inspect.sysfs_builder import Dev, write_tree

    root = write_tree(tmp_path / "host", [Dev("sda", 100 << 30, "8:0")])
    seen = _started_in_a_terminal(["--sysroot", str(root)], tmp_path / "seen.json")
    assert seen["screen"] == "DevicesScreen", seen["screen"]
    assert seen["title"].startswith("reading the devices..."), seen["title"]
    assert seen["collecting"]
    # The check sees the start's own modules, Textual's and the entry's.
    assert {"advisor.tui.devices", "advisor.cli", "textual.app"} <= set(seen["modules"])
    bad = [m for m in seen["modules"] if _forbidden(m, FIRST_SCREEN_NEVER_IMPORTS)]
    assert not bad, f"the first screen imported {bad}"


def test_only_the_plain_interactive_start_goes_without_pydantic_core_first() -> None:
    """advisor.__main__ loads pydantic_core before anything else (Ctrl-C's sake) for every run
    but `xfs-advisor [--sysroot DIR] [--rules DIR]`; anything else, or anything it cannot tell,
    is taken for a command."""
    from advisor.__main__ import _plain_interactive

    for argv in ([], ["--sysroot", "/x"], ["--sysroot=/x"], ["--rules", "r", "--sysroot", "s"]):
        assert _plain_interactive(argv), argv
    for argv in (["--json"], ["devices"], ["tui"], ["--sysroot"], ["--sysroot", "/x", "devices"],
                 ["--sys", "/x"], ["--device", "sda"], ["--sysroot", "/x", "--json"]):
        assert not _plain_interactive(argv), argv
