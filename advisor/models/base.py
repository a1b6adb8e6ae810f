"""The base every advisor model derives from: field docstrings become schema descriptions, and
unknown fields are an error (a typo in a workload or rule file must not pass silently).

The docstrings are read by `Documented` rather than pydantic's `use_attribute_docstrings`, which
finds each class's source by walking the interpreter's frames and asking `inspect.getmodule` of
each (a scan of every loaded module, per frame, per class), then parses the class again: a sixth
of the start-up of every command. Here each module's source is parsed once, for all its classes,
and the descriptions become ordinary `Field(description=...)` before pydantic collects the
fields, so schemas, help texts and the TUI read exactly what they read before
(tests/test_model_docs.py compares them with pydantic's own extraction)."""

from __future__ import annotations

import ast
import functools
import inspect
import sys
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo


@functools.cache
def _module_docstrings(filename: str) -> dict[str, dict[str, str]]:
    """Class qualname -> {attribute: docstring} for every class in a source file: a string
    statement right after an annotated assignment documents it, as pydantic reads it."""
    try:
        with open(filename, encoding="utf-8") as f:
            tree = ast.parse(f.read(), filename)
    except (OSError, SyntaxError, ValueError):
        return {}
    found: dict[str, dict[str, str]] = {}

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                docs: dict[str, str] = {}
                for first, then in zip(node.body, node.body[1:], strict=False):
                    if isinstance(first, ast.AnnAssign) and isinstance(first.target, ast.Name) \
                            and isinstance(then, ast.Expr) \
                            and isinstance(then.value, ast.Constant) \
                            and isinstance(then.value.value, str):
                        docs[first.target.id] = inspect.cleandoc(then.value.value)
                found[prefix + node.name] = docs
                walk(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                walk(node.body, f"{prefix}{node.name}.<locals>.")

    walk(tree.body, "")
    return found


class Documented:
    """Mixin for pydantic models: each annotated attribute's docstring becomes its field's
    description (unless the field gives one)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        annotations = inspect.get_annotations(cls)
        # A class declaring no field has nothing to document: a parametrised generic (`Fact[int]`
        # made in some module) would otherwise parse its maker's whole source for nothing.
        module = sys.modules.get(cls.__module__) if annotations else None
        filename = getattr(module, "__file__", None)
        docs = _module_docstrings(filename).get(cls.__qualname__, {}) if filename else {}
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
            elif default is ...:
                setattr(cls, name, Field(description=doc))
            else:
                setattr(cls, name, Field(default=default, description=doc))
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
