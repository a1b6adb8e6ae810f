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

from tests.conftest import REPO, require, require_root_tools

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


def _ours_left(folder: Path) -> list[str]:
    left = [ln for ln in subprocess.run(["losetup", "-a"], capture_output=True, text=True,
                                        check=False).stdout.splitlines() if str(folder) in ln]
    left += [ln for ln in Path("/proc/self/mountinfo").read_text().splitlines()
             if str(folder) in ln]
    return left


def _start_a_loop_run(tmux: Callable[..., str], tmp_path: Path, after: str) -> Path:
    """The live TUI in tmux, F5, ctrl+r: a validation on the loop default, running; `after` is
    run in the pane's shell once the TUI ends. Returns the folder its loop device lives in."""
    require_root_tools("losetup", "mkfs.xfs", "fio")
    loop_dir = tmp_path / "loop"
    loop_dir.mkdir()
    env = (f"XFS_ADVISOR_STATE_DIR={tmp_path / 'state'} TMPDIR={loop_dir} "
           f"XFS_ADVISOR_CALIBRATION={tmp_path / 'calibration.json'} TERM=xterm-256color")
    tmux("new-session", "-d", "-s", "advisor", "-x", "160", "-y", "45",
         f"env -u COLUMNS -u LINES {env} {XFS_ADVISOR}; {after}")
    screen = lambda: tmux("capture-pane", "-p", "-t", "advisor")  # noqa: E731
    _wait_for(screen, lambda s: "STATE" in s, "the device list")
    tmux("send-keys", "-t", "advisor", "F5")
    _wait_for(screen, lambda s: "Command plan" in s, "the validation screen")
    tmux("send-keys", "-t", "advisor", "C-r")
    _wait_for(lambda: "\n".join(_ours_left(loop_dir)),
              lambda s: "xfs" in s and "loop" in s, "the run's loop device and mount", 60)
    return loop_dir


def test_a_closed_terminal_mid_run_leaves_nothing(tmux: Callable[..., str],
                                                  tmp_path: Path) -> None:
    """What an SSH drop does: the terminal goes away (SIGHUP) while a validation runs. The run
    is cancelled and cleaned up: no loop device, mount, backing file or state file is left."""
    loop_dir = _start_a_loop_run(tmux, tmp_path, "true")
    tmux("kill-server")  # SIGHUP to everything in the pane
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (_ours_left(loop_dir) or list(loop_dir.iterdir())
                                           or list((tmp_path / "state").glob("run-*.json"))):
        time.sleep(0.2)
    assert _ours_left(loop_dir) == []
    assert list(loop_dir.iterdir()) == []
    assert not list((tmp_path / "state").glob("run-*.json"))


def test_q_mid_run_asks_then_cleans_up(tmux: Callable[..., str], tmp_path: Path) -> None:
    marker = tmp_path / "exit-code"
    loop_dir = _start_a_loop_run(tmux, tmp_path, f"echo $? > {marker}; sleep 60")
    screen = lambda: tmux("capture-pane", "-p", "-t", "advisor")  # noqa: E731
    tmux("send-keys", "-t", "advisor", "q")
    _wait_for(screen, lambda s: "A validation is running. Quit?" in s, "the question")
    assert _ours_left(loop_dir), "asking must not stop the run"
    tmux("send-keys", "-t", "advisor", "y")
    _wait_for(screen, lambda s: "cleaning up the validation run" in s, "the clean-up notice")
    _wait_for(lambda: marker.read_text() if marker.exists() else "", lambda s: s.strip() == "0",
              "xfs-advisor to end with exit code 0", 60)
    assert _ours_left(loop_dir) == []
    assert list(loop_dir.iterdir()) == []
