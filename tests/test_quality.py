"""The conventions the code holds itself to: ruff clean everywhere, mypy --strict on advisor/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def test_ruff_is_clean() -> None:
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "advisor", "tests", "scripts"],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_strict_is_clean() -> None:
    # The repository's own .mypy_cache (ignored by git): a run after a small change re-checks
    # only what changed (about 3 s instead of 19 s); mypy keys its cache by file content.
    proc = subprocess.run([sys.executable, "-m", "mypy", "advisor", "--cache-dir",
                           str(REPO / ".mypy_cache")], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_complexity_exception_names_what_ruff_measures() -> None:
    """pyproject.toml lists each file excused from C901 with `function N` for every function over
    the threshold in it: the list is what ruff measures now, so an excuse outlives neither its
    function nor a change in its count, and a file with nothing over the threshold is checked
    again."""
    import json
    import re
    import tomllib

    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    lint = tomllib.loads(text)["tool"]["ruff"]["lint"]
    ignores, most = lint["per-file-ignores"], lint["mccabe"]["max-complexity"]
    listed: dict[str, set[tuple[str, int]]] = {}
    for path, codes in ignores.items():
        if "C901" not in codes or "*" in path:
            continue
        # The comment above the entry starts `name N, name N: why`.
        above = text[:text.index(f'"{path}" = ')].rstrip("\n").splitlines()
        start = len(above)
        while start and above[start - 1].startswith("#"):
            start -= 1
        counts = above[start].split(":", 1)[0] if start < len(above) else ""
        listed[path] = {(name.rpartition(".")[2], int(n))
                        for name, n in re.findall(r"([\w.]+) (\d+)", counts)}
    # Without the configuration (its per-file-ignores would hide what is measured here).
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--config",
                           f"lint.mccabe.max-complexity = {most}", "--select", "C901",
                           "--output-format", "json", *listed], cwd=REPO, capture_output=True,
                          text=True)
    measured: dict[str, set[tuple[str, int]]] = {path: set() for path in listed}
    for found in json.loads(proc.stdout):
        name, n = re.findall(r"`(\w+)` is too complex \((\d+) >", found["message"])[0]
        measured[str(Path(found["filename"]).relative_to(REPO))].add((name, int(n)))
    assert len(listed) > 10
    assert listed == measured, {p: (listed[p], measured[p]) for p in listed
                                if listed[p] != measured[p]}
