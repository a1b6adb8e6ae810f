"""The core never imports Textual: `xfs-advisor --json` must start fast and work without a TUI."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

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
