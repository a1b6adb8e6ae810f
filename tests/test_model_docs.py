"""Field descriptions come from attribute docstrings (advisor.models.base.Documented: the stored
advisor/data/model-docs.json while a file is unchanged, else a parse of the class), exactly as
pydantic's own `use_attribute_docstrings` would give them: schemas, the workload flags' help and
the TUI's help read them."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import pkgutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import BaseModel
from pydantic._internal._docs_extraction import extract_docstrings_from_cls

import advisor
from advisor.models import base


def _models() -> list[type[BaseModel]]:
    for info in pkgutil.walk_packages(advisor.__path__, "advisor."):
        if not info.name.startswith("advisor.tui"):
            importlib.import_module(info.name)
    found: list[type[BaseModel]] = []
    stack = list(BaseModel.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.startswith("advisor.") and "[" not in cls.__qualname__:
            found.append(cls)
    return found


def test_every_field_docstring_is_its_description() -> None:
    models = _models()
    assert len(models) > 50
    checked = 0
    for cls in models:
        own = inspect.get_annotations(cls)
        for name, doc in extract_docstrings_from_cls(cls, use_inspect=True).items():
            if name in own and name in cls.model_fields:
                assert cls.model_fields[name].description == doc, f"{cls.__qualname__}.{name}"
                checked += 1
    assert checked > 300


def test_an_explicit_description_wins() -> None:
    from pydantic import Field

    from advisor.models.base import Model

    class Sample(Model):
        plain: int = 1
        """From the docstring."""
        given: int = Field(default=2, description="Given.")
        """Not used."""
        needed: str
        """Required, documented."""
        items: list[int] = Field(default_factory=list)
        """A fresh list per instance."""

    fields = Sample.model_fields
    assert (fields["plain"].description, fields["given"].description,
            fields["needed"].description) == ("From the docstring.", "Given.",
                                              "Required, documented.")
    assert fields["needed"].is_required() and Sample(needed="x").plain == 1
    one, two = Sample(needed="x"), Sample(needed="y")
    one.items.append(1)
    assert (one.items, two.items) == ([1], []) and fields["items"].description


def test_a_class_whose_lines_go_on_at_the_margin_is_still_read(tmp_path: object) -> None:
    """Only a class's own lines are parsed; where they cannot be told from the indentation (a
    string or a bracket going on at the margin, a name used twice), the whole file is, and the
    descriptions are the same as pydantic's own."""
    import importlib.util
    import sys
    from pathlib import Path

    source = '''from pydantic import Field
from advisor.models.base import Model


class AtTheMargin(Model):
    first: int = 1
    """First,
on two lines."""
    second: list[int] = Field(
default_factory=list)
    """Second."""


class Twice(Model):
    x: int = 0
    """The outer one."""

    class Twice(Model):
        y: int = 0
        """The inner one."""


class Plain(Model):
    z: int = 0
    """Plain."""
'''
    path = Path(str(tmp_path)) / "margin_models.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("margin_models", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["margin_models"] = module
    try:
        spec.loader.exec_module(module)
        for cls in (module.AtTheMargin, module.Twice, module.Twice.Twice, module.Plain):
            expected = extract_docstrings_from_cls(cls, use_inspect=True)
            assert expected, cls.__qualname__
            assert {n: f.description for n, f in cls.model_fields.items()
                    if n in expected} == expected, cls.__qualname__
    finally:
        del sys.modules["margin_models"]


def _load(path: Path) -> ModuleType:
    """The module at `path`, imported under its file's name (and forgotten after)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[path.stem]
    return module


@pytest.fixture
def fresh_docs() -> Iterator[None]:
    """base's caches emptied before and after, so that a stored file patched in is read and
    forgotten."""
    for cached in (base._stored_docs, base._stored_file_docs):
        cached.cache_clear()
    yield
    for cached in (base._stored_docs, base._stored_file_docs):
        cached.cache_clear()


def test_the_stored_model_docs_are_current() -> None:
    """advisor/data/model-docs.json holds the class docstrings of every package file that defines
    a model, with the hash of its current text, so that no model parses its source at start."""
    script = Path(__file__).resolve().parent.parent / "scripts" / "write_model_docs.py"
    files = _load(script).model_files()
    assert Path(base.MODEL_DOCS).read_text(encoding="utf-8") == base.model_docs_text(files), (
        "advisor/data/model-docs.json is stale: .venv/bin/python scripts/write_model_docs.py")
    stored = json.loads(Path(base.MODEL_DOCS).read_text(encoding="utf-8"))
    assert {"models/device.py", "engine/rules/log_size.py"} <= set(stored)
    # Every model of the package is in a stored file, so none parses its source.
    for cls in _models():
        if issubclass(cls, base.Documented):
            where = sys.modules[cls.__module__].__file__
            assert where is not None and base._stored_file_docs(where) is not None, cls


_SOURCE = '''from advisor.models.base import Model


class Stored(Model):
    x: int = 0
    """From the source."""
'''


def test_a_file_whose_text_has_its_stored_hash_is_not_parsed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_docs: None) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    source = package / "stored_models.py"
    source.write_text(_SOURCE)
    stored = tmp_path / "model-docs.json"
    stored.write_text(json.dumps({"stored_models.py": {
        "sha256": base._digest(source.read_bytes()),
        "classes": {"Stored": {"x": "As stored."}}}}))
    monkeypatch.setattr(base, "_PACKAGE", str(package))
    monkeypatch.setattr(base, "MODEL_DOCS", str(stored))
    assert _load(source).Stored.model_fields["x"].description == "As stored."
    # Any change to the text is parsed from the file.
    changed = package / "changed_models.py"
    changed.write_text(_SOURCE + "\n")
    stored.write_text(json.dumps({"changed_models.py": {
        "sha256": base._digest(source.read_bytes()),
        "classes": {"Stored": {"x": "As stored."}}}}))
    base._stored_docs.cache_clear()
    assert _load(changed).Stored.model_fields["x"].description == "From the source."


@pytest.mark.parametrize("content", [b"", b"{not json", b"[1, 2]", b'{"m.py": {"sha256": 1}}',
                                     b'{"m.py": {"sha256": "", "classes": {"Stored": [1]}}}',
                                     b"[" * 100_000],
                         ids=["empty", "not-json", "a-list", "no-classes", "classes-not-docs",
                              "nested-too-deep"])
def test_a_damaged_model_docs_file_is_ignored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_docs: None,
        content: bytes) -> None:
    source = tmp_path / "m.py"
    source.write_text(_SOURCE)
    stored = tmp_path / "model-docs.json"
    stored.write_bytes(content.replace(b'"sha256": ""',
                                       f'"sha256": "{base._digest(source.read_bytes())}"'.encode()))
    monkeypatch.setattr(base, "_PACKAGE", str(tmp_path))
    monkeypatch.setattr(base, "MODEL_DOCS", str(stored))
    assert _load(source).Stored.model_fields["x"].description == "From the source."
