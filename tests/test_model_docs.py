"""Field descriptions come from attribute docstrings (advisor.models.base.Documented, one parse per
module), exactly as pydantic's own `use_attribute_docstrings` would give them: schemas, the
workload flags' help and the TUI's help read them."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from pydantic import BaseModel
from pydantic._internal._docs_extraction import extract_docstrings_from_cls

import advisor


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
