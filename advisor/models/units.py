"""Byte sizes and counts as people write them.

Sizes: 16384, "16KiB", "16k", "1.5 GiB", "64 MB". Single letters and IEC suffixes are binary, as in
mkfs.xfs (k = KiB = 1024); SI suffixes with a B (KB, MB, GB, TB, PB) are decimal, as on a disk's
label. Counts (entries, files, writers, fsyncs per second): 5000000, "5,000,000", "5_000_000",
"1e6", 1e6 (a TOML float), "5M", "2.5k"; a count's letters are decimal (k = 1000, M = 10^6,
G = 10^9, T = 10^12), since nobody counts files in powers of two.
"""

from __future__ import annotations

import math
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
#: Largest byte count accepted: XFS's own limit on a filesystem (and a file), 8 EiB - 1. Anything
#: larger is a typo, and would overflow the C longs that truncate() and mkfs.xfs take.
MAX_BYTES = (1 << 63) - 1
#: Longest size string looked at: "1.5GiB" is 6 characters; 5000 digits are a mistake.
_MAX_SIZE_TEXT = 64


def _bounded(n: int) -> int:
    if n > MAX_BYTES:
        raise ValueError("larger than 8EiB, the most XFS can address")
    return n


def parse_size(value: Any) -> int:
    """Bytes from an int or a size string; ValueError with a readable reason otherwise."""
    if isinstance(value, bool):
        raise ValueError("expected a size (bytes, or a string like '16KiB'), not true/false")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a size cannot be negative")
        return _bounded(value)
    if isinstance(value, float):
        if not math.isfinite(value) or value < 0:
            raise ValueError("a size must be a finite number >= 0")
        return _bounded(int(value))
    if not isinstance(value, str):
        raise ValueError("expected a size (bytes, or a string like '16KiB')")
    if len(value) > _MAX_SIZE_TEXT:
        raise ValueError(f"{value[:20]!r}... is too long to be a size")
    m = _SIZE.match(value)
    if not m:
        raise ValueError(f"{value!r} is not a size (try 4096, '16KiB', '1.5GiB')")
    number, unit = m.groups()
    factor = _UNITS.get(unit.lower())
    if factor is None:
        raise ValueError(
            f"unknown unit {unit!r} in {value!r} (binary: KiB, MiB, GiB, TiB, PiB or k, m, g, t,"
            " p; decimal: KB, MB, GB, TB, PB; or bytes: B)"
        )
    return _bounded(int(Fraction(number) * factor))  # exact: no float rounding of large byte counts


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


_COUNT_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_COUNT = re.compile(r"^(-?\d+(?:\.\d+)?(?:e[+]?\d{1,3})?)([kmgt]?)$", re.IGNORECASE)
_GROUPED = re.compile(r"^\d{1,3}([,_ ]\d{3})+(\.\d+)?$")
_COUNT_HINT = "try 5000000, 5,000,000, 5M or 1e6"


def _count_fraction(value: Any, what: str) -> Fraction:
    if isinstance(value, bool):
        raise ValueError(f"expected {what}, not true/false")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"expected {what}, a finite number")
        return Fraction(value)
    if not isinstance(value, str):
        raise ValueError(f"expected {what} ({_COUNT_HINT})")
    text = value.strip()
    if len(text) > _MAX_SIZE_TEXT:
        raise ValueError(f"{value[:20]!r}... is too long to be {what}")
    if _GROUPED.match(text):
        text = re.sub(r"[,_ ]", "", text)
    text = text.replace("_", "") if re.fullmatch(r"\d+(_\d+)+", text) else text
    m = _COUNT.match(text.replace(" ", ""))
    if not m:
        raise ValueError(f"{value!r} is not {what} ({_COUNT_HINT})")
    return Fraction(m[1]) * _COUNT_UNITS[m[2].lower()]


def parse_count(value: Any) -> int:
    """A whole count from an int, a whole float or a count string (see the module docstring);
    ValueError with a readable reason otherwise. Bounds are the field's own (ge/le)."""
    n = _count_fraction(value, "a whole number")
    if n.denominator != 1:
        raise ValueError(f"{value!r} is not a whole number")
    if abs(n) > MAX_BYTES:
        digits = len(str(abs(value))) if isinstance(value, int) else 0
        if digits > 40:  # named by its length: the message stays one short line
            raise ValueError(f"a number of {digits} digits is too large")
        raise ValueError(f"{value!r} is too large")
    return int(n)


def parse_rate(value: Any) -> float:
    """A rate (per second) written like a count, fractions allowed: 200, "1.5k", "2e3"."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_BYTES:
        raise ValueError(f"a number of {len(str(abs(value)))} digits is too large")  # no float
    if isinstance(value, float | int) and not isinstance(value, bool):
        return float(value)  # the field's own checks say what is wrong with it
    n = _count_fraction(value, "a number")
    if abs(n) > MAX_BYTES:
        raise ValueError(f"{value!r} is too large")
    return float(n)
