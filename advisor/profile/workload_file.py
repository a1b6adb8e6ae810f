"""Writing measured answers into a workload file, keeping what a scan cannot know.

An existing TOML file is edited with tomlkit, which keeps its comments, order and other answers
as they were: a measured key's value is replaced (its trailing comment kept), a missing key is
added to the top-level table, before the first [table]. The result is parsed back and compared
with the intended answers; should the edit not give them, the whole file is rewritten from the
model instead, without comments, and the caller is told.

The file is replaced atomically (advisor.system.files): never a FIFO, a device node or a folder;
a symlink is written through to the regular file it names, and the link stays a link.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from typing import Protocol

import tomlkit
import tomlkit.exceptions
from tomlkit.items import Item

from advisor.answers import dump_workload_toml, load_workload, parse_workload
from advisor.errors import AdvisorError
from advisor.models.profile import MeasuredAnswers
from advisor.models.units import format_size
from advisor.models.workload import Workload
from advisor.system.files import read_text, write_target, write_text_atomically

HEADER = ("# Workload answers for xfs-advisor (see `xfs-advisor schema workload`).\n"
          "# Lines marked 'measured' come from `xfs-advisor {tool}`; the rest are yours.\n")
MEASURED = "# measured by xfs-advisor {tool}"
_TABLE = re.compile(r"^\s*\[")
_SIZE_KEYS = {"median_file_size", "largest_xattr_value"}


class Answers(Protocol):
    """Measured answers (profile's or observe's): their fields are Workload fields."""

    def model_dump(self, *, exclude_none: bool = ...) -> dict[str, object]: ...

    def changes_to(self, workload: Workload) -> dict[str, object]: ...

    def merged_into(self, workload: Workload) -> Workload: ...


_MEASURED_LINE = re.compile(r"^\s*([A-Za-z0-9_-]+)\s*=.*#\s*measured by xfs-advisor (\w+)\s*$")


def measured_in(text: str) -> dict[str, str]:
    """answer -> the command that measured it (`observe`, `profile`), from the marks
    --write-workload leaves on a TOML workload file's top-level lines."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if _TABLE.match(line):
            break
        m = _MEASURED_LINE.match(line)
        if m:
            found[m.group(1)] = m.group(2)
    return found


def _toml_value(key: str, value: object) -> object:
    if isinstance(value, int) and not isinstance(value, bool) and key in _SIZE_KEYS:
        exact = format_size(value)  # "64KiB" when a binary unit is exact, else "1500B"
        if exact.endswith("iB"):
            return exact
    return value


def edit_toml(text: str, answers: dict[str, object], tool: str = "profile",
              notes: dict[str, str] | None = None) -> str:
    """`text` with each answer set in the top-level table, all else untouched; an answer this
    edit sets is marked as measured by `tool` (after its note in `notes`, if any) unless its
    line had a comment of its own."""
    doc = tomlkit.parse(text)
    for key, value in answers.items():
        item = tomlkit.item(_toml_value(key, value))
        old = doc.item(key) if key in doc else None
        if isinstance(old, Item) and old.trivia.comment:
            item.trivia.comment = old.trivia.comment
            item.trivia.comment_ws = old.trivia.comment_ws or "  "
        else:
            note = (notes or {}).get(key)
            item.trivia.comment = (f"# {note} " if note else "") + MEASURED.format(tool=tool)
            item.trivia.comment_ws = "  "
        if old is None:
            doc.add(key, item)
        else:
            doc[key] = item
    return tomlkit.dumps(doc)


def write_measured_answers(path: str | os.PathLike[str], answers: MeasuredAnswers | Answers,
                           tool: str = "profile",
                           notes: dict[str, str] | None = None) -> tuple[Workload, bool]:
    """Merge `answers` into the workload file at `path` (created when missing; a lower bound
    never lowers an answer the file gives: Answers.changes_to). Returns the
    answers the file now holds and whether its comments and layout were kept. Only a regular
    file is written (a symlink: the regular file it names), in one atomic rename."""
    target = write_target(path, "workload file")
    if target.exists():
        existing = load_workload(target)
        text: str | None = read_text(target, "workload file")
    else:
        existing, text = Workload(), None
    measured = answers.changes_to(existing)
    merged = answers.merged_into(existing)
    as_json = target.suffix.lower() == ".json" or (text or "").lstrip().startswith("{")
    kept = True
    if as_json:
        new_text = json.dumps(merged.model_dump(mode="json", exclude_none=True), indent=2) + "\n"
    elif text is None:
        new_text = HEADER.format(tool=tool) + edit_toml("", measured, tool, notes)
    else:
        try:
            new_text = edit_toml(text, measured, tool, notes)
            kept = parse_workload(tomllib.loads(new_text)) == merged
        except (tomllib.TOMLDecodeError, tomlkit.exceptions.TOMLKitError, AdvisorError):
            kept = False
        if not kept:
            new_text = HEADER.format(tool=tool) + dump_workload_toml(merged)
    written = write_text_atomically(target, new_text, "workload file")
    return load_workload(written), kept
