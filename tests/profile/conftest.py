"""Generated trees for the profile tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import memory_folder

BIG_DIRECTORY_ENTRIES = 100_000


@pytest.fixture(scope="session")
def big_directory() -> Iterator[Path]:
    """A tree whose directory `big` holds 100,000 empty files, plus `small` with 3. Shared by the
    tests that need many entries; deleted at the end of the session."""
    # Creating and deleting 100,000 entries is four times faster on tmpfs than on the root disk.
    with memory_folder("profile") as top:
        big = top / "big"
        big.mkdir()
        names = os.fsencode(big)
        for i in range(BIG_DIRECTORY_ENTRIES):
            os.mknod(names + b"/%06d" % i)
        (top / "small").mkdir()
        for name in ("a", "b", "c"):
            (top / "small" / name).write_bytes(b"x" * 100)
        yield top
