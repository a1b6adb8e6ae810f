"""Which Python runs the tests: on Debian 12 it must be the interpreter the users have,
/usr/bin/python3 (3.11.2), not a python3.11 that was first on PATH (./bootstrap makes the venv
from it; XFS_ADVISOR_PYTHON names another one on purpose)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest


def _debian_12() -> bool:
    try:
        return Path("/etc/debian_version").read_text().startswith("12.")
    except OSError:
        return False


def test_the_interpreter_is_debians(capsys: pytest.CaptureFixture[str]) -> None:
    base = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    with capsys.disabled():
        print(f"\ninterpreter: {base} {sys.version.split()[0]}")
    if os.environ.get("XFS_ADVISOR_PYTHON"):
        pytest.skip(f"XFS_ADVISOR_PYTHON names the interpreter ({base})")
    if not _debian_12():
        pytest.skip("not Debian 12")
    assert base == os.path.realpath("/usr/bin/python3"), base
    assert sys.version_info[:3] == (3, 11, 2), sys.version
