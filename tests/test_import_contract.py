"""Layer contracts: the core never imports Textual (`xfs-advisor --json` must start fast and work
without a TUI), and the rule engine never reaches the host."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

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


#: The one exception: the rule-book loader reads rule files through the regular-file reader.
ENGINE_ALLOWED = {"rulebook.py": {"advisor.system.files"}}


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
