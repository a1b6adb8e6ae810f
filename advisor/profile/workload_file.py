"""Writing measured answers into a workload file, keeping what a scan cannot know.

An existing TOML file is edited line by line, so that its comments, order and other answers stay as
they were: a measured key's line is replaced (its trailing comment kept), a missing key is added at
the end of the top-level table. The result is parsed back and compared with the intended answers;
if a layout defeats the line edit (a quoted key, a value over several lines), the whole file is
rewritten from the model instead, without comments, and the caller is told.

The file is replaced atomically (advisor.system.files): never a FIFO, a device node or a folder;
a symlink is written through to the regular file it names, and the link stays a link.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from typing import Protocol

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


def _toml_value(key: str, value: object) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, int) and key in _SIZE_KEYS:
        exact = format_size(value)  # "64KiB" when a binary unit is exact, else "1500B"
        if exact.endswith("iB"):
            return json.dumps(exact)
    return str(value)


def _trailing_comment(rest: str) -> str:
    """The comment after a TOML value (`123  # note` -> `# note`), or ''."""
    for i, ch in enumerate(rest):
        if ch == "#":
            try:
                tomllib.loads("v = " + rest[:i])
            except tomllib.TOMLDecodeError:
                continue  # a # inside a string
            return rest[i:].strip()
    return ""


def edit_toml(text: str, answers: dict[str, object], tool: str = "profile") -> str:
    """`text` with each answer set on its own line of the top-level table, all else untouched."""
    lines = text.splitlines()
    top_end = next((i for i, line in enumerate(lines) if _TABLE.match(line)), len(lines))
    missing = dict(answers)
    for i in range(top_end):
        m = re.match(r"^(\s*)([A-Za-z0-9_-]+)\s*=(.*)$", lines[i])
        if not m or m.group(2) not in missing:
            continue
        key = m.group(2)
        comment = _trailing_comment(m.group(3)) or MEASURED.format(tool=tool)
        lines[i] = f"{m.group(1)}{key} = {_toml_value(key, missing.pop(key))}  {comment}"
    if missing:
        insert_at = top_end
        while insert_at > 0 and not lines[insert_at - 1].strip():
            insert_at -= 1
        new = [f"{k} = {_toml_value(k, v)}  {MEASURED.format(tool=tool)}"
               for k, v in missing.items()]
        lines[insert_at:insert_at] = new
    return "\n".join(lines) + "\n"


def write_measured_answers(path: str | os.PathLike[str], answers: MeasuredAnswers | Answers,
                           tool: str = "profile") -> tuple[Workload, bool]:
    """Merge `answers` into the workload file at `path` (created when missing). Returns the
    answers the file now holds and whether its comments and layout were kept. Only a regular
    file is written (a symlink: the regular file it names), in one atomic rename."""
    target = write_target(path, "workload file")
    measured = answers.model_dump(exclude_none=True)
    if target.exists():
        existing = load_workload(target)
        text: str | None = read_text(target, "workload file")
    else:
        existing, text = Workload(), None
    merged = answers.merged_into(existing)
    as_json = target.suffix.lower() == ".json" or (text or "").lstrip().startswith("{")
    kept = True
    if as_json:
        new_text = json.dumps(merged.model_dump(mode="json", exclude_none=True), indent=2) + "\n"
    elif text is None:
        new_text = HEADER.format(tool=tool) + edit_toml("", measured, tool).lstrip("\n")
    else:
        new_text = edit_toml(text, measured, tool)
        try:
            kept = parse_workload(tomllib.loads(new_text)) == merged
        except (tomllib.TOMLDecodeError, AdvisorError):
            kept = False
        if not kept:
            new_text = HEADER.format(tool=tool) + dump_workload_toml(merged)
    written = write_text_atomically(target, new_text, "workload file")
    return load_workload(written), kept
