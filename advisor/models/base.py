"""The base every advisor model derives from: field docstrings become schema descriptions, and
unknown fields are an error (a typo in a workload or rule file must not pass silently).

The docstrings are read by `Documented` rather than pydantic's `use_attribute_docstrings`, which
finds each class's source by walking the interpreter's frames and asking `inspect.getmodule` of
each (a scan of every loaded module, per frame, per class), then parses the class again: a sixth
of the start-up of every command. Here the package's own models take their docstrings from
advisor/data/model-docs.json, each source file's as parsed beside the SHA-256 of its text, while
the file's text has that hash (`scripts/write_model_docs.py` writes it; a test fails when it is
stale); any other class (a changed file, a model outside the package) has only its own lines
parsed. The descriptions become ordinary `Field(description=...)` before pydantic collects the
fields, so schemas, help texts and the TUI read exactly what they read before
(tests/test_model_docs.py compares them with pydantic's own extraction)."""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import json
import os
import re
import sys
import textwrap
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined


def _docs_of(node: ast.ClassDef) -> dict[str, str]:
    """{attribute: docstring} of one class: a string statement right after an annotated
    assignment documents it, as pydantic reads it."""
    docs: dict[str, str] = {}
    for first, then in zip(node.body, node.body[1:], strict=False):
        if isinstance(first, ast.AnnAssign) and isinstance(first.target, ast.Name) \
                and isinstance(then, ast.Expr) \
                and isinstance(then.value, ast.Constant) \
                and isinstance(then.value.value, str):
            docs[first.target.id] = inspect.cleandoc(then.value.value)
    return docs


@functools.cache
def _module_docstrings(filename: str) -> dict[str, dict[str, str]]:
    """Class qualname -> {attribute: docstring} for every class in a source file."""
    try:
        with open(filename, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename)
    except (OSError, SyntaxError, ValueError):
        return {}
    found: dict[str, dict[str, str]] = {}

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                found[prefix + node.name] = _docs_of(node)
                walk(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                walk(node.body, f"{prefix}{node.name}.<locals>.")

    walk(tree.body, "")
    return found


_CLASS_LINE = re.compile(r"^( *)class (\w+)\b", re.MULTILINE)


@functools.cache
def _class_starts(filename: str) -> tuple[str, dict[str, list[tuple[int, int]]]] | None:
    """A source file's text, and where each `class NAME` line is (by name): its offset and its
    indentation."""
    try:
        with open(filename, encoding="utf-8") as f:
            text = f.read()
    except (OSError, ValueError):
        return None
    starts: dict[str, list[tuple[int, int]]] = {}
    for match in _CLASS_LINE.finditer(text):
        starts.setdefault(match.group(2), []).append((match.start(), len(match.group(1))))
    return text, starts


@functools.cache
def _statement_at(indent: int) -> re.Pattern[str]:
    """A line starting a statement indented no deeper than `indent` spaces (a comment, a blank
    line or a closing bracket does not)."""
    return re.compile(rf"^ {{0,{indent}}}[^ \n#)\]]", re.MULTILINE)


#: The package's folder: model-docs.json holds its files by their path under it.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Every package file's class docstrings as parsed: {path under the package: {"sha256": ...,
#: "classes": {qualname: {attribute: docstring}}}}.
MODEL_DOCS = os.path.join(_PACKAGE, "data", "model-docs.json")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@functools.cache
def _stored_docs() -> dict[str, Any]:
    """MODEL_DOCS as loaded; empty when it is missing or not a JSON object (classes are then
    parsed, only more slowly)."""
    try:
        with open(MODEL_DOCS, "rb") as f:
            stored = json.loads(f.read())
    except (OSError, ValueError, RecursionError):
        return {}
    return stored if isinstance(stored, dict) else {}


def _is_docs(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items())


@functools.cache
def _stored_file_docs(filename: str) -> dict[str, dict[str, str]] | None:
    """Class qualname -> {attribute: docstring} of a package file as MODEL_DOCS holds it, when
    it holds the file with the hash of its current text and in the shape written; else None."""
    if not filename.startswith(_PACKAGE + os.sep):
        return None
    entry = _stored_docs().get(filename[len(_PACKAGE) + 1:].replace(os.sep, "/"))
    if not isinstance(entry, dict) or not isinstance(entry.get("classes"), dict) \
            or not all(_is_docs(docs) for docs in entry["classes"].values()):
        return None
    try:
        with open(filename, "rb") as f:
            text = f.read()
    except OSError:
        return None
    return entry["classes"] if entry.get("sha256") == _digest(text) else None


def model_docs_text(files: Iterable[str]) -> str:
    """What advisor/data/model-docs.json holds for these package files (scripts/write_model_docs.py
    names those defining a model): one line per file (a change is a one-line diff), each file's
    classes as a parse of the whole file finds them (the classes documenting nothing left out)."""
    lines = []
    for path in sorted(set(files)):
        classes = {k: v for k, v in _module_docstrings(path).items() if v}
        with open(path, "rb") as f:
            digest = _digest(f.read())
        where = os.path.relpath(path, _PACKAGE).replace(os.sep, "/")
        lines.append(f'{json.dumps(where)}: {{"sha256": "{digest}", "classes": '
                     f'{json.dumps(classes, ensure_ascii=False)}}}')
    return "{\n" + ",\n".join(sorted(lines)) + "\n}\n"


def _class_docstrings(filename: str, qualname: str) -> dict[str, str]:
    """{attribute: docstring} of one class: as MODEL_DOCS holds it when it holds the file as it
    is. Otherwise only the class's own lines are parsed when they can be told (the file's one
    `class NAME` line and the lines under it, up to the first statement indented no deeper): a
    rule module is mostly functions, and parsing it whole for its parameters' class was most of
    its import. Cut anywhere else (inside a bracket or a string that goes on at the margin), the
    lines do not parse, and the whole file is parsed."""
    stored = _stored_file_docs(filename)
    if stored is not None:
        return stored.get(qualname, {})
    found = _class_starts(filename) if "<locals>" not in qualname else None
    if found is not None:
        text, starts = found
        where = starts.get(qualname.rpartition(".")[2], [])
        if len(where) == 1:
            start, indent = where[0]
            after = text.find("\n", start) + 1 or len(text)
            end = _statement_at(indent).search(text, after)
            lines = text[start:end.start() if end else len(text)]
            try:
                tree = ast.parse(textwrap.dedent(lines) if indent else lines)
            except (SyntaxError, ValueError):
                tree = None
            if tree is not None and len(tree.body) == 1 and isinstance(tree.body[0], ast.ClassDef):
                return _docs_of(tree.body[0])
    return _module_docstrings(filename).get(qualname, {})


class Documented:
    """Mixin for pydantic models: each annotated attribute's docstring becomes its field's
    description (unless the field gives one)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        annotations = inspect.get_annotations(cls)
        # A class declaring no field has nothing to document: a parametrised generic (`Fact[int]`
        # made in some module) would otherwise parse its maker's whole source for nothing.
        module = sys.modules.get(cls.__module__) if annotations else None
        filename = getattr(module, "__file__", None)
        docs = _class_docstrings(filename, cls.__qualname__) if filename else {}
        for name, doc in docs.items():
            if name not in annotations or name.startswith("_") or \
                    str(annotations[name]).startswith(("ClassVar", "typing.ClassVar")):
                continue
            default = cls.__dict__.get(name, ...)
            if isinstance(default, FieldInfo):
                if default.description is None:
                    # What pydantic's own extraction and Field(description=) amount to: pydantic
                    # rebuilds the field from the attributes set on it.
                    default.description = doc
                    default._attributes_set["description"] = doc
            else:
                # What Field(default=..., description=...) returns, without Field's forty
                # keyword arguments passed on unset (a tenth of a model's build, per field).
                setattr(cls, name, FieldInfo(
                    default=PydanticUndefined if default is ... else default, description=doc))
        for value in cls.__dict__.values():
            if isinstance(value, FieldInfo) and value.default_factory in _FAST_FACTORIES:
                value.default_factory = _FAST_FACTORIES[value.default_factory]
                value._attributes_set["default_factory"] = value.default_factory
        super().__init_subclass__(**kwargs)


def _new_list() -> list[Any]:
    return []


def _new_dict() -> dict[Any, Any]:
    return {}


#: The same empty containers from Python functions: pydantic asks each default factory for its
#: signature, which for the builtin `list` means parsing its text signature (~0.1 ms each).
_FAST_FACTORIES: dict[Any, Any] = {list: _new_list, dict: _new_dict}


class Model(Documented, BaseModel):
    model_config = ConfigDict(extra="forbid")


class FrozenModel(Documented, BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
