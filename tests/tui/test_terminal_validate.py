"""F5 in a real 80x24 terminal (tmux) on the live system: after ctrl+r the run's state is on
screen, the footer offers what applies (ctrl+r before, escape during) uncut, and a cancelled run
leaves nothing (the loop default, in the test's own folders); a target refused for its data is
checked again once wiped; a run on a device says what it left there."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import force_clean, leftovers, loop_device, require_root_tools, sh
from tests.tui.test_terminal import _list_filled, _live_tui, _wait_for, tmux

__all__ = ["tmux"]  # the fixture, used by name


@pytest.mark.root
@pytest.mark.slow
def test_run_state_and_footer_at_80x24(tmux: Callable[..., str], tmp_path: Path) -> None:
    require_root_tools("losetup", "mkfs.xfs", "fio")
    loop_dir = tmp_path / "loop"
    loop_dir.mkdir()
    marker = tmp_path / "exit-code"
    tmux("new-session", "-d", "-s", "advisor", "-x", "80", "-y", "24",
         f"{_live_tui(tmp_path)}; echo $? > {marker}; sleep 60")
    screen = lambda: tmux("capture-pane", "-p", "-t", "advisor")  # noqa: E731
    footer = lambda: screen().rstrip("\n").splitlines()[-1]  # noqa: E731
    try:
        _wait_for(screen, _list_filled, "the device list", 60)
        tmux("send-keys", "-t", "advisor", "F5")
        _wait_for(screen, lambda s: "Command plan" in s, "the validation screen", 60)
        idle = _wait_for(footer, lambda s: "^r Run" in s, "ctrl+r in the footer")
        assert idle.rstrip().endswith("^r Run") and "Cancel" not in idle, idle
        tmux("send-keys", "-t", "advisor", "C-r")
        # On screen without scrolling: the step line and the bar, not just the command plan.
        shown = _wait_for(screen, lambda s: "starting: preparing" in s or ", side A" in s,
                          "the run's state on screen", 60)
        assert "━" in shown or "%" in shown, shown  # the progress bar
        running = _wait_for(footer, lambda s: "esc Cancel run" in s, "escape in the footer")
        assert "^r Run" not in running and running.rstrip().endswith("esc Cancel run"), running
        tmux("send-keys", "-t", "advisor", "Escape")
        _wait_for(screen, lambda s: "cancelled" in s, "the cancelled run", 90)
        _wait_for(footer, lambda s: s.rstrip().endswith("^r Run"), "ctrl+r back in the footer")
        tmux("send-keys", "-t", "advisor", "q")
        _wait_for(lambda: marker.read_text() if marker.exists() else "",
                  lambda s: s.strip() == "0", "xfs-advisor to quit with exit code 0", 60)
        assert leftovers(loop_dir) == []
    finally:
        force_clean(str(loop_dir))


def _choose_target(tmux: Callable[..., str], name: str) -> None:
    """F5's target list: focus it, open it, type the device's name (the list searches as one
    types), take it. Another program's loop device coming or going on this shared host redraws
    the list while it is open and loses what was typed: the list still open, it is closed and
    the name typed again."""
    tmux("send-keys", "-t", "advisor", "Tab")
    time.sleep(0.5)
    for _ in range(3):
        for keys in (["Enter"], ["-l", f"{name} ("], ["Enter"]):
            tmux("send-keys", "-t", "advisor", *keys)
            time.sleep(0.5)
        if "Dismiss menu" not in tmux("capture-pane", "-p", "-t", "advisor"):
            return
        tmux("send-keys", "-t", "advisor", "Escape")
        time.sleep(0.5)


def _flat(screen: str) -> str:
    """The screen's words on one line: a phrase wrapped at 80 columns is still found."""
    return " ".join(screen.split())


def _validate_on(tmux: Callable[..., str], tmp_path: Path, name: str) -> Callable[[], str]:
    """The live TUI at 80x24 in tmux, F5, the target `name` chosen; returns the pane's reader
    (its words on one line)."""
    tmux("new-session", "-d", "-s", "advisor", "-x", "80", "-y", "24",
         f"{_live_tui(tmp_path)}; sleep 60")
    screen = lambda: _flat(tmux("capture-pane", "-p", "-t", "advisor"))  # noqa: E731
    _wait_for(screen, _list_filled, "the device list", 60)
    tmux("send-keys", "-t", "advisor", "F5")
    _wait_for(screen, lambda s: "Command plan" in s, "the validation screen", 60)
    _choose_target(tmux, name)
    return screen


@pytest.mark.root
@pytest.mark.slow
def test_targets_are_checked_again_at_80x24(tmux: Callable[..., str], tmp_path: Path) -> None:
    """A loop device with an ext2 signature is refused; after `wipefs -a` ctrl+r checks it again
    and offers it (its name to be typed); with the signature back, F4 then F5 shows it refused
    again, without reopening anything. The signature is the superblock magic alone, so that
    `wipefs -a` leaves the device blank (after a whole mkfs.ext4 the guard rightly still finds
    the rest of the superblock)."""
    require_root_tools("losetup", "wipefs")
    (tmp_path / "loop").mkdir()

    def sign(dev: str) -> None:
        with open(dev, "r+b") as f:
            f.seek(1080)
            f.write(b"\x53\xef")  # what libblkid reads as ext2

    with loop_device(tmp_path / "target.img", 1 << 30) as dev:
        name = Path(dev).name
        sign(dev)
        screen = _validate_on(tmux, tmp_path, name)
        refused = f"refused: {name} cannot be used for the run: it holds data: ext2"
        _wait_for(screen, lambda s: refused in s, f"{name} refused for its signature", 30)
        sh("wipefs", "-a", dev)
        tmux("send-keys", "-t", "advisor", "C-r")  # the list still says refused: checked again
        usable = f"{name} may be used: everything on it is erased"
        # The notice says why nothing ran. A hotplug event (another program's loop device on
        # this shared host) may have read the devices first: ctrl+r then asks for the name.
        said = (f"{name} is usable now", f"not confirmed: type {name}")
        shown = _wait_for(screen, lambda s: usable in s and any(w in s for w in said),
                          f"{name} offered after the wipefs", 30)
        assert usable in shown
        sign(dev)
        tmux("send-keys", "-t", "advisor", "F4")
        _wait_for(screen, lambda s: "Command plan" not in s, "the proposal step", 30)
        tmux("send-keys", "-t", "advisor", "F5")
        _wait_for(screen, lambda s: refused in s, f"{name} refused again on F5", 30)
        tmux("send-keys", "-t", "advisor", "q")


@pytest.mark.root
@pytest.mark.slow
def test_what_a_device_run_left_is_on_screen_at_80x24(tmux: Callable[..., str],
                                                       tmp_path: Path) -> None:
    """A finished run on a scratch device says at 80x24 what it left there: the test
    filesystem, and the `wipefs -a` that removes it."""
    require_root_tools("losetup", "mkfs.xfs", "fio", "wipefs")
    loop_dir = tmp_path / "loop"
    loop_dir.mkdir()
    try:
        with loop_device(tmp_path / "scratch.img", 1 << 30) as dev:
            name = Path(dev).name
            screen = _validate_on(tmux, tmp_path, name)
            _wait_for(screen, lambda s: f"type {name} to confirm" in s, "the confirm box", 30)
            # The name goes into the confirm box once it has the focus: a re-check of the
            # targets may redraw the screen while keys arrive, so type until the box shows it
            # (its placeholder gone), then start.
            for _ in range(5):
                tmux("send-keys", "-t", "advisor", "Tab")
                tmux("send-keys", "-t", "advisor", "-l", name)
                deadline = time.monotonic() + 5
                while f"type {name} to confirm" in screen() and time.monotonic() < deadline:
                    time.sleep(0.2)
                if f"type {name} to confirm" not in screen():
                    break
            tmux("send-keys", "-t", "advisor", "C-r")
            _wait_for(screen, lambda s: ", side A" in s or "starting" in s, "the run", 60)
            # The default budget (80 s) on a shared machine: room for a slow set-up.
            shown = _wait_for(screen, lambda s: f"done on {dev}" in s, "the run's end", 400)
            assert f"`wipefs -a {dev}`" in shown, shown
            tmux("send-keys", "-t", "advisor", "q")
    finally:
        force_clean(str(loop_dir))
