"""Loading the rule book: every rules/**/*.toml, validated (the file's shape, its setting, its
function and that function's parameters). `--rules DIR` adds rules or overrides them by id.

Parsing the built-in book's TOML was the largest part of a proposal's start-up (tomllib is pure
Python: 56 files, about 13 ms). advisor/data/parsed-rules.json holds each built-in file's parsed
data beside the SHA-256 of its text; a file whose text has that hash takes the stored data
instead of being parsed again, and everything else (a changed file, a site's rules) is parsed
as before. The data is still validated as if just parsed. `scripts/write_parsed_rules.py`
writes the file; a test fails when it is stale."""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from pathlib import Path

from pydantic import BaseModel, ValidationError

from advisor.engine import rules, site  # noqa: F401  (importing them registers their deciders)
from advisor.engine.context import mkfs_size
from advisor.engine.registry import DECIDERS, validate_params
from advisor.engine.settings import BY_NAME
from advisor.errors import BadInput
from advisor.models.rule import Rule, RuleSwitch
from advisor.models.units import human_size
from advisor.system.files import read_text


def _builtin_rules() -> Path:
    """An installed wheel carries the rule book as advisor/data/rules/ (setup.py builds it from
    the repository's rules/); a checkout, editable install included, reads rules/ in place."""
    package = Path(__file__).resolve().parent.parent
    shipped = package / "data" / "rules"
    return shipped if shipped.is_dir() else package.parent / "rules"


#: The rule book shipped with the advisor.
BUILTIN_RULES = _builtin_rules()

#: The built-in rule files as parsed: {path under the rule book: {"sha256": ..., "data": ...}}.
PARSED_RULES = Path(__file__).resolve().parent.parent / "data" / "parsed-rules.json"


class LoadedRule:
    """A rule as loaded: its file's data, its parameters validated, and where it came from.
    (Plain classes, not dataclasses: making these two compiled six methods at every start.)"""

    __slots__ = ("params", "path", "rule")

    def __init__(self, rule: Rule, params: BaseModel | None, path: Path) -> None:
        self.rule = rule
        self.params = params
        self.path = path

    def __repr__(self) -> str:
        return f"LoadedRule(rule={self.rule.id!r}, path={str(self.path)!r})"


class RuleBook:
    """The rules by id, the folders they came from, and the rules a site switched off."""

    def __init__(self) -> None:
        self.rules: dict[str, LoadedRule] = {}
        self.dirs: list[str] = []
        self.disabled: dict[str, str] = {}
        """Rules a site switched off: id -> why (and where)."""

    def get(self, rule_id: str) -> Rule | None:
        loaded = self.rules.get(rule_id)
        return loaded.rule if loaded else None

    def for_setting(self, setting: str) -> list[LoadedRule]:
        """Rules deciding a setting, highest priority first."""
        found = [r for r in self.rules.values() if r.rule.setting == setting and r.rule.decide]
        return sorted(found, key=lambda r: (-r.rule.priority, r.rule.id))

    def of_kind(self, kind: str) -> list[Rule]:
        return sorted((r.rule for r in self.rules.values() if r.rule.kind == kind),
                      key=lambda r: r.id)

    def for_option(self, text: str) -> list[Rule]:
        """The rules an option's text is about: obsolete advice that matches it, else the rules
        deciding its setting (`-l size=128m` -> log-size; `logbsize=256k` -> logbsize;
        `agcount` -> ag-concurrency, ag-growth), highest priority first; empty when none."""
        words = text.split()
        flag = words[0] if len(words) > 1 and words[0].startswith("-") else None
        parts = [p for w in words[1 if flag else 0:] for p in w.split(",") if p]
        obsolete = [r for r in self.of_kind("obsolete") if r.obsolete and any(
            m in (p, f"{flag} {p}") for p in parts for m in r.obsolete.matches)]
        if obsolete:
            return obsolete
        keys = {p.split("=", 1)[0].lstrip("-") for p in parts}
        keys |= {k.removeprefix("no") for k in keys}  # nodiscard -> discard
        keys |= {"atime" for k in keys if k.endswith("atime")}  # noatime, relatime
        keys |= {"quota" for k in keys if "quota" in k}  # prjquota, pquota
        found = []
        for name in BY_NAME:
            head, _, tail = name.partition(" ")
            if (head == flag or flag is None) and keys & set(tail.split("/")):
                found += [r.rule for r in self.for_setting(name)]
        return found

    def all(self) -> list[Rule]:
        return sorted((r.rule for r in self.rules.values()), key=lambda r: (r.kind, r.id))


def _first_error(err: ValidationError) -> str:
    e = err.errors()[0]
    key = ".".join(str(p) for p in e["loc"]) or "(top level)"
    msg = "unknown key" if e["type"] == "extra_forbidden" else e["msg"].removeprefix(
        "Value error, ")
    return f"{key}: {msg}"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _parsed_rules() -> dict[str, dict[str, object]]:
    """SHA-256 of a rule file's text -> its data as parsed; empty when PARSED_RULES is missing
    or not what write_parsed_rules writes (loading is then only slower)."""
    try:
        with open(PARSED_RULES, "rb") as f:
            stored = json.loads(f.read())
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(stored, dict):
        return {}
    return {entry["sha256"]: entry["data"] for entry in stored.values()
            if isinstance(entry, dict) and isinstance(entry.get("sha256"), str)
            and isinstance(entry.get("data"), dict)}


def parsed_rules_text(directory: Path = BUILTIN_RULES) -> str:
    """What advisor/data/parsed-rules.json holds for the rule files of `directory`: one line per
    file (a rule change is a one-line diff), keys in the file's order (the order the rule's
    parameters are listed in). A file holding a TOML date or time (JSON has none) is left out,
    and parsed at every load."""
    lines = []
    for path in sorted(directory.rglob("*.toml")):
        text = read_text(path, "rule file")
        try:
            data = json.dumps(_read(path), ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            continue
        name = path.relative_to(directory).as_posix()
        lines.append(f'{json.dumps(name)}: {{"sha256": "{_digest(text)}", "data": {data}}}')
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _read(path: Path, parsed: dict[str, dict[str, object]] | None = None) -> dict[str, object]:
    """A rule file's data: as stored in `parsed` (by the SHA-256 of its text), else parsed."""
    text = read_text(path, "rule file")
    if parsed:
        data = parsed.get(_digest(text))
        if data is not None:
            return data
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise BadInput(f"{path}: malformed TOML: {err}") from None
    except (RecursionError, ValueError):  # nesting or an integer beyond what Python parses
        raise BadInput(f"{path}: malformed TOML: nested too deeply or a number too long") \
            from None


#: A number in a rule's prose written as the parameter it comes from, so that a site's copy with
#: other params says its own numbers: `{params.value_bytes:size}` (256 KiB),
#: `{params.value_bytes:k}` (256k, as mkfs.xfs and mount take it), `{params.name}` (as it is).
PARAM_TEXT = re.compile(r"\{params\.(\w+)(?::(size|k))?\}")
#: The fields people read, where PARAM_TEXT is filled in.
PROSE_FIELDS = ("title", "changes", "why", "when_not", "example")


def _with_params(path: Path, rule: Rule, params: BaseModel | None) -> Rule:
    """`rule` with every PARAM_TEXT in its prose replaced by that parameter's value."""
    values = params.model_dump() if params is not None else dict(rule.params)

    def fill(match: re.Match[str]) -> str:
        name, form = match.groups()
        value = values.get(name)
        if value is None or (form and (not isinstance(value, int) or isinstance(value, bool))):
            kind = "whole-number parameter" if form else "parameter"
            raise BadInput(f"{path}: {match.group(0)} in the text names no {kind} of this rule")
        return (human_size(value) if form == "size" else mkfs_size(value) if form == "k"
                else str(value))

    update = {f: PARAM_TEXT.sub(fill, text) for f in PROSE_FIELDS
              if isinstance(text := getattr(rule, f), str) and "{params." in text}
    return rule.model_copy(update=update) if update else rule


def load_switch(path: Path, data: dict[str, object]) -> RuleSwitch:
    try:
        return RuleSwitch.model_validate(data)
    except ValidationError as err:
        raise BadInput(f"{path}: {_first_error(err)}") from None


def load_rule(path: Path, data: dict[str, object] | None = None) -> LoadedRule:
    """One rule file, fully validated; BadInput naming the file and the key otherwise."""
    if data is None:
        data = _read(path)
    try:
        rule = Rule.model_validate(data)
    except ValidationError as err:
        raise BadInput(f"{path}: {_first_error(err)}") from None
    if rule.setting is not None and rule.setting not in BY_NAME:
        raise BadInput(f"{path}: setting: unknown setting {rule.setting!r} (one of: "
                       f"{', '.join(BY_NAME)})")
    if rule.kind == "obsolete" and rule.obsolete is None:
        raise BadInput(f"{path}: obsolete: required for kind = \"obsolete\"")
    if rule.kind in ("mkfs", "mount") and (rule.setting is None or rule.decide is None):
        raise BadInput(f"{path}: a {rule.kind} rule needs a setting and a decide function")
    params: BaseModel | None = None
    if rule.decide is not None:
        if rule.decide not in DECIDERS:
            raise BadInput(f"{path}: decide: unknown function {rule.decide!r} (one of: "
                           f"{', '.join(sorted(DECIDERS))})")
        try:
            params = validate_params(rule.decide, rule.params)
        except ValidationError as err:
            raise BadInput(f"{path}: params.{_first_error(err)}") from None
    return LoadedRule(_with_params(path, rule, params), params, path)


def load_rulebook(extra: Path | str | None = None, *, builtin: Path = BUILTIN_RULES) -> RuleBook:
    """The built-in rules, then those of `extra` (same id: the extra one replaces it)."""
    book = RuleBook()
    parsed = _parsed_rules()
    for directory in (builtin, Path(extra) if extra else None):
        if directory is None:
            continue
        if not directory.is_dir():
            raise BadInput(f"rules directory {directory} does not exist")
        seen: dict[str, Path] = {}
        for path in sorted(directory.rglob("*.toml")):
            data = _read(path, parsed)
            if data.get("enabled") is False:
                switch = load_switch(path, data)
                if switch.id not in book.rules:
                    raise BadInput(f"{path}: id: no rule {switch.id!r} to switch off")
                del book.rules[switch.id]
                book.disabled[switch.id] = f"{switch.why} ({path})"
                continue
            loaded = load_rule(path, data)
            if loaded.rule.id in seen:
                raise BadInput(f"{path}: id: {loaded.rule.id!r} is also used by "
                               f"{seen[loaded.rule.id]}")
            seen[loaded.rule.id] = path
            book.rules[loaded.rule.id] = loaded
        book.dirs.append(str(directory))
    return book
