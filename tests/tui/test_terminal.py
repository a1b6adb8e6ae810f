"""The installed `xfs-advisor` in a real terminal (tmux): device list -> answers -> proposal ->
quit, keys sent with send-keys, the screen read with capture-pane. The mkfs line on screen must be
the one `xfs-advisor --json` gives for the same capture, device and answers."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, require

XFS_ADVISOR = REPO / ".venv" / "bin" / "xfs-advisor"


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """A private tmux server (its own socket), killed afterwards whatever happens."""
    require(shutil.which("tmux") is not None, "needs tmux")
    require(XFS_ADVISOR.exists(), f"needs the installed {XFS_ADVISOR}")
    # One server per test, its socket in the test's own folder (removed with it).
    socket = str(tmp_path / "tmux.sock")

    def run(*argv: str) -> str:
        done = subprocess.run(["tmux", "-S", socket, *argv], capture_output=True, text=True,
                              timeout=20, check=True)
        return done.stdout

    try:
        yield run
    finally:
        subprocess.run(["tmux", "-S", socket, "kill-server"], capture_output=True, check=False)


def _wait_for(capture: Callable[[], str], wanted: Callable[[str], bool], what: str,
              timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = capture()
        if wanted(screen):
            return screen
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}; the screen was:\n{screen}")


def test_devices_to_proposal_in_tmux_matches_json(tmux: Callable[..., str],
                                                  shared_dumps: dict[str, Path],
                                                  tmp_path: Path) -> None:
    require(shutil.which("mkfs.xfs") is not None, "needs mkfs.xfs for the dry runs")
    sysroot = shared_dumps["simple-nvme"]
    marker = tmp_path / "exit-code"
    command = (f"{XFS_ADVISOR} --sysroot {sysroot}; echo $? > {marker}; sleep 60")
    tmux("new-session", "-d", "-s", "advisor", "-x", "160", "-y", "45",
         "env", "-u", "COLUMNS", "-u", "LINES", "TERM=xterm-256color", "sh", "-c", command)

    def screen() -> str:
        return tmux("capture-pane", "-p", "-t", "advisor")

    shown = _wait_for(screen, lambda s: "nvme0n1p1" in s and "STATE" in s, "the device list")
    assert "mounted /home" in shown  # a badge of the capture's nvme0n1p2
    tmux("send-keys", "-t", "advisor", "Down")  # nvme0n1p1: the free partition
    _wait_for(screen, lambda s: "/dev/nvme0n1p1  part" in s, "the details of nvme0n1p1")
    tmux("send-keys", "-t", "advisor", "Enter")
    _wait_for(screen, lambda s: "for nvme0n1p1" in s, "the workload form")
    # One key at a time: Tab moves the focus after keys already queued for the old field.
    for key in ["2000000", "Tab", "Tab", "Tab", "16"]:
        tmux("send-keys", "-t", "advisor", key)
        time.sleep(0.3)
    _wait_for(screen, lambda s: "2 answered" in s, "the answers to be taken")
    tmux("send-keys", "-t", "advisor", "F4")
    shown = _wait_for(screen, lambda s: "│ mkfs.xfs" in s and "computing" not in s,
                      "the proposal")
    line = next(ln for ln in shown.splitlines() if ln.startswith("│ mkfs.xfs"))
    on_screen = line.strip("│ ").strip()
    tmux("send-keys", "-t", "advisor", "q")
    _wait_for(lambda: marker.read_text() if marker.exists() else "", lambda s: s.strip() == "0",
              "xfs-advisor to quit with exit code 0")

    done = subprocess.run(
        [str(XFS_ADVISOR), "--json", "--sysroot", str(sysroot), "--device", "nvme0n1p1",
         "--largest-directory-entries", "2000000", "--concurrent-writers", "16"],
        capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    expected = json.loads(done.stdout)["proposal"]["mkfs_command"]
    assert on_screen == expected
    assert "/dev/nvme0n1p1" in on_screen


def _colours(escaped: str) -> set[tuple[int, int, int]]:
    found = re.findall(r"\x1b\[[0-9;]*?[34]8;2;(\d+);(\d+);(\d+)", escaped)
    return {(int(r), int(g), int(b)) for r, g, b in found}


@pytest.mark.parametrize("no_color", [False, True], ids=["colour", "NO_COLOR"])
def test_no_color_gives_a_grey_screen(tmux: Callable[..., str], shared_dumps: dict[str, Path],
                                      no_color: bool) -> None:
    sysroot = shared_dumps["simple-nvme"]
    env = ["NO_COLOR=1"] if no_color else []
    tmux("new-session", "-d", "-s", "advisor", "-x", "100", "-y", "30", "env", "-u", "COLUMNS",
         "-u", "LINES", "-u", "NO_COLOR", *env, "TERM=xterm-256color", "COLORTERM=truecolor",
         str(XFS_ADVISOR), "--sysroot", str(sysroot))
    _wait_for(lambda: tmux("capture-pane", "-p", "-t", "advisor"), lambda s: "STATE" in s,
              "the device list")
    time.sleep(0.5)
    colours = _colours(tmux("capture-pane", "-p", "-e", "-t", "advisor"))
    assert colours, "no colours seen at all: the check would prove nothing"
    chromatic = {c for c in colours if len(set(c)) > 1}
    assert (not chromatic) == no_color, sorted(chromatic)[:5]
    tmux("send-keys", "-t", "advisor", "q")
