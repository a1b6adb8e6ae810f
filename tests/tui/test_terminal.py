"""The installed `xfs-advisor` in a real terminal (tmux): device list -> answers -> proposal ->
quit, keys sent with send-keys, the screen read with capture-pane. The mkfs line on screen must be
the one `xfs-advisor --json` gives for the same capture, device and answers."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO, force_clean, leftovers, require, require_root_tools, require_tmux

XFS_ADVISOR = REPO / ".venv" / "bin" / "xfs-advisor"


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """A private tmux server (its own socket), killed afterwards whatever happens."""
    require_tmux()
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


def _list_filled(screen: str) -> bool:
    """The device list drawn and filled in (its "N devices (...)" title): the first scan starts
    once the empty list is drawn, so its column headers alone say it is not read yet."""
    return "STATE" in screen and re.search(r"\d+ devices? \(", screen) is not None


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
    _wait_for(lambda: tmux("capture-pane", "-p", "-t", "advisor"), _list_filled,
              "the device list")
    time.sleep(0.5)
    colours = _colours(tmux("capture-pane", "-p", "-e", "-t", "advisor"))
    assert colours, "no colours seen at all: the check would prove nothing"
    chromatic = {c for c in colours if len(set(c)) > 1}
    assert (not chromatic) == no_color, sorted(chromatic)[:5]
    tmux("send-keys", "-t", "advisor", "q")


def _live_tui(tmp_path: Path) -> str:
    """The shell command of the live TUI with its state, loop folder and calibration in
    `tmp_path` (the loop folder is tmp_path/loop)."""
    env = (f"XFS_ADVISOR_STATE_DIR={tmp_path / 'state'} TMPDIR={tmp_path / 'loop'} "
           f"XFS_ADVISOR_CALIBRATION={tmp_path / 'calibration.json'} TERM=xterm-256color")
    return f"env -u COLUMNS -u LINES {env} {XFS_ADVISOR}"


def _start_a_loop_run(tmux: Callable[..., str], tmp_path: Path, after: str) -> Path:
    """The live TUI in tmux, F5, ctrl+r: a validation on the loop default, running; `after` is
    run in the pane's shell once the TUI ends. Returns the folder its loop device lives in."""
    require_root_tools("losetup", "mkfs.xfs", "fio")
    loop_dir = tmp_path / "loop"
    loop_dir.mkdir()
    tmux("new-session", "-d", "-s", "advisor", "-x", "160", "-y", "45",
         f"{_live_tui(tmp_path)}; {after}")
    screen = lambda: tmux("capture-pane", "-p", "-t", "advisor")  # noqa: E731
    _wait_for(screen, _list_filled, "the device list")
    tmux("send-keys", "-t", "advisor", "F5")
    _wait_for(screen, lambda s: "Command plan" in s, "the validation screen")
    tmux("send-keys", "-t", "advisor", "C-r")
    # The test filesystem mounted (a mountinfo line: "... - xfs /dev/loopN ..."): past the
    # dry runs that decide side B, which a losetup line alone (its folder is named xfs-advisor-)
    # did not wait for.
    _wait_for(lambda: "\n".join(leftovers(loop_dir)),
              lambda s: " - xfs /dev/loop" in s, "the run's loop device and mount", 60)
    return loop_dir


def test_a_closed_terminal_mid_run_leaves_nothing(tmux: Callable[..., str],
                                                  tmp_path: Path) -> None:
    """What an SSH drop does: the terminal goes away (SIGHUP) while a validation runs. The run
    is cancelled and cleaned up: no loop device, mount, backing file or state file is left."""
    loop_dir = _start_a_loop_run(tmux, tmp_path, "true")
    tmux("kill-server")  # SIGHUP to everything in the pane
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (leftovers(loop_dir) or list(loop_dir.iterdir())
                                           or list((tmp_path / "state").glob("run-*.json"))):
        time.sleep(0.2)
    assert leftovers(loop_dir) == []
    assert list(loop_dir.iterdir()) == []
    assert not list((tmp_path / "state").glob("run-*.json"))


def test_a_killed_run_is_recovered_and_said(tmux: Callable[..., str], tmp_path: Path) -> None:
    """SIGKILL mid-run (nothing can clean up then): the next TUI's run first recovers what the
    dead one left, says so in a notice, and in the end nothing is left."""
    loop_dir = _start_a_loop_run(tmux, tmp_path, f"{_live_tui(tmp_path)}; sleep 60")
    screen = lambda: tmux("capture-pane", "-p", "-t", "advisor")  # noqa: E731
    try:
        pane = tmux("display-message", "-p", "-t", "advisor", "#{pane_pid}").strip()
        first = subprocess.run(["pgrep", "-P", pane], capture_output=True, text=True,
                               check=True).stdout.split()
        assert len(first) == 1, first
        os.kill(int(first[0]), signal.SIGKILL)
        _wait_for(screen, _list_filled, "the second TUI's device list")
        assert leftovers(loop_dir), "the killed run left nothing: the test proves nothing"
        tmux("send-keys", "-t", "advisor", "F5")
        _wait_for(screen, lambda s: "Command plan" in s, "the validation screen")
        tmux("send-keys", "-t", "advisor", "C-r")
        shown = _wait_for(screen, lambda s: "recovered:" in s, "the recovery notice", 60)
        assert "dead run" in shown
        tmux("send-keys", "-t", "advisor", "Escape")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (leftovers(loop_dir) or list(loop_dir.iterdir())):
            time.sleep(0.2)
        assert leftovers(loop_dir) == []
        assert list(loop_dir.iterdir()) == []
    finally:
        force_clean(str(loop_dir))


def test_q_mid_run_asks_then_cleans_up(tmux: Callable[..., str], tmp_path: Path) -> None:
    marker = tmp_path / "exit-code"
    loop_dir = _start_a_loop_run(tmux, tmp_path, f"echo $? > {marker}; sleep 60")
    screen = lambda: tmux("capture-pane", "-p", "-t", "advisor")  # noqa: E731
    tmux("send-keys", "-t", "advisor", "q")
    _wait_for(screen, lambda s: "A validation is running. Quit?" in s, "the question")
    assert leftovers(loop_dir), "asking must not stop the run"
    tmux("send-keys", "-t", "advisor", "y")
    _wait_for(screen, lambda s: "cleaning up the validation run" in s, "the clean-up notice")
    _wait_for(lambda: marker.read_text() if marker.exists() else "", lambda s: s.strip() == "0",
              "xfs-advisor to end with exit code 0", 60)
    assert leftovers(loop_dir) == []
    assert list(loop_dir.iterdir()) == []


def _start(tmux: Callable[..., str], sysroot: Path, size: tuple[int, int], *env: str,
           cwd: Path | None = None) -> Callable[[], str]:
    """The TUI over a capture in a tmux pane of `size`; returns the pane's reader."""
    where = ["-c", str(cwd)] if cwd else []
    tmux("new-session", "-d", "-s", "advisor", "-x", str(size[0]), "-y", str(size[1]), *where,
         "env", "-u", "COLUMNS", "-u", "LINES", "-u", "NO_COLOR", "TERM=xterm-256color",
         "COLORTERM=truecolor", *env, str(XFS_ADVISOR), "--sysroot", str(sysroot))
    screen = lambda: tmux("capture-pane", "-p", "-t", "advisor")  # noqa: E731
    _wait_for(screen, _list_filled, "the device list")
    return screen


def _keys(tmux: Callable[..., str], *keys: str) -> None:
    for key in keys:  # one at a time: a key may move the focus the next one depends on
        tmux("send-keys", "-t", "advisor", key)
        time.sleep(0.3)


def test_footer_at_80x24_shows_help_quit_and_every_step_key(
        tmux: Callable[..., str], shared_dumps: dict[str, Path]) -> None:
    """On the device list, and in a form field (where ? and q are typed, F1 and ^q show)."""
    screen = _start(tmux, shared_dumps["simple-nvme"], (80, 24))

    def footer_shows(*wanted: str) -> Callable[[str], bool]:
        return lambda s: all(w in s.splitlines()[-1] for w in wanted)

    steps = ("F2 Devices", "F3 Workload", "F4 Proposal", "F5 Validate")
    _wait_for(screen, footer_shows("? Help", "q Quit", *steps), "the list's footer")
    _keys(tmux, "Down", "Enter")  # nvme0n1p1, free: straight to the questions
    _wait_for(screen, footer_shows("F1 Help", "^q Quit", *steps, "esc Leave field"),
              "the form's footer, a field focused")
    # Escape first, alone: sent together, a terminal reads escape and ? as one key, Alt+?.
    _keys(tmux, "Escape")
    _wait_for(screen, footer_shows("? Help", "q Quit"), "the footer, the field left")
    _keys(tmux, "?")
    _wait_for(screen, lambda s: "escape, ?, F1 or q closes" in s, "the help, opened by ?")
    _keys(tmux, "Escape", "q")


def _dialog_text(screen: str) -> str:
    """The text inside the dialog box on screen (its lines between the box's borders), or ""."""
    lines = screen.splitlines()
    top = next((i for i, line in enumerate(lines) if "█▀▀" in line), None)
    if top is None:
        return ""
    left, right = lines[top].index("█▀▀") + 1, lines[top].rindex("▀█") + 1
    inside = []
    for line in lines[top + 1:]:
        if "▄▄█" in line:
            break
        inside.append(line[left:right])
    return "\n".join(inside)


def _unwrapped(text: str) -> str:
    """`text` without its white space: the same however it was wrapped or a long word folded."""
    return "".join(text.split())


def test_saving_over_a_file_asks_first(tmux: Callable[..., str], shared_dumps: dict[str, Path],
                                       tmp_path: Path) -> None:
    """ctrl+s offers workload.toml in the current folder; it exists: asked, `n` keeps it, `y`
    replaces it, and the notice names an absolute path. The question and the notice wrap where
    the test's folder makes them (its path is as long as pytest makes it): they are read
    unwrapped."""
    answers = tmp_path / "workload.toml"
    answers.write_text("# mine\n")
    screen = _start(tmux, shared_dumps["simple-nvme"], (100, 30), cwd=tmp_path)
    _keys(tmux, "Down", "Enter")
    _wait_for(screen, lambda s: "for nvme0n1p1" in s, "the form")
    _keys(tmux, "5", "C-s")
    _wait_for(screen, lambda s: "workload.toml" in s and "Save the answers" in s, "the prompt")
    _keys(tmux, "Enter")
    question = _unwrapped(f"{answers} exists. Replace it with the workload file?")
    _wait_for(screen, lambda s: question in _unwrapped(_dialog_text(s))
              and "Replace it (y)" in s and "Keep it (n)" in s, "the question")
    _keys(tmux, "n")
    _wait_for(screen, lambda s: "not saved" in s, "the notice")
    assert answers.read_text() == "# mine\n"
    _keys(tmux, "C-s")
    _wait_for(screen, lambda s: "Save the answers" in s, "the prompt again")
    _keys(tmux, "Enter")
    _wait_for(screen, lambda s: "Replace it (y)" in s, "the question again")
    _keys(tmux, "y")
    saved = "workload file saved to"
    shown = _wait_for(screen, lambda s: saved in s, "the saved notice").splitlines()
    # The path after it, on the same line or first on the notice's next line.
    at = next(i for i, line in enumerate(shown) if saved in line)
    column = shown[at].index(saved)
    path = shown[at][column + len(saved):].strip() or shown[at + 1][column:].strip()
    assert path.startswith("/"), "\n".join(shown)
    assert "largest_directory_entries = 5" in answers.read_text()
    _keys(tmux, "C-q")


def _style_at(escaped: str, text: str) -> tuple[tuple[int, ...], tuple[int, ...], bool]:
    """(foreground, background, reverse) in effect where `text` starts in a `capture-pane -e`."""
    line = next(ln for ln in escaped.splitlines() if text in ln)
    fg: tuple[int, ...] = (255, 255, 255)
    bg: tuple[int, ...] = (0, 0, 0)
    reverse = False
    for match in re.finditer(r"\x1b\[([0-9;]*)m|([^\x1b]+)", line):
        if match.group(2) is not None:
            if text in match.group(2):
                return fg, bg, reverse
            continue
        codes = [int(c) for c in match.group(1).split(";") if c] or [0]
        i = 0
        while i < len(codes):
            code = codes[i]
            if code == 0:
                fg, bg, reverse = (255, 255, 255), (0, 0, 0), False
            elif code == 7:
                reverse = True
            elif code in (38, 48) and codes[i + 1] == 2:
                rgb = tuple(codes[i + 2:i + 5])
                fg, bg = (rgb, bg) if code == 38 else (fg, rgb)
                i += 4
            i += 1
    raise AssertionError(f"{text!r} not found in {line!r}")


def test_no_color_badges_are_readable(tmux: Callable[..., str],
                                      shared_dumps: dict[str, Path]) -> None:
    """NO_COLOR: "mounted /home" was grey 237 on 235. Now in reverse video: its text and its
    background differ by more than half the grey scale."""
    _start(tmux, shared_dumps["simple-nvme"], (100, 30), "NO_COLOR=1")
    time.sleep(0.5)
    fg, bg, reverse = _style_at(tmux("capture-pane", "-p", "-e", "-t", "advisor"),
                                "mounted /home")
    assert reverse or abs(sum(fg) - sum(bg)) / 3 > 128, (fg, bg, reverse)
    assert abs(sum(fg) - sum(bg)) / 3 > 128, (fg, bg)  # either way round, far apart
    _keys(tmux, "q")


def test_the_linux_console_gets_only_characters_its_font_has(
        tmux: Callable[..., str], shared_dumps: dict[str, Path]) -> None:
    """TERM=linux: the device list, the form, the proposal and the help draw nothing outside
    cp437 (no rounded corners, eighth blocks, ellipsis, dash or braille)."""
    screen = _start(tmux, shared_dumps["simple-nvme"], (80, 24), "TERM=linux")
    font = set(bytes(range(256)).decode("cp437"))
    seen = [screen()]
    _keys(tmux, "Down", "Enter")
    seen.append(_wait_for(screen, lambda s: "for nvme0n1p1" in s, "the form"))
    _keys(tmux, "F4")
    seen.append(_wait_for(screen, lambda s: "mkfs.xfs" in s and "computing" not in s,
                          "the proposal"))
    _keys(tmux, "?")
    seen.append(_wait_for(screen, lambda s: "closes" in s, "the help"))
    outside = {c for s in seen for c in s if c not in font}
    assert not outside, sorted(outside)
    _keys(tmux, "Escape", "q")


BRAILLE = re.compile("[\u2800-\u28ff]")
LEGEND = re.compile(r"[AB]+ (A defaults|B proposal)")


def _plot_rows(screen: str) -> str:
    """The plots' rows (y axis ticks), without their legends."""
    return "\n".join(LEGEND.sub("", line) for line in screen.splitlines() if "┤" in line)


@pytest.mark.parametrize("env", ["colour", "NO_COLOR=1", "TERM=linux"])
def test_plot_series_differ_without_colour(tmux: Callable[..., str],
                                           shared_dumps: dict[str, Path], tmp_path: Path,
                                           env: str) -> None:
    """A and B per round: in colour two braille lines; with NO_COLOR (where both would be the
    same grey) and on the Linux console (no braille in its font) each round is the letter of
    its side, the legend says which is which, and nothing outside cp437 is drawn there."""
    from tests.tui.test_validate import report_with_rounds

    report = tmp_path / "report.json"
    report.write_text(report_with_rounds(6).model_dump_json())
    term = env if env.startswith("TERM=") else "TERM=xterm-256color"
    extra = [env] if env.startswith("NO_COLOR") else []
    tmux("new-session", "-d", "-s", "advisor", "-x", "120", "-y", "70", "-c", str(REPO),
         "env", "-u", "COLUMNS", "-u", "LINES", "-u", "NO_COLOR", term, "COLORTERM=truecolor",
         *extra, str(REPO / ".venv" / "bin" / "python"), "-m", "tests.tui.show_report",
         str(shared_dumps["simple-nvme"]), str(report))
    screen = _wait_for(lambda: tmux("capture-pane", "-p", "-t", "advisor"),
                       lambda s: "round" in s and "B proposal" in s, "the plots")
    rows = _plot_rows(screen)
    assert "A defaults" in screen and "B proposal" in screen
    if env == "colour":
        assert BRAILLE.search(rows), screen
    else:
        assert not BRAILLE.search(screen), screen
        assert rows.count("A") >= 6 and rows.count("B") >= 6, screen  # a letter per round
    if env == "TERM=linux":
        font = set(bytes(range(256)).decode("cp437"))
        assert not {c for c in screen if c not in font}, screen
    # Whole rounds under the plots.
    axis = next((line for line in screen.splitlines() if re.search(r"^\s*1\s+2\s", line)), screen)
    assert not re.search(r"\d\.\d", axis), axis
    _keys(tmux, "q")


def test_a_refused_target_says_why_and_cannot_start(tmux: Callable[..., str],
                                                    tmp_path: Path) -> None:
    """The live TUI, F5, the target list: a loop device holding ext4 is listed as refused with
    the guard's words (no "ERASED", no box to type into, no "run as root"); ctrl+r on it says
    it cannot be used, and its ext4 is still there."""
    from tests.conftest import loop_device, sh

    require_root_tools("losetup", "mkfs.ext4", "blkid")
    with loop_device(tmp_path / "ext4.img", 1 << 30) as dev:
        sh("mkfs.ext4", "-q", dev)
        name = Path(dev).name
        tmux("new-session", "-d", "-s", "advisor", "-x", "160", "-y", "45",
             _live_tui(tmp_path))
        screen = lambda: tmux("capture-pane", "-p", "-t", "advisor")  # noqa: E731
        _wait_for(screen, _list_filled, "the device list")
        _keys(tmux, "F5")
        _wait_for(screen, lambda s: "Command plan" in s, "the validation screen")
        _keys(tmux, "Tab")
        refusal = f"refused: {name} cannot be used for the run"
        for attempt in range(3):  # under load, type-to-find in the list can miss a key
            _keys(tmux, "Enter")  # the target list, open
            # Its own key, not a row: which devices show first depends on the host's others.
            _wait_for(screen, lambda s: "Dismiss menu" in s, "the open target list")
            # Type to find it: the name and the space after it, so that loop1 is not loop10.
            tmux("send-keys", "-t", "advisor", "-l", f"{name} (")
            time.sleep(1.0)
            _keys(tmux, "Enter")
            try:
                shown = _wait_for(screen, lambda s: refusal in s, "the refusal", 10)
                break
            except AssertionError:
                if attempt == 2:
                    raise
                if "Dismiss menu" in screen():
                    _keys(tmux, "Escape")  # still open: close it and try again
        assert f"{name} (1 GiB): refused, it holds data: ext4" in shown, shown
        assert "ext4" in shown and "ERASED" not in shown.split("Command plan")[0], shown
        assert "Type its name" not in shown and "run as root" not in shown
        _keys(tmux, "C-r")
        said = _wait_for(screen, lambda s: "choose another target" in s, "the notice")
        assert "box" not in said, said
        _keys(tmux, "C-q")
        assert sh("blkid", "-o", "value", "-s", "TYPE", dev).stdout.strip() == "ext4"
