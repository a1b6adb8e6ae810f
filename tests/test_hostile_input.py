"""Hostile input refused before anything is made: empty names on the command line, and a
`validate --continue` report with numbers the flags would never allow (a loop file larger than
the loop folder's free space, more writers than MAX_WRITERS, a negative directory, an endless
budget). Each is one line and exit 2; the run itself never starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.errors import AdvisorError
from advisor.session import Session
from tests.bench.test_adaptive import _report
from tests.conftest import require_root_tools
from tests.inspect.sysfs_builder import Dev, write_tree


class _Started(AdvisorError):
    """The run was started: the report got through (main() returns this exit code)."""

    exit_code = 77


def _never_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """A validate run that got through the checks raises _Started instead of running."""

    def started(*args: object, **kwargs: object) -> None:
        raise _Started("the run started")

    monkeypatch.setattr(Session, "run_validation", started)
    monkeypatch.setattr(Session, "more_rounds", started)


@pytest.mark.parametrize("argv", [
    ["capture", ""], ["audit", "--fstab", ""], ["--workload", "", "--json"],
    ["propose", "--workload", ""], ["propose", "--rules", ""], ["--rules", "", "--json"],
    ["validate", "--rules", ""], ["validate", "--workload", ""], ["audit", "--rules", ""],
    ["audit", "--workload", ""], ["fleet", ""], ["profile", ""], ["--sysroot", "", "devices"],
    ["devices", ""], ["propose", "--device-file", ""], ["validate", "--continue", ""],
    ["rules", "--rules", ""], ["explain", "--rules", "", "inode-size"],
])
def test_an_empty_name_is_an_error(argv: list[str], tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _never_run(monkeypatch)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is empty" in err, err
    assert list(tmp_path.iterdir()) == []  # `capture ""` captured into the current folder


def _hostile(update: dict[str, Any]) -> dict[str, Any]:
    doc = json.loads(_report().model_dump_json())
    for path, value in update.items():
        where = doc
        *parents, last = path.split(".")
        for key in parents:
            where = where[key]
        where[last] = value
    return doc


@pytest.mark.parametrize(("update", "needle"), [
    ({"environment.device_size_bytes": 1 << 50}, "free"),
    ({"environment.device_size_bytes": 4096}, "device_size_bytes"),
    ({"workload.writers": 64}, "writers"),
    ({"workload.directory_entries": -20_000, "workload.churn_entries": -2_000},
     "directory_entries"),
    ({"workload.churn_entries": 10**9}, "churn_entries"),
    ({"workload.fsync_phase": "yes"}, "fsync_phase"),
    ({"workload.phase_seconds": 1e300}, "phase_seconds"),
    ({"stopping.budget_seconds": 1e12}, "budget_seconds"),
])
def test_a_continued_report_is_held_to_the_flags_bounds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        update: dict[str, Any], needle: str) -> None:
    require_root_tools("losetup", "mkfs.xfs", "fio", "mount")  # validate's own host checks
    report = tmp_path / "report.json"
    report.write_text(json.dumps(_hostile(update)))
    monkeypatch.setenv("XFS_ADVISOR_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XFS_ADVISOR_CALIBRATION", str(tmp_path / "calibration.json"))
    _never_run(monkeypatch)
    code = main(["validate", "--continue", str(report), "--loop-dir", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and needle in err, err


def test_a_sound_report_still_continues(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_root_tools("losetup", "mkfs.xfs", "fio", "mount")
    report = tmp_path / "report.json"
    report.write_text(_report().model_dump_json())
    monkeypatch.setenv("XFS_ADVISOR_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("XFS_ADVISOR_CALIBRATION", str(tmp_path / "calibration.json"))
    _never_run(monkeypatch)
    assert main(["validate", "--continue", str(report), "--loop-dir", str(tmp_path)]) == 77


def test_a_thousand_stacked_devices_are_listed(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A capture is input too: devices stacked deeper than Python's recursion limit are listed
    (the tree is walked with a stack of its own), not an internal error."""
    depth = 1000
    devices = [Dev("sda", 1 << 30, "8:0", holders=["dm-0"])]
    devices += [Dev(f"dm-{i}", 1 << 30, f"253:{i}", dm_name=f"layer{i}",
                    slaves=["sda" if i == 0 else f"dm-{i - 1}"],
                    holders=[f"dm-{i + 1}"] if i < depth - 1 else []) for i in range(depth)]
    root = write_tree(tmp_path / "host", devices)
    assert main(["--sysroot", str(root), "devices"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0].lstrip("|`- ") for line in lines[1:4]] == ["sda", "layer0",
                                                                       "layer1"]
    assert len(lines) == 1 + 1 + depth
    assert lines[-1].lstrip(" |`-").startswith(f"layer{depth - 1} ")
