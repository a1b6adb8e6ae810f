"""Steps 2 and 3 by keys, with the real engine (mkfs.xfs -N dry runs): answers checked as typed,
saved and loaded, and the proposal following the answers."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Input, Static

from advisor.answers import load_workload
from advisor.models.proposal import Proposal
from advisor.models.workload import Workload
from advisor.tui.app import AdvisorApp
from advisor.tui.form import check, questions, values_of
from tests.conftest import require
from tests.tui.conftest import AppFactory, answer_prompt


def _text(app: AdvisorApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def test_form_questions_come_from_the_contract() -> None:
    keys = [q.key for q in questions()]
    assert keys[0] == "largest_directory_entries"
    assert keys[-4:] == ["storage.raid_stripe_unit", "storage.raid_data_disks",
                         "storage.nonvolatile_write_cache", "storage.kind"]
    assert keys.index("writer_activity") == keys.index("concurrent_writers") + 1
    kinds = {q.key: q.kind for q in questions()}
    assert kinds["access"] == "choice" and kinds["atime_needed"] == "yes-no"
    assert next(q for q in questions() if q.key == "eventual_size").is_size
    assert all(q.help for q in questions())


def test_form_check_maps_errors_to_fields() -> None:
    result = check({"concurrent_writers": "0", "median_file_size": "12 parsecs",
                    "storage.raid_data_disks": "4"})
    assert result.workload is None
    assert set(result.field_errors) == {"concurrent_writers", "median_file_size"}
    both = check({"eventual_size": "40TiB", "growth_factor": "3"})
    assert both.field_errors == {} and both.form_error is not None
    assert both.form_error == "give eventual size or growth factor, not both"
    ok = check({"median_file_size": "64KiB", "atime_needed": False, "access": None})
    assert ok.workload == Workload(median_file_size=65536, atime_needed=False)
    assert values_of(ok.workload)["median_file_size"] == "64KiB"


async def test_answers_are_checked_as_typed(make_app: AppFactory,
                                            frozen_proposal: Proposal) -> None:
    app = make_app(device="nvme0n1", start="workload")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert app.focused is not None and app.focused.id == "q-largest-directory-entries"
        app.screen.query_one("#q-concurrent-writers", Input).focus()
        await pilot.press("0")
        assert "must be at least 1" in _text(app, "#q-concurrent-writers-error")
        assert app.state.workload_problem is not None
        await pilot.press("backspace", "1", "6")
        assert _text(app, "#q-concurrent-writers-error") == ""
        assert app.state.workload.concurrent_writers == 16
        assert app.state.workload_problem is None
        await pilot.press("enter")  # Enter moves on to the next question
        assert app.focused is not None and app.focused.id == "q-writer-activity"


async def test_workload_file_save_and_load(make_app: AppFactory, tmp_path: Path,
                                           frozen_proposal: Proposal) -> None:
    target = tmp_path / "answers.toml"
    app = make_app(device="nvme0n1", start="workload")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(*"2000000")
        await answer_prompt(app, pilot, "ctrl+s", str(target))
        assert load_workload(target) == Workload(largest_directory_entries=2000000)
        target.write_text('access = "write-heavy"\nmedian_file_size = "1MiB"\n')
        await answer_prompt(app, pilot, "ctrl+o", str(target))
        assert app.state.workload == Workload(access="write-heavy", median_file_size=1 << 20)
        assert app.screen.query_one("#q-median-file-size", Input).value == "1MiB"
        assert app.screen.query_one("#q-largest-directory-entries", Input).value == ""
        bad = tmp_path / "bad.toml"
        bad.write_text("colour = 3\n")
        await answer_prompt(app, pilot, "ctrl+o", str(bad))
        assert app.state.workload.access == "write-heavy"  # a bad file changes nothing


async def test_saving_never_writes_into_a_fifo_or_blocks(make_app: AppFactory, tmp_path: Path,
                                                         frozen_proposal: Proposal) -> None:
    """ctrl+s onto a FIFO used to block the screen (open() waits for a reader) or replace it:
    now it is refused with a notice and left a FIFO; through a symlink the file it names is
    written and the link stays. Both exist: replacing them is confirmed first (y)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    real = tmp_path / "real.toml"
    real.write_text("# old\n")
    link = tmp_path / "link.toml"
    link.symlink_to(real)
    app = make_app(device="nvme0n1", start="workload")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(*"2000000")
        for target in (fifo, link):
            await answer_prompt(app, pilot, "ctrl+s", str(target))
            await pilot.press("y")
            await pilot.pause()
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert link.is_symlink() and load_workload(real) == Workload(
        largest_directory_entries=2000000)
    assert app.state.workload_path == str(real)


async def _proposal_settled(app: AdvisorApp, pilot: Pilot[Any]) -> None:
    """Wait until the proposal is for the answers on screen: keys typed while a dry run works
    are coalesced into one more run, started when the first one's end is handled (after
    `wait_for_complete` may already have returned)."""
    for _ in range(600):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if not app.state.proposing:
            return
        await pilot.pause(0.05)
    raise AssertionError("the proposal never settled")


async def test_proposal_follows_the_answers(make_app: AppFactory) -> None:
    require(shutil.which("mkfs.xfs") is not None, "needs mkfs.xfs for the dry runs")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("down", "enter")  # nvme0n1 (after loop0)
        await pilot.press("f4")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.current_mode == "proposal"
        first = app.state.proposal
        assert first is not None, app.state.proposal_problem
        assert _text(app, "#mkfs") == first.mkfs_command
        assert first.mkfs_argv[-1] == "/dev/nvme0n1"
        await pilot.press("f3")
        await pilot.press(*"5000000")
        await _proposal_settled(app, pilot)
        second = app.state.proposal
        assert second is not None and second is not first
        assert app.state.workload.largest_directory_entries == 5000000
        # 5M entries and no access pattern: the answer decides the directory block size.
        mkfs, asked = _text(app, "#preview").split("\n", 1)
        assert mkfs == "mkfs: " + second.mkfs_command
        assert asked.startswith("1 answer would change this: access (5,000,000 entries"), asked
        await pilot.press("f4")
        await pilot.pause()
        assert _text(app, "#mkfs") == second.mkfs_command
        await pilot.press("c")
        assert app.clipboard == second.mkfs_command


async def test_preselected_device_and_workload_open_on_the_proposal(make_app: AppFactory,
                                                                    tmp_path: Path) -> None:
    require(shutil.which("mkfs.xfs") is not None, "needs mkfs.xfs for the dry runs")
    app = make_app(device="loop0", workload=Workload(atime_needed=False), start="proposal")
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.current_mode == "proposal"
        proposal = app.state.proposal
        assert proposal is not None
        assert "noatime" in proposal.fstab
        await answer_prompt(app, pilot, "s", str(tmp_path / "p.sh"))
        saved = (tmp_path / "p.sh").read_text()
        assert proposal.mkfs_command in saved and proposal.fstab in saved


async def test_no_device_means_no_proposal(make_app: AppFactory) -> None:
    app = make_app(start="proposal")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "No device chosen" in _text(app, "#problem")
        await pilot.press("c")
        assert app.clipboard == ""


async def test_directory_scan_fills_what_it_measures(make_app: AppFactory, tmp_path: Path,
                                                     frozen_proposal: Proposal) -> None:
    data = tmp_path / "data" / "big"
    data.mkdir(parents=True)
    for i in range(50):
        (data / f"f{i}").write_bytes(b"x" * 8192)
    app = make_app(device="nvme0n1", workload=Workload(access="read-heavy"), start="workload")
    async with app.run_test(size=(100, 30)) as pilot:
        await answer_prompt(app, pilot, "ctrl+f", str(tmp_path / "data"))
        await app.screen.workers.wait_for_complete()
        await pilot.pause()
        workload = app.state.workload
        assert workload.largest_directory_entries == 50
        assert workload.median_file_size == 8192
        assert workload.access == "read-heavy"  # what a scan cannot know is kept
        assert app.screen.query_one("#q-median-file-size", Input).value == "8KiB"
