"""The mkfs.xfs options of a proposal: fragments of every changed decision, merged per flag
(`-i size=1024` and `-i sparse=1` become `-i size=1024,sparse=1`), flags in a fixed order."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from advisor.system import argv

FLAG_ORDER = ("-b", "-c", "-m", "-d", "-i", "-n", "-l", "-s")
#: mkfs.xfs flags that take no argument: after the pairs, so the pairs stay pairs.
BARE_FLAGS = ("-K",)


def merge_options(fragments: Iterable[Sequence[str]]) -> list[str]:
    """Flag/argument pairs merged per flag, then the bare flags (`-K`). Raises ValueError on one
    sub-option given twice."""
    merged: dict[str, list[str]] = {}
    bare: list[str] = []
    for fragment in fragments:
        if list(fragment) in ([f] for f in BARE_FLAGS):
            bare += [f for f in fragment if f not in bare]
            continue
        if len(fragment) % 2:
            raise ValueError(f"mkfs fragment {list(fragment)} is not flag/argument pairs")
        for flag, arg in zip(fragment[::2], fragment[1::2], strict=True):
            parts = merged.setdefault(flag, [])
            for part in arg.split(","):
                key = part.split("=", 1)[0]
                if any(p.split("=", 1)[0] == key for p in parts):
                    raise ValueError(f"{flag} {key} set twice")
                parts.append(part)
    rank = {flag: i for i, flag in enumerate(FLAG_ORDER)}
    order = sorted(merged, key=lambda f: rank.get(f, len(FLAG_ORDER)))
    out: list[str] = []
    for flag in order:
        out += [flag, ",".join(merged[flag])]
    return out + bare


def pairs_only(options: Sequence[str]) -> list[str]:
    """The flag/argument pairs of merged options, without the bare flags."""
    return [o for o in options if o not in BARE_FLAGS]


def mkfs_argv(options: Sequence[str], device_path: str) -> list[str]:
    result = argv.mkfs_xfs(device_path, options)
    return result


def command_line(cmd: Sequence[str]) -> str:
    return argv.shell_line(cmd)
