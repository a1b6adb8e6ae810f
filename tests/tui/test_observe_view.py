"""The TUI's live view: `o` on the device screen watches the highlighted device's mounted XFS,
refreshing the rates every second and showing findings as they appear; escape stops it."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Label, Static

from advisor.models.observe import ObserveDocument
from advisor.session import Session
from advisor.tui.app import AdvisorApp
from advisor.tui.dialogs import PathPrompt
from advisor.tui.observe import ObserveScreen, RatesPlot
from tests.conftest import loop_device, mounted, require_root_tools, sh
from tests.observe.test_observe import ADVISOR, APPENDS, REPO
from tests.tui.conftest import AppFactory
from tests.tui.live import key_on_device

SnapCompare = Callable[..., bool]


@asynccontextmanager
async def _watching(tmp_path: Path) -> AsyncIterator[tuple[AdvisorApp, Pilot[int], str, Path]]:
    """A new XFS on a loop device, mounted, and `o` pressed on it: the app (its screen the live
    view), its pilot, the device and the mount point."""
    require_root_tools("losetup", "mkfs.xfs", "mount")
    with loop_device(tmp_path / "fs.img", 512 << 20) as dev:
        sh("mkfs.xfs", "-q", "-f", dev)
        with mounted(dev, tmp_path / "mnt") as mnt:
            async with key_on_device(dev, "o", (140, 50)) as (app, pilot):
                yield app, pilot, dev, mnt


async def test_o_shows_a_live_view_with_findings_as_they_appear(tmp_path: Path) -> None:
    async with _watching(tmp_path) as (app, pilot, _dev, mnt):
        screen = app.screen
        assert isinstance(screen, ObserveScreen)
        writer = subprocess.Popen([sys.executable, "-c", APPENDS, "interleaved",
                                   str(mnt / "files")])
        try:
            body = ""
            deadline = time.monotonic() + 60
            # the finding can show on the first reading: wait for it and a second one
            while (("[allocsize]" not in body or screen.refreshes < 2)
                   and time.monotonic() < deadline):
                await asyncio.sleep(0.5)
                body = str(screen.query_one("#observe-body", Static).render())
        finally:
            writer.kill()
            writer.wait()
        assert "counters only, refreshed every second" in body, body
        assert "fsync" in body or "log forces" in body, body
        assert "[allocsize]" in body, body
        assert screen.refreshes >= 2
        # The key rates are plotted over time: the writer's transactions and log
        # writes moved, one point a reading; removes and attribute sets did not.
        plot = screen.query_one("#observe-plot", RatesPlot)
        assert "transactions committed" in plot.shown, plot.series
        assert "log buffer writes" in plot.shown, plot.series
        assert "extended attributes set" not in plot.shown, plot.series
        assert all(len(points) == screen.refreshes for points in plot.series.values())
        plot.plt.plotsize(100, 14)
        drawn = re.sub(r"\x1b\[[0-9;]*m", "", plot.plt.build())
        assert "transactions committed" in drawn and "seconds since the view opened" \
            in drawn, drawn
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ObserveScreen)
        seen = screen.refreshes  # a reading may land while escape is on its way
        await asyncio.sleep(1.5)
        assert screen.refreshes == seen  # the reading stopped with the view
        assert not [w for w in screen.workers if w.is_running]


CREATES = """
import os, sys
folder, count = sys.argv[1], int(sys.argv[2])
os.makedirs(folder)
for i in range(count):
    open(f"{folder}/f{i}", "w").close()
"""


async def test_r_records_what_the_view_reads_and_saves_it_for_replay(tmp_path: Path) -> None:
    """`r` starts a recording, 300 files are created, `r` stops it and asks where to save it:
    the file is the recording `observe --record` makes, and `observe --replay` reports the
    creates from it (the 300 files and their folder)."""
    async with _watching(tmp_path) as (app, pilot, dev, mnt):
        screen = app.screen
        assert isinstance(screen, ObserveScreen)
        status = screen.query_one("#observe-record", Label)
        assert "r records" in str(status.render())

        async def until(done: Callable[[], bool], what: str) -> None:
            deadline = time.monotonic() + 30
            while not done():
                assert time.monotonic() < deadline, what
                await asyncio.sleep(0.1)

        await until(lambda: any(w.is_running for w in screen.workers), "worker")
        await pilot.press("r")
        await until(lambda: screen.recording, "the recording to start")
        assert "recording since" in str(status.render())
        subprocess.run([sys.executable, "-c", CREATES, str(mnt / "made"), "300"],
                       check=True)
        await pilot.press("r")
        await until(lambda: isinstance(app.screen, PathPrompt), "the save prompt")
        field = app.screen.query_one("#prompt-path", Input)
        assert field.value == f"observe-{Path(dev).name}.json"
        saved = tmp_path / "seen.json"
        field.value = str(saved)
        await pilot.press("enter")
        await until(saved.exists, "the recording to be saved")
        assert app.screen is screen and not screen.recording
        assert "r records" in str(status.render())
        await pilot.press("escape")
    recording = json.loads(saved.read_text())
    assert recording["format"] == "xfs-advisor observe recording"
    (fs,) = recording["filesystems"]
    assert fs["mountpoint"] == str(mnt) and fs["tracepoints"] is None
    replay = subprocess.run([*ADVISOR, "observe", "--json", "--replay", str(saved)],
                            capture_output=True, text=True, cwd=REPO, timeout=60)
    assert replay.returncode == 0, replay.stderr
    (observed,) = json.loads(replay.stdout)["filesystems"]
    creates = next(r for r in observed["rates"] if r["name"] == "creates")
    assert creates["evidence"]["delta"] == 301, creates  # the files and their folder
    text = subprocess.run([*ADVISOR, "observe", "--replay", str(saved)], capture_output=True,
                          text=True, cwd=REPO, timeout=60).stdout
    assert "tracepoints: not counted (the live view reads the counters only)" in text, text


class CannedLive:
    """Three seconds of a metadata workload, as the live view's own code turns counter readings
    into text and rates: readings written here (a snapshot needs the same figures every run)."""

    def __init__(self) -> None:
        from advisor.models.observe import RecordedReading

        def reading(second: int, creates: int, sets: int) -> RecordedReading:
            return RecordedReading(
                xfs={"trans.async": 3 * creates + 2 * sets, "log.writes": creates // 10,
                     "log.blocks": creates * 2, "log.force": creates // 40,
                     "dir.create": creates, "dir.remove": creates // 2, "attr.set": sets,
                     "rw.write_calls": creates},
                block={"write_ios": creates // 8, "write_sectors": creates * 4},
                at=100.0 + second, wall=1_790_000_000.0 + second)

        self.readings = [reading(0, 0, 0), reading(1, 1200, 0), reading(2, 3000, 900),
                         reading(3, 3600, 2400)]
        self.steps = 0

    def step(self) -> tuple[ObserveDocument, ObserveDocument]:
        from advisor.models.observe import RecordedFilesystem, Recording, Tracing
        from advisor.observe.observation import document_from

        def document(before: int, after: int) -> ObserveDocument:
            fs = RecordedFilesystem(mountpoint="/srv/data", device="dm-3", maj_min="253:3",
                                    before=self.readings[before], after=self.readings[after])
            return document_from(Recording(seconds=after - before, filesystems=[fs],
                                           tracing=Tracing(method="none")))

        self.steps += 1
        return document(self.steps - 1, self.steps), document(0, self.steps)


def test_snapshot_of_the_view_after_three_readings(snap_compare: SnapCompare,
                                                   make_app: AppFactory,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """What a second-by-second reading shows: the title with its keys, the recording line, the
    key rates plotted over three readings (creates, removes, transactions, then attribute sets
    joining), and the last second's rates. The readings are posted by the test, not by the
    worker's clock."""
    import advisor.tui.observe as view

    monkeypatch.setattr(view, "REFRESH", 3600.0)
    live = CannedLive()
    monkeypatch.setattr(Session, "live_observation", lambda self, device: live)
    app = make_app(device="vg0-data", start="devices")

    async def open_and_read(pilot: Pilot[Any]) -> None:
        device = app.state.inventory.get("vg0-data")
        assert device is not None
        await app.push_screen(ObserveScreen(app.state.session, device))
        await pilot.pause()
        for _ in range(3):
            app.screen.post_message(view.Refreshed(*Session.live_reading(live)))  # type: ignore[arg-type]
            await pilot.pause()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=open_and_read)


class CannedRecordingLive(CannedLive):
    """CannedLive that records too: start_recording and stop_recording as LiveObservation has
    them, the recording made of the canned readings (the first and the last)."""

    def __init__(self) -> None:
        super().__init__()
        self.recording = False

    def start_recording(self) -> None:
        self.recording = True

    def stop_recording(self) -> Any:
        from advisor.models.observe import RecordedFilesystem, Recording, Tracing

        self.recording = False
        fs = RecordedFilesystem(mountpoint="/srv/data", device="dm-3", maj_min="253:3",
                                before=self.readings[0], after=self.readings[-1])
        return Recording(seconds=3, filesystems=[fs], tracing=Tracing(method="none"))


async def test_closing_while_recording_asks_save_discard_or_keep_watching(
        make_app: AppFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Escape while `r` records asks what to do with the recording: `k` keeps watching (still
    recording), `d` discards it and closes the view, `s` stops it, asks where to save it, and
    closes the view once it is saved (the file is the recording, for observe --replay)."""
    import advisor.tui.observe as view

    monkeypatch.setattr(view, "REFRESH", 3600.0)
    live = CannedRecordingLive()
    monkeypatch.setattr(Session, "live_observation", lambda self, device: live)
    app = make_app(device="vg0-data", start="devices")

    async def until(done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + 30
        while not done():
            assert time.monotonic() < deadline, what
            await asyncio.sleep(0.05)

    async with app.run_test(size=(120, 40)) as pilot:
        device = app.state.inventory.get("vg0-data")
        assert device is not None

        async def open_and_record() -> ObserveScreen:
            screen = ObserveScreen(app.state.session, device)
            await app.push_screen(screen)
            await until(lambda: any(w.is_running for w in screen.workers), "the worker")
            await pilot.press("r")
            await until(lambda: screen.recording, "the recording to start")
            return screen

        screen = await open_and_record()
        await pilot.press("escape")
        await until(lambda: isinstance(app.screen, view.CloseWhileRecording), "the question")
        question = str(app.screen.query_one("#close-question", Label).render())
        assert "recording" in question and "Save" in question, question
        await pilot.press("k")
        await until(lambda: app.screen is screen, "back to the view")
        assert screen.recording and live.recording
        assert any(w.is_running for w in screen.workers)

        await pilot.press("escape")
        await until(lambda: isinstance(app.screen, view.CloseWhileRecording), "the question")
        await pilot.press("d")
        await until(lambda: not isinstance(app.screen, (ObserveScreen,
                                                        view.CloseWhileRecording)), "closed")
        await until(lambda: not any(w.is_running for w in screen.workers), "the worker's end")
        assert "the recording was discarded" in [n.message for n in app._notifications]

        screen = await open_and_record()
        await pilot.press("escape")
        await until(lambda: isinstance(app.screen, view.CloseWhileRecording), "the question")
        await pilot.press("s")
        await until(lambda: isinstance(app.screen, PathPrompt), "the save prompt")
        assert not live.recording  # stopped: the counters that end it were read
        saved = tmp_path / "kept.json"
        app.screen.query_one("#prompt-path", Input).value = str(saved)
        await pilot.press("enter")
        await until(saved.exists, "the recording to be saved")
        await until(lambda: not isinstance(app.screen, ObserveScreen), "closed once saved")
        await until(lambda: not any(w.is_running for w in screen.workers), "the worker's end")
    recording = json.loads(saved.read_text())
    assert recording["format"] == "xfs-advisor observe recording"
    assert recording["filesystems"][0]["after"]["xfs"]["dir.create"] == 3600
