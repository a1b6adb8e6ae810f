"""The workload form, generated from the Workload model: one question per answer, its help text
from the field's docstring, and validation by the model itself (so the form never drifts from the
contract). Pure: no widgets."""

from __future__ import annotations

import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

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
    notes: dict[str, str] = field(default_factory=dict)
    """Question key -> what a valid answer was read as, where the text leaves doubt ("16KB" is
    16,000 bytes, not 16,384)."""


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
        workload = Workload.model_validate(data)
    except ValidationError as err:
        field_errors: dict[str, str] = {}
        form_errors: list[str] = []
        for e in err.errors():
            loc = [str(p) for p in e["loc"]]
            key = ".".join(loc[:2]) if loc[:1] == ["storage"] else (loc[0] if loc else "")
            if key in values:
                field_errors.setdefault(key, plain_words(e, is_size=key in _SIZE_KEYS))
            else:
                form_errors.append(plain_words(e))
        return FormResult(None, field_errors, "; ".join(form_errors) or None,
                          _size_notes(values))
    return FormResult(workload, {}, None, _size_notes(values))


_SIZE_KEYS = frozenset(q.key for q in questions() if q.is_size)
#: Units that count in powers of ten (as on a disk's label), told apart from KiB, MiB...
_DECIMAL = re.compile(r"^\s*[\d.]+\s*([kmgtp]b)\s*$", re.IGNORECASE)


def _size_notes(values: dict[str, FormValue]) -> dict[str, str]:
    """For each size written with a unit, the bytes it means; decimal units said as such."""
    notes: dict[str, str] = {}
    for key in _SIZE_KEYS:
        text = values.get(key)
        if not isinstance(text, str) or not any(c.isalpha() for c in text):
            continue
        try:
            n = parse_size(text)
        except ValueError:
            continue  # its error is shown instead
        decimal = _DECIMAL.match(text)
        if decimal:
            unit = decimal.group(1)
            binary = unit[0].upper() + "iB"
            notes[key] = f"= {n:,} bytes ({unit} is decimal; {binary} is binary)"
        else:
            notes[key] = f"= {n:,} bytes"
    return notes


def _label(key: str) -> str:
    return key.replace("_", " ")


def _bound(value: Any, is_size: bool) -> str:
    if is_size and isinstance(value, int):
        return format_size(value)
    if isinstance(value, int | float) and float(value).is_integer():
        return f"{int(value):,}"
    return str(value)


def plain_words(error: ErrorDetails, *, is_size: bool = False) -> str:
    """The validation error as a person reads it: no library wording ("unable to parse string
    as an integer"), no field names with underscores."""
    kind = error["type"]
    ctx = error.get("ctx") or {}
    bounds = {"greater_than_equal": ("at least", "ge"), "greater_than": ("more than", "gt"),
              "less_than_equal": ("at most", "le"), "less_than": ("less than", "lt")}
    if kind in bounds:
        words, name = bounds[kind]
        return f"must be {words} {_bound(ctx.get(name), is_size)}"
    simple = {
        "int_parsing": "not a whole number (digits only, e.g. 200000)",
        "int_from_float": "not a whole number",
        "int_type": "not a whole number",
        "float_parsing": "not a number (e.g. 50 or 2.5)",
        "float_type": "not a number",
        "finite_number": "must be a finite number",
        "bool_parsing": "answer yes or no",
        "literal_error": f"choose one of {ctx.get('expected', 'the listed answers')}",
        "string_too_long": f"too long (at most {ctx.get('max_length')} characters)",
        "extra_forbidden": "not a question the advisor asks",
    }
    if kind in simple:
        return simple[kind]
    message = error["msg"].removeprefix("Value error, ")
    # Field names a validator wrote (eventual_size) as the form labels them (eventual size).
    for key in sorted(_ALL_KEYS, key=len, reverse=True):
        message = message.replace(key, _label(key))
    return message


_ALL_KEYS = frozenset(q.key.removeprefix("storage.") for q in questions())


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
