"""F5 in a real 80x24 terminal (tmux) on the live system: after ctrl+r the run's state is on
screen, the footer offers what applies (ctrl+r before, escape during) uncut, and a cancelled run
leaves nothing. The run is the loop default, in the test's own folders."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.bench.test_resources import force_clean
from tests.conftest import require_root_tools
from tests.tui.test_terminal import _live_tui, _ours_left, _wait_for, tmux

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
        _wait_for(screen, lambda s: "STATE" in s, "the device list", 60)
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
        assert _ours_left(loop_dir) == []
    finally:
        force_clean(str(loop_dir))
