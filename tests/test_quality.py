"""The conventions the code holds itself to: ruff clean everywhere, mypy --strict on advisor/."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def test_ruff_is_clean() -> None:
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "advisor", "tests", "scripts"],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_strict_is_clean(tmp_path: object) -> None:
    proc = subprocess.run([sys.executable, "-m", "mypy", "advisor", "--cache-dir",
                           str(tmp_path)], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
