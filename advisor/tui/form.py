"""The workload form, generated from the Workload model: one question per answer, its help text
from the field's docstring, and validation by the model itself (so the form never drifts from the
contract). Pure: no widgets."""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError
from pydantic.fields import FieldInfo

from advisor.models.units import format_size, parse_size
from advisor.models.workload import Storage, Workload

QuestionKind = Literal["text", "yes-no", "choice"]


@dataclass(frozen=True)
class Question:
    """One answer of the workload contract, as the form asks it."""

    key: str
    """`access`, or `storage.raid_stripe_unit` for the storage answers."""
    kind: QuestionKind
    help: str
    choices: tuple[str, ...] = ()
    is_size: bool = False
    """Answers in bytes that accept "16KiB" and are shown that way."""

    @property
    def widget_id(self) -> str:
        return "q-" + self.key.replace(".", "--").replace("_", "-")

    @property
    def label(self) -> str:
        return self.key.replace("storage.", "storage: ").replace("_", " ")


def _is_size(annotation: Any) -> bool:
    for arg in typing.get_args(annotation):
        for meta in getattr(arg, "__metadata__", ()):
            if getattr(meta, "func", None) is parse_size:
                return True
    return False


def _question(key: str, info: FieldInfo) -> Question:
    annotation = info.annotation
    origin = typing.get_origin(annotation)
    is_union = isinstance(annotation, types.UnionType) or origin is typing.Union
    args = typing.get_args(annotation) if is_union else (annotation,)
    real = [a for a in args if a is not type(None)]
    help_text = info.description or ""
    if real == [bool]:
        return Question(key, "yes-no", help_text)
    if len(real) == 1 and typing.get_origin(real[0]) is Literal:
        return Question(key, "choice", help_text, tuple(str(c) for c in typing.get_args(real[0])))
    return Question(key, "text", help_text, is_size=_is_size(annotation))


def questions() -> list[Question]:
    """Every answer of the contract, in the model's order, storage answers last."""
    top = Workload.model_fields.items()
    found = [_question(name, info) for name, info in top if name != "storage"]
    found += [_question(f"storage.{name}", info) for name, info in Storage.model_fields.items()]
    return found


FormValue = str | bool | None
"""A field's content: text (empty: don't know), True/False, or None for don't know."""


@dataclass(frozen=True)
class FormResult:
    """The form's content checked against the contract."""

    workload: Workload | None
    """The answers, when all of them are valid."""
    field_errors: dict[str, str]
    """Question key -> message, for the error shown next to that field."""
    form_error: str | None
    """An error about several answers together (e.g. both growth answers given)."""


def check(values: dict[str, FormValue]) -> FormResult:
    """Validate the form's content with the Workload model; errors keyed by question."""
    data: dict[str, Any] = {}
    storage: dict[str, Any] = {}
    for key, value in values.items():
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        clean = value.strip() if isinstance(value, str) else value
        if key.startswith("storage."):
            storage[key.removeprefix("storage.")] = clean
        else:
            data[key] = clean
    if storage:
        data["storage"] = storage
    try:
        return FormResult(Workload.model_validate(data), {}, None)
    except ValidationError as err:
        field_errors: dict[str, str] = {}
        form_errors: list[str] = []
        for e in err.errors():
            loc = [str(p) for p in e["loc"]]
            message = e["msg"].removeprefix("Value error, ")
            key = ".".join(loc[:2]) if loc[:1] == ["storage"] else (loc[0] if loc else "")
            if key in values:
                field_errors.setdefault(key, message)
            else:
                form_errors.append(message)
        return FormResult(None, field_errors, "; ".join(form_errors) or None)


def values_of(workload: Workload) -> dict[str, FormValue]:
    """The form's content for a workload (sizes shown as "64KiB")."""
    out: dict[str, FormValue] = {}
    dumped = workload.model_dump(mode="json")
    storage = dumped.pop("storage", {}) or {}
    for question in questions():
        source = storage if question.key.startswith("storage.") else dumped
        value = source.get(question.key.removeprefix("storage."))
        if value is None:
            out[question.key] = None
        elif isinstance(value, bool):
            out[question.key] = value
        elif question.is_size and isinstance(value, int):
            out[question.key] = format_size(value)
        elif isinstance(value, float) and value.is_integer():
            out[question.key] = str(int(value))
        else:
            out[question.key] = str(value)
    return out
