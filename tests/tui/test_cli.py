"""How the command line starts the interactive advisor: preselection, and one-line errors before
any screen shows."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from advisor.commands.parser import build_parser
from advisor.errors import BadInput, DeviceProblem
from advisor.tui.app import app_from_args as build_app
from tests.conftest import REPO


def test_device_and_answers_preselect_the_proposal(shared_dumps: dict[str, Path]) -> None:
    root = shared_dumps["simple-nvme"]
    args = build_parser().parse_args(
        ["--sysroot", str(root), "tui", "--device", "/dev/nvme0n1p1", "--access", "mixed"])
    app = build_app(args)
    assert app._start == "proposal"
    assert app.state.device_name == "nvme0n1p1"
    assert app.state.workload.access == "mixed"
    assert app.state.session.sysroot == str(root) and not app.state.session.live
    only_device = build_app(build_parser().parse_args(["--sysroot", str(root), "tui",
                                                       "--device", "sda"]))
    assert only_device._start == "workload"


def test_unknown_device_and_bad_sysroot_are_one_line_errors(shared_dumps: dict[str, Path],
                                                            tmp_path: Path) -> None:
    root = shared_dumps["simple-nvme"]
    with pytest.raises(DeviceProblem, match=r"unknown device 'sdz' \(known: .*nvme0n1p1"):
        build_app(build_parser().parse_args(["--sysroot", str(root), "tui", "--device", "sdz"]))
    with pytest.raises(BadInput, match="has no sys/block"):
        build_app(build_parser().parse_args(["--sysroot", str(tmp_path), "tui"]))


def test_no_terminal_is_exit_2_without_a_traceback() -> None:
    done = subprocess.run([str(REPO / ".venv" / "bin" / "xfs-advisor"), "tui"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("xfs-advisor: no terminal for the interactive advisor")
    assert len(done.stderr.splitlines()) == 1
