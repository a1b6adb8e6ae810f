"""fstab text, parsed (fstab(5)): one entry per line of at least three fields; comments and blank
lines skipped; anything else is reported, not guessed at."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.inspect.parsers import unescape_mount_path


@dataclass(frozen=True)
class FstabEntry:
    """One fstab line: what to mount, where, as what, with which options."""

    line: int
    spec: str
    mountpoint: str
    fstype: str
    options: tuple[str, ...]
    raw: str


@dataclass(frozen=True)
class FstabError:
    """A line mount(8) cannot use (too few fields)."""

    line: int
    raw: str


def parse_fstab(text: str) -> tuple[list[FstabEntry], list[FstabError]]:
    """Entries and unusable lines of an fstab file's text."""
    entries: list[FstabEntry] = []
    errors: list[FstabError] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        fields = raw.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) < 3:
            errors.append(FstabError(number, raw.strip()))
            continue
        options = fields[3] if len(fields) > 3 else "defaults"
        entries.append(FstabEntry(line=number, spec=unescape_mount_path(fields[0]),
                                  mountpoint=unescape_mount_path(fields[1]), fstype=fields[2],
                                  options=tuple(o for o in options.split(",") if o),
                                  raw=raw.strip()))
    return entries, errors
