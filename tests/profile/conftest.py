"""Generated trees for the profile tests."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

BIG_DIRECTORY_ENTRIES = 100_000


def _scratch_parent() -> str | None:
    # Creating and deleting 100,000 entries is four times faster on tmpfs than on the root disk.
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


@pytest.fixture(scope="session")
def big_directory() -> Iterator[Path]:
    """A tree whose directory `big` holds 100,000 empty files, plus `small` with 3. Shared by the
    tests that need many entries; deleted at the end of the session."""
    top = Path(tempfile.mkdtemp(prefix="xfs-advisor-profile-", dir=_scratch_parent()))
    try:
        big = top / "big"
        big.mkdir()
        names = os.fsencode(big)
        for i in range(BIG_DIRECTORY_ENTRIES):
            os.mknod(names + b"/%06d" % i)
        (top / "small").mkdir()
        for name in ("a", "b", "c"):
            (top / "small" / name).write_bytes(b"x" * 100)
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)
