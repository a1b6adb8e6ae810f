"""Byte sizes as people write them: 16384, "16KiB", "16k", "1.5 GiB", "64 MB".

Single letters and IEC suffixes are binary, as in mkfs.xfs (k = KiB = 1024); SI suffixes with a B
(KB, MB, GB, TB, PB) are decimal, as on a disk's label.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer

_UNITS = {
    "": 1, "b": 1,
    "k": 1 << 10, "kib": 1 << 10, "kb": 10**3,
    "m": 1 << 20, "mib": 1 << 20, "mb": 10**6,
    "g": 1 << 30, "gib": 1 << 30, "gb": 10**9,
    "t": 1 << 40, "tib": 1 << 40, "tb": 10**12,
    "p": 1 << 50, "pib": 1 << 50, "pb": 10**15,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(value: Any) -> int:
    """Bytes from an int or a size string; ValueError with a readable reason otherwise."""
    if isinstance(value, bool):
        raise ValueError("expected a size (bytes, or a string like '16KiB'), not true/false")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a size cannot be negative")
        return value
    if isinstance(value, float):
        if value < 0 or value != value or value in (float("inf"),):
            raise ValueError("a size must be a finite number >= 0")
        return int(value)
    if not isinstance(value, str):
        raise ValueError("expected a size (bytes, or a string like '16KiB')")
    m = _SIZE.match(value)
    if not m:
        raise ValueError(f"{value!r} is not a size (try 4096, '16KiB', '1.5GiB')")
    number, unit = m.groups()
    factor = _UNITS.get(unit.lower())
    if factor is None:
        raise ValueError(
            f"unknown unit {unit!r} in {value!r} (use B, KiB, MiB, GiB, TiB, or k, m, g, t)"
        )
    return int(Fraction(number) * factor)  # exact: no float rounding of large byte counts


def format_size(n: int) -> str:
    """The shortest exact binary form: 16384 -> '16KiB', 1536 -> '1536B'... never rounds."""
    for suffix, factor in (("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20),
                           ("KiB", 1 << 10)):
        if n and n % factor == 0:
            return f"{n // factor}{suffix}"
    return f"{n}B"


def human_size(n: float) -> str:
    """Rounded, for reading: 1.5 GiB, 931.5 GiB."""
    for suffix, factor in (("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20),
                           ("KiB", 1 << 10)):
        if abs(n) >= factor:
            return f"{n / factor:.1f} {suffix}".replace(".0 ", " ")
    return f"{int(n)} B"


#: A byte count that accepts size strings on input and serialises as an int.
ByteSize = Annotated[int, BeforeValidator(parse_size), PlainSerializer(int, return_type=int)]
