"""Saving from the TUI: an existing file is replaced only after asking, `~` is the home folder, the
notice names the absolute path, and the shipped example is never the offered name."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input

import advisor
from advisor.answers import load_workload
from advisor.models.proposal import Proposal
from advisor.models.workload import Workload
from advisor.tui.app import AdvisorApp
from advisor.tui.dialogs import Confirm, default_save_name
from tests.tui.conftest import AppFactory, answer_prompt

EXAMPLE = Path(advisor.__file__).parent / "data" / "example-workload.toml"


def _notices(app: AdvisorApp) -> list[str]:
    return [n.message for n in app._notifications]


async def test_ctrl_s_asks_before_replacing_answers(make_app: AppFactory, tmp_path: Path,
                                                    frozen_proposal: Proposal) -> None:
    target = tmp_path / "answers.toml"
    target.write_text("# mine\n")
    app = make_app(device="nvme0n1", start="workload")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(*"2000000")
        await answer_prompt(app, pilot, "ctrl+s", str(target))
        assert isinstance(app.screen, Confirm)
        assert str(target) in app.screen.question
        await pilot.press("enter")  # the focused button is "Keep it"
        await pilot.pause()
        assert target.read_text() == "# mine\n"  # kept: the answer was no
        assert _notices(app)[-1] == "not saved"
        await answer_prompt(app, pilot, "ctrl+s", str(target))
        await pilot.press("y")
        await pilot.pause()
    assert load_workload(target) == Workload(largest_directory_entries=2000000)
    assert _notices(app)[-1] == f"workload file saved to {target}"


async def test_s_asks_before_replacing_a_script_and_expands_home(
        make_app: AppFactory, tmp_path: Path, frozen_proposal: Proposal,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    script = tmp_path / "p.sh"
    script.write_text("echo mine\n")
    app = make_app(device="vg0-data", start="proposal")
    async with app.run_test(size=(100, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await answer_prompt(app, pilot, "s", "~/p.sh")
        assert isinstance(app.screen, Confirm)
        await pilot.press("escape")  # escape says no, like n
        await pilot.pause()
        assert script.read_text() == "echo mine\n"
        await answer_prompt(app, pilot, "s", "~/new.sh")  # a new file: no question
        assert not isinstance(app.screen, Confirm)
    saved = (tmp_path / "new.sh").read_text()
    assert frozen_proposal.mkfs_command in saved
    assert _notices(app)[-1] == f"proposal script saved to {tmp_path / 'new.sh'}"


async def test_the_shipped_example_is_never_offered_as_the_save_name(
        make_app: AppFactory, frozen_proposal: Proposal) -> None:
    app = make_app(device="nvme0n1", start="workload")
    async with app.run_test(size=(100, 30)) as pilot:
        await answer_prompt(app, pilot, "ctrl+o", str(EXAMPLE))
        assert app.state.workload_path == str(EXAMPLE)  # it was loaded...
        await pilot.press("ctrl+s")
        await pilot.pause()
        offered = app.screen.query_one("#prompt-path", Input).value
    assert offered == "workload.toml"  # ...but saving offers a name in the current folder


def test_default_save_name(tmp_path: Path) -> None:
    assert default_save_name(None, "workload.toml") == "workload.toml"
    assert default_save_name(str(EXAMPLE), "workload.toml") == "workload.toml"
    mine = str(tmp_path / "mine.toml")
    assert default_save_name(mine, "workload.toml") == mine


async def test_ctrl_o_expands_home(make_app: AppFactory, tmp_path: Path,
                                   frozen_proposal: Proposal,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "ans.toml").write_text('access = "mixed"\n')
    app = make_app(device="nvme0n1", start="workload")
    async with app.run_test(size=(100, 30)) as pilot:
        await answer_prompt(app, pilot, "ctrl+o", "~/ans.toml")
    assert app.state.workload == Workload(access="mixed")
    assert app.state.workload_path == str(tmp_path / "ans.toml")
    assert _notices(app)[-1] == f"answers loaded from {tmp_path / 'ans.toml'}"
