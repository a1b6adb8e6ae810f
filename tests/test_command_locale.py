"""Commands run in one locale, whatever the user's: the advisor matches their English messages
("No such device", "Device or resource busy"), and a translated one would not match."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from advisor.system.runner import command_env, run


def _installed(locale: str) -> bool:
    names = subprocess.run(["locale", "-a"], capture_output=True, text=True).stdout.split()
    return locale.lower().replace("-", "") in {n.lower().replace("-", "") for n in names}


#: A user's German environment: gettext follows LANGUAGE under any locale but C (C.UTF-8 where
#: de_DE.UTF-8 is not generated, as on a fresh Debian).
GERMAN = {"LANG": "de_DE.UTF-8" if _installed("de_DE.UTF-8") else "C.UTF-8",
          "LANGUAGE": "de"}


def test_a_translated_environment_does_not_change_the_messages_matched(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-file")
    env = {**os.environ, **GERMAN}
    env.pop("LC_ALL", None)
    plain = subprocess.run(["losetup", missing], capture_output=True, text=True, env=env)
    if "No such device" in plain.stderr:
        pytest.skip("no German translation of the C library's messages on this host")
    assert "Kein passendes Gerät" in plain.stderr, plain.stderr
    for name, value in GERMAN.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("LC_ALL", raising=False)
    result = run(["losetup", missing], check=False, timeout=30)
    # advisor.bench.resources matches this text after a failed losetup.
    assert "No such device" in result.stderr, result.stderr


def test_the_command_environment_keeps_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in GERMAN.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("XFS_ADVISOR_PROBE", "kept")
    env = command_env()
    assert env["LC_ALL"] == "C.UTF-8" and "LANGUAGE" not in env
    assert env["XFS_ADVISOR_PROBE"] == "kept" and env["PATH"] == os.environ["PATH"]


def test_temporary_files_go_to_this_runs_temp_folder(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    base = tmp_path_factory.getbasetemp()
    assert Path(os.environ["TMPDIR"]).parent == base
    assert Path(tempfile.gettempdir()) == Path(os.environ["TMPDIR"])
