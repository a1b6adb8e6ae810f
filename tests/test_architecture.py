"""The layers of ARCHITECTURE.md, enforced over every module of the package.

Every import counts: at module level, deferred inside a function, and typing-only under
`if TYPE_CHECKING:` (a typing-only edge is still a dependency a reader must follow, and the
way circles hide). A module may import from its own component and from components in lower
layers; components that share a layer are independent of one another. An exception must be
listed below by its module edge (or, for a circle, its exact set of modules) with the reason it
is there; the test fails on an edge that is neither allowed nor listed, on a circle that does
not match a listed one exactly, and on a listed exception that no longer exists. None is listed
today.
"""

from __future__ import annotations

import ast
import shutil
import sys
from pathlib import Path

import pytest

import advisor

ADVISOR = Path(advisor.__file__).parent

#: Components from the top layer down; a component is `advisor.X` (a package or a module).
#: Components in one tuple share a layer and may not import one another.
LAYERS: list[tuple[str, ...]] = [
    ("__main__",),
    ("cli",),
    ("commands",),
    ("console",),
    ("tui",),
    ("session",),
    ("fleet",),
    ("observe",),
    ("audit", "bench", "advice", "profile"),
    ("render",),
    ("engine",),
    ("answers", "inspect"),
    ("system",),
    ("models",),
    ("errors", "signals", "advisor"),
]

#: Module edges ("importer -> imported") allowed to break the layers, each with why (none
#: today). Keyed by the edge itself, not the component pair, so a new import between the same
#: two components still fails.
EXCEPTIONS: dict[str, str] = {}

#: Circles between modules allowed to stay (each exact module set with why; none today).
CIRCLES: dict[frozenset[str], str] = {}


def _component(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _module_name(path: Path, root: Path = ADVISOR) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(name: str, modules: set[str]) -> str | None:
    """The package module an imported name lives in (the longest module prefix of it)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(path: Path, modules: set[str], root: Path = ADVISOR) -> set[str]:
    """Every advisor module a file imports, wherever the import statement stands."""
    me = _module_name(path, root)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            # `from X import y`: the module X.y when y is one, else X itself (the package's own
            # __init__ that every submodule import runs is not counted as an edge).
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                     for a in node.names]
        for name in names:
            target = _resolve(name, modules) if name.startswith("advisor") else None
            if target and target != me:
                found.add(target)
    return found


def graph(root: Path = ADVISOR) -> dict[str, set[str]]:
    files = {p: _module_name(p, root) for p in root.rglob("*.py")}
    modules = set(files.values())
    return {mod: imports_of(p, modules, root) for p, mod in files.items()}


def layer_breaks(edges: dict[str, set[str]]) -> set[str]:
    """Every module edge ("a -> b") that goes upward, sideways or out of the layers."""
    rank = {c: i for i, layer in enumerate(LAYERS) for c in layer}
    bad: set[str] = set()
    for src, targets in edges.items():
        for dst in targets:
            a, b = _component(src), _component(dst)
            if a == b:
                continue
            if a not in rank or b not in rank or rank[a] >= rank[b]:  # unplaced, sibling, upward
                bad.add(f"{src} -> {dst}")
    return bad


def unlisted_breaks(edges: dict[str, set[str]]) -> tuple[list[str], list[str]]:
    """(breaks not in EXCEPTIONS, EXCEPTIONS that no longer happen)."""
    bad = layer_breaks(edges)
    return sorted(bad - set(EXCEPTIONS)), sorted(set(EXCEPTIONS) - bad)


def unlisted_circles(edges: dict[str, set[str]]) -> tuple[list[list[str]], list[list[str]]]:
    """(circles not exactly in CIRCLES, CIRCLES that no longer happen exactly as listed)."""
    found = set(circles(edges))
    return ([sorted(c) for c in found - set(CIRCLES)],
            [sorted(c) for c in set(CIRCLES) - found])


def circles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[frozenset[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                scc = set()
                while True:
                    m = stack.pop()
                    on.discard(m)
                    scc.add(m)
                    if m == node:
                        break
                if len(scc) > 1:
                    out.append(frozenset(scc))
    return out


def test_every_component_is_placed_in_a_layer() -> None:
    components = {_component(m) for m in graph()}
    placed = {c for layer in LAYERS for c in layer}
    assert components <= placed, sorted(components - placed)


def test_no_import_breaks_the_layers_beyond_the_listed_exceptions() -> None:
    new, gone = unlisted_breaks(graph())
    assert not new, f"imports against ARCHITECTURE.md's layers: {new}"
    assert not gone, f"listed exceptions that no longer exist (remove them): {gone}"


def test_no_circle_beyond_the_listed_ones() -> None:
    new, gone = unlisted_circles(graph())
    assert not new, f"import circles (each must match a listed one exactly): {new}"
    assert not gone, f"listed circles that no longer exist as listed (update them): {gone}"


def _plant(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "advisor"
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def test_the_scan_sees_deferred_typing_only_and_relative_imports(tmp_path: Path) -> None:
    root = _plant(tmp_path, {
        "__init__.py": "",
        "models/__init__.py": "",
        "models/base.py": "def f():\n    from advisor.session import Session\n",
        "session.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                      "    from advisor.tui import app\nfrom .models import base\n",
        "tui/__init__.py": "",
        "tui/app.py": "",
    })
    edges = graph(root)
    assert edges["advisor.models.base"] == {"advisor.session"}  # deferred, upward
    assert edges["advisor.session"] == {"advisor.tui.app", "advisor.models.base"}
    bad = layer_breaks(edges)
    assert {"advisor.models.base -> advisor.session", "advisor.session -> advisor.tui.app"} <= bad
    assert circles(edges) == [frozenset({"advisor.session", "advisor.models.base"})]


def _scratch_copy(tmp_path: Path) -> Path:
    root = tmp_path / "advisor"
    shutil.copytree(ADVISOR, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _add_line(path: Path, line: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")


def test_the_scratch_copy_of_the_package_passes_as_it_is(tmp_path: Path) -> None:
    edges = graph(_scratch_copy(tmp_path))
    assert unlisted_breaks(edges) == ([], [])
    assert unlisted_circles(edges) == ([], [])


def test_a_new_upward_import_fails_even_between_components_already_listed(
        tmp_path: Path) -> None:
    root = _scratch_copy(tmp_path)
    # models -> session and engine.settings -> render.fstab, the second deferred inside a
    # function, so only a scan of every import sees it.
    _add_line(root / "models" / "device.py", "from advisor.session import Session  # noqa")
    _add_line(root / "engine" / "settings.py",
              "def _late() -> None:\n    from advisor.render import fstab  # noqa")
    new, gone = unlisted_breaks(graph(root))
    assert new == ["advisor.engine.settings -> advisor.render.fstab",
                   "advisor.models.device -> advisor.session"]
    assert gone == []


def test_a_circle_must_match_a_listed_one_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "CIRCLES", {frozenset({"a", "b"}): "listed"})
    grown = {"a": {"b"}, "b": {"c"}, "c": {"a"}}
    assert unlisted_circles(grown) == ([["a", "b", "c"]], [["a", "b"]])
    assert unlisted_circles({"a": {"b"}, "b": {"a"}}) == ([], [])


def test_a_new_circle_fails(tmp_path: Path) -> None:
    root = _scratch_copy(tmp_path)
    # engine.settings <-> engine.rules (same component, so no layer break) is a new circle.
    _add_line(root / "engine" / "rules" / "__init__.py",
              "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
              "    from advisor.engine import settings  # noqa")
    _add_line(root / "engine" / "settings.py", "from advisor.engine import rules  # noqa")
    new, _ = unlisted_circles(graph(root))
    assert ["advisor.engine.rules", "advisor.engine.settings"] in new
