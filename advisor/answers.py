"""Loading workload answers from a TOML or JSON file and from command-line flags (flags win)."""

from __future__ import annotations

import argparse
import json
import tomllib
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError

from advisor.errors import BadInput
from advisor.models.workload import Storage, Workload
from advisor.system.files import read_text


def _where(loc: tuple[int | str, ...]) -> str:
    """Where an unknown key belongs, when it is an answer in the wrong place or spelt as its
    flag: `storage_kind` at the top level -> "[storage] kind"; '' when it is no answer at all."""
    top = set(Workload.model_fields) - {"storage"}
    storage = set(Storage.model_fields)
    name = str(loc[-1]).removeprefix("--").replace("-", "_")
    in_storage = len(loc) == 2 and loc[0] == "storage"
    if len(loc) == 1 or in_storage:
        if not in_storage and name != str(loc[-1]) and name in top:
            return name
        for candidate in (name, name.removeprefix("storage_")):
            if candidate in storage and (not in_storage or candidate != str(loc[-1])):
                return f"[storage] {candidate}"
        if in_storage and name in top:
            return f"{name} at the top level, above [storage]"
        import difflib  # here: only a misspelt key needs it, not every start

        close = difflib.get_close_matches(name, sorted(top | storage), n=1, cutoff=0.8)
        if close:
            return f"[storage] {close[0]}" if close[0] in storage else close[0]
    return ""


def _first_error(err: ValidationError, origin: str) -> BadInput:
    errors = err.errors()
    e = errors[0]
    key = ".".join(str(p) for p in e["loc"]) or "(top level)"
    msg = e["msg"].removeprefix("Value error, ")
    if e["type"] == "extra_forbidden":
        where = _where(e["loc"])
        msg = f"unknown key (did you mean {where}?)" if where else "unknown key"
        others = [".".join(str(p) for p in x["loc"])
                  + (f" ({_where(x['loc'])}?)" if _where(x["loc"]) else "")
                  for x in errors[1:] if x["type"] == "extra_forbidden"]
        if others and len(others) == len(errors) - 1:
            shown = ", ".join(others[:4]) + (", ..." if len(others) > 4 else "")
            return BadInput(f"{origin}: {key}: {msg} (and {len(others)} more unknown: {shown}; "
                            "`xfs-advisor schema workload` lists every key)")
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return BadInput(f"{origin}: {key}: {msg}{more}")


def parse_workload(data: dict[str, Any], origin: str = "workload") -> Workload:
    try:
        return Workload.model_validate(data)
    except ValidationError as err:
        raise _first_error(err, origin) from None


def load_workload(path: str | Path) -> Workload:
    """Read answers from FILE (.toml, or .json; other names are tried as TOML then JSON). Only a
    regular file of at most 1 MiB is read (a FIFO would hang the read); every way the text can
    defeat the parsers (deep nesting, integers of thousands of digits) is bad input."""
    p = Path(path)
    text = read_text(p, "workload file")
    data: Any
    try:
        if p.suffix.lower() == ".json" or text.lstrip().startswith("{"):
            data = _json(text, p)
        else:
            data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise BadInput(f"{p}: malformed TOML: {err}") from None
    except RecursionError:
        raise BadInput(f"{p}: nested too deeply to be a workload file") from None
    except ValueError as err:  # int() of more digits than sys.get_int_max_str_digits()
        raise BadInput(f"{p}: {str(err).split(';')[0]}") from None
    if not isinstance(data, dict):
        raise BadInput(f"{p}: expected a table of answers at the top level")
    return parse_workload(data, str(p))


def _json(text: str, p: Path) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise BadInput(f"{p}: malformed JSON at line {err.lineno}: {err.msg}") from None


def _plain(value: Any) -> Any:
    """A whole float as an integer (`fsyncs_per_second = 200`, not `200.0`): it loads back equal."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return value


def dump_workload_toml(w: Workload) -> str:
    """Answers as TOML, only those given (a file that loads back to the same Workload). Written by
    tomlkit, which escapes what TOML requires and writes any other character as itself."""
    import tomlkit

    data = w.model_dump(mode="json", exclude_none=True)
    storage = data.pop("storage", {})
    doc = tomlkit.document()
    for k, v in data.items():
        doc.add(k, _plain(v))
    if storage:
        table = tomlkit.table()
        for k, v in storage.items():
            table.add(k, _plain(v))
        doc.add(tomlkit.nl())
        doc.add("storage", table)
    return tomlkit.dumps(doc)


# ---- flags: one per answer, generated from the models so they never drift ----

def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_workload_flags(p: argparse.ArgumentParser, *, suppress: bool = False) -> None:
    """One flag per answer. `suppress`: unset flags leave no attribute (argparse.SUPPRESS), so a
    subcommand's flags do not hide the same ones given before it."""
    g = p.add_argument_group(
        "workload answers (override the --workload file)",
        "Sizes: 16KiB or 16k = 16,384 bytes (binary, as mkfs.xfs counts); 16KB = 16,000 bytes "
        "(decimal, as on a disk's label). Counts: 5000000, 5,000,000, 5M or 1e6 (k, M, G are "
        "decimal for counts).")
    for model, prefix in ((Workload, ""), (Storage, "storage.")):
        for name, field in model.model_fields.items():
            if name == "storage":
                continue
            file_key = f"[storage] {name}" if prefix else name
            help_text = (field.description or "").replace("%", "%%") + \
                f" (in a --workload file: {file_key})"
            # `--kind` alone would not say of what: the storage's answers that need it say so.
            flag = _flag(f"storage_{name}" if prefix and name == "kind" else name)
            g.add_argument(flag, dest=f"answer:{prefix}{name}", metavar="VALUE",
                           default=argparse.SUPPRESS if suppress else None, help=help_text)


def _is_yes_no(annotation: Any) -> bool:
    """True for a bool answer, however wrapped (`YesNo | None`)."""
    return annotation is bool or any(_is_yes_no(a) for a in get_args(annotation))


_BOOL = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


def workload_from_args(args: argparse.Namespace) -> Workload:
    """The --workload file (if any) with the answer flags applied on top."""
    base = load_workload(args.workload) if getattr(args, "workload", None) else Workload()
    data = base.model_dump(exclude_none=True)
    storage = data.setdefault("storage", {})
    given = False
    for key, value in vars(args).items():
        if not key.startswith("answer:") or value is None:
            continue
        given = True
        name = key.removeprefix("answer:")
        in_storage = name.startswith("storage.")
        target, field = (storage, name.removeprefix("storage.")) if in_storage else (data, name)
        model = Storage if target is storage else Workload
        if _is_yes_no(model.model_fields[field].annotation):
            if value.lower() not in _BOOL:
                raise BadInput(f"{_flag(field)}: expected yes or no, got {value!r}")
            target[field] = _BOOL[value.lower()]
        else:
            target[field] = value
    if not given:
        return base
    return parse_workload(data, "flags")
