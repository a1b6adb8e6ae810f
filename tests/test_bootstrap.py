"""`./bootstrap` as a new user runs it: the first line says which job runs, and `link` puts the
command on PATH. Runs against this checkout's prepared .venv (the set-up is then skipped)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, require

BOOTSTRAP = REPO / "bootstrap"


def bootstrap(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    require((REPO / ".venv" / "bin" / "xfs-advisor").exists(), "needs the bootstrapped .venv")
    return subprocess.run([str(BOOTSTRAP), *args], capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL, env={**os.environ, **env}, check=False)


@pytest.mark.parametrize(("args", "first"), [
    (("run", "--version"), "bootstrap: running xfs-advisor --version"),
    (("test", "--co", "-q", "tests/test_bootstrap.py"), "bootstrap: running the tests"),
])
def test_the_first_line_says_which_job_runs(args: tuple[str, ...], first: str) -> None:
    proc = bootstrap(*args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[0].startswith(first)


def test_an_unknown_job_is_refused_before_any_set_up() -> None:
    proc = bootstrap("frobnicate")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == "bootstrap: unknown job 'frobnicate' (run, test or link)\n"


def test_link_puts_the_command_on_path(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    proc = bootstrap("link", XFS_ADVISOR_BIN_DIR=str(bin_dir))
    assert proc.returncode == 0, proc.stderr
    link = bin_dir / "xfs-advisor"
    venv_command = REPO / ".venv" / "bin" / "xfs-advisor"
    assert link.is_symlink() and link.resolve() == venv_command.resolve()
    version = subprocess.run(["xfs-advisor", "--version"], capture_output=True, text=True,
                             env={**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}, check=False)
    assert version.stdout.startswith("xfs-advisor ")
    # A file of the same name that is not a link stays as it was.
    link.unlink()
    link.write_text("#!/bin/sh\n")
    proc = bootstrap("link", XFS_ADVISOR_BIN_DIR=str(bin_dir))
    assert proc.returncode == 1 and "not a symlink: left alone" in proc.stderr, proc.stderr
    assert link.read_text() == "#!/bin/sh\n"


def test_without_a_terminal_the_first_line_says_the_validation_runs() -> None:
    """`./bootstrap run </dev/null | cat`: no terminal, so the embedded default is the
    validation, and the first line says so before any set-up. An interpreter that is not one
    (XFS_ADVISOR_PYTHON) stops the script right after that line: nothing is validated here."""
    proc = bootstrap("run", XFS_ADVISOR_PYTHON="/nonexistent/python3")
    lines = proc.stderr.splitlines()
    assert proc.returncode == 1, proc.stderr
    assert lines[0].startswith("bootstrap: no terminal on stdin or stdout: running the embedded "
                               "default, `xfs-advisor validate` (an A/B benchmark"), lines
    assert lines[1:] == ["bootstrap: /nonexistent/python3 is not a python >= 3.11 with venv (set "
                         "XFS_ADVISOR_PYTHON to one)"], lines
    assert proc.stdout == ""
