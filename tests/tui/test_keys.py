"""The first try, by keys: the form never traps `q` and `?`, the footer shows the keys that work,
help and the palette tell the truth, a device in use is not chosen silently, no view shows
something stale."""

from __future__ import annotations

import time
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Footer, Input, Label, Static
from textual.widgets._footer import FooterKey

from advisor.models.device import Inventory
from advisor.models.proposal import Proposal
from advisor.models.workload import Workload
from advisor.render.devices import unprobed_reason
from advisor.session import Session
from advisor.tui.app import AdvisorApp
from advisor.tui.dialogs import Confirm
from advisor.tui.help import GENERAL, STEP_HELP
from tests.tui.conftest import AppFactory, from_palette
from tests.tui.inventory import build_inventory

STEP_KEYS = ["F2", "F3", "F4", "F5"]


def _text(app: AdvisorApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def _footer(app: AdvisorApp, pilot: Pilot[Any], width: int) -> dict[str, str]:
    """The footer's keys that are wholly on screen: key shown -> what it does (waiting a little
    for the footer, which draws its keys once the screen's bindings settle)."""
    shown: dict[str, str] = {}
    for _ in range(50):
        await pilot.pause(0.05)
        footer = app.screen.query_one(Footer)
        shown = {key.key_display: key.description for key in footer.query(FooterKey)
                 if key.region.right <= width and key.region.width > 0}
        if shown:
            break
    return shown


# ---- the form never swallows q and ? silently ----

async def test_escape_leaves_the_field_then_q_and_question_mark_work(
        make_app: AppFactory, frozen_proposal: Proposal) -> None:
    app = make_app(device="nvme0n1", start="workload")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        field = app.screen.query_one("#q-largest-directory-entries", Input)
        assert app.focused is field
        shown = await _footer(app, pilot, 80)
        # In a field, ? and q are typed: the footer offers F1 and ctrl+q, and the way out.
        assert shown.get("F1") == "Help" and shown.get("^q") == "Quit"
        assert "?" not in shown and "q" not in shown and shown.get("esc") == "Leave field"
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.focused, Input)
        shown = await _footer(app, pilot, 80)
        assert shown.get("?") == "Help" and shown.get("q") == "Quit"
        assert shown.get("enter") == "Edit"
        await pilot.press("question_mark")
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("enter")  # back into the field it left
        assert app.focused is field
        await pilot.press("escape", "q")
        await pilot.pause()
    assert app.return_code == 0
    assert field.value == ""  # q never went into the field


@pytest.mark.parametrize("step", ["devices", "workload", "proposal", "validate"])
async def test_footer_at_80x24_shows_help_quit_and_every_step_key(
        make_app: AppFactory, frozen_proposal: Proposal, step: str) -> None:
    app = make_app(device="vg0-data", start=step)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        shown = await _footer(app, pilot, 80)
    assert "Help" in shown.values() and "Quit" in shown.values()
    assert all(key in shown for key in STEP_KEYS), shown


async def test_questions_follow_each_other_without_gaps_at_60x20(
        make_app: AppFactory, frozen_proposal: Proposal) -> None:
    app = make_app(device="nvme0n1", start="workload")
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause()
        form = app.screen.query_one("#form").region
        names = [label.region for label in app.screen.query(".question-name").results(Label)]
        helps = [s.region for s in app.screen.query(".question-help").results(Static)]
        visible = [r for r in names if r.y >= form.y and r.bottom <= form.bottom]
        assert len(visible) >= 3, f"{len(visible)} question(s) visible at 60x20"
        for name, help_region, following in zip(names, helps, names[1:], strict=False):
            assert help_region.y == name.bottom  # the help right under its question
            assert following.y == help_region.bottom  # and the next question right after


# ---- help and palette tell the truth ----

def test_help_says_the_real_keys() -> None:
    assert "`ctrl+r` starts" in STEP_HELP["validate"]
    assert "`Enter` starts" not in STEP_HELP["validate"]
    for key in ("`ctrl+p`", "`ctrl+t`", "`F1`", "`j`/`k`", "Close this help"):
        assert key in GENERAL
    assert "OSC 52" in STEP_HELP["proposal"] and "terminal's clipboard" in STEP_HELP["proposal"]


@pytest.mark.parametrize(("step", "wanted"), [
    ("workload", ["Save answers (ctrl+s)", "Load answers (ctrl+o)", "Fill from a scan (ctrl+f)"]),
    ("proposal", ["Copy the mkfs command (c)", "Copy the fstab line (f)", "Save script (s)"]),
    ("validate", ["Validate: run the A/B benchmark (ctrl+r)"]),
])
async def test_palette_offers_the_steps_actions(make_app: AppFactory, frozen_proposal: Proposal,
                                                step: str, wanted: list[str]) -> None:
    app = make_app(device="vg0-data", start=step)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(app.screen)]
    assert set(wanted) <= set(titles), titles


async def test_palette_copies_and_the_notice_does_not_overclaim(
        make_app: AppFactory, frozen_proposal: Proposal) -> None:
    app = make_app(device="vg0-data", start="proposal")
    async with app.run_test(size=(100, 30)) as pilot:
        await app.workers.wait_for_complete()
        await from_palette(pilot, "Copy the mkfs")
        assert app.clipboard == frozen_proposal.mkfs_command
        notices = [n.message for n in app._notifications]
    assert notices[-1] == "mkfs command sent to the terminal's clipboard"


async def test_the_workload_step_does_not_send_you_to_itself(
        make_app: AppFactory, frozen_proposal: Proposal) -> None:
    app = make_app(device="nvme0n1", start="workload")
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("minus")  # an invalid answer
        await pilot.pause()
        assert "F3" not in _text(app, "#preview") + _text(app, "#form-status")
        await pilot.press("f4")
        await pilot.pause()
        assert "F3 to fix them" in _text(app, "#problem")


async def test_j_and_k_move_in_the_device_list(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("j", "j", "j", "k")
        assert app.screen.query_one("#device-table", DataTable).cursor_row == 2


# ---- choosing a device in use ----

async def test_choosing_a_mounted_device_asks_first(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("down", "down", "down", "enter")  # sda1, mounted on /
        await pilot.pause()
        assert isinstance(app.screen, Confirm)
        assert "sda1 is in use (mounted /)" in app.screen.question
        await pilot.press("n")
        await pilot.pause()
        assert app.current_mode == "devices" and app.state.device_name is None
        await pilot.press("enter", "y")
        await pilot.pause()
        assert app.current_mode == "workload" and app.state.device_name == "sda1"
        await pilot.press("f2", "up", "up", "up", "enter")  # loop0 is free: no question
        await pilot.pause()
        assert app.current_mode == "workload" and app.state.device_name == "loop0"


def test_the_unprobed_reason_never_tells_root_to_run_as_root() -> None:
    device = next(d for d in build_inventory().devices if d.name == "nvme0n1")
    assert unprobed_reason(device, live=True, as_root=False) == "not probed (run as root)"
    assert "root" not in unprobed_reason(device, live=True, as_root=True)
    assert "capture" in unprobed_reason(device, live=False, as_root=True)
    failed = device.model_copy(update={"notes": ["libblkid: Permission denied"]})
    assert unprobed_reason(failed, live=True, as_root=True) == "libblkid failed: Permission denied"


# ---- nothing stale ----

async def test_preview_never_shows_an_old_line_after_an_invalid_edit(
        make_app: AppFactory, frozen_proposal: Proposal, monkeypatch: pytest.MonkeyPatch) -> None:
    """A proposal still computing for the last valid answers must not land in the preview once
    the text has turned invalid (ctrl+u then "-3", typed quickly)."""

    def slow(*args: Any, **kwargs: Any) -> Proposal:
        time.sleep(0.4)
        return frozen_proposal

    monkeypatch.setattr(Session, "propose", slow)
    app = make_app(device="nvme0n1", workload=Workload(largest_directory_entries=5),
                   start="workload")
    async with app.run_test(size=(100, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("end", "backspace")  # empty: valid, a new proposal starts
        await pilot.press("minus", "3")  # invalid while it runs
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.state.workload_problem is not None
        assert _text(app, "#preview") == "mkfs: none until the answers above are valid"
        assert app.state.proposal is None


async def test_device_list_catches_up_after_hotplug_on_another_step(
        make_app: AppFactory) -> None:
    """Devices attached and detached while the questions are shown are there (and gone) when
    the list comes back, in natural order."""
    app = make_app()
    base = build_inventory()
    loops = [base.devices[-1].model_copy(update={"name": n, "display_name": n})
             for n in ("loop10", "loop2", "loop1")]

    def reread() -> Inventory:
        return base.model_copy(update={"devices": [d for d in base.devices
                                                   if d.name != "loop0"] + loops})

    app._reload_inventory = reread
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("f3")
        await pilot.pause()
        app.reload_devices()  # what a hotplug event does
        await pilot.press("f2")
        await pilot.pause()
        table = app.screen.query_one("#device-table", DataTable)
        names = [str(table.get_row_at(i)[0]).split(" ")[-1] for i in range(4)]
    assert names == ["loop1", "loop2", "loop10", "nvme0n1"]  # loop0 detached: gone


# ---- words ----

async def test_form_errors_and_sizes_in_plain_words(make_app: AppFactory,
                                                    frozen_proposal: Proposal) -> None:
    app = make_app(device="nvme0n1", start="workload")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press(*"12x")
        await pilot.pause()
        error = _text(app, "#q-largest-directory-entries-error")
        assert error == "'12x' is not a whole number (try 5000000, 5,000,000, 5M or 1e6)"
        app.screen.query_one("#q-median-file-size", Input).value = "16KB"
        await pilot.pause()
        assert _text(app, "#q-median-file-size-error") == (
            "= 16,000 bytes (KB is decimal; KiB is binary)")
        app.screen.query_one("#q-largest-directory-entries", Input).value = ""
        app.screen.query_one("#q-eventual-size", Input).value = "40TiB"
        app.screen.query_one("#q-growth-factor", Input).value = "3"
        await pilot.pause()
        status = _text(app, "#form-status")
    assert "eventual size or growth factor" in status and "_" not in status


async def test_the_chosen_device_going_away_is_said_once(make_app: AppFactory,
                                                         frozen_proposal: Proposal) -> None:
    app = make_app(device="loop0", start="workload")
    base = build_inventory()
    app._reload_inventory = lambda: base.model_copy(
        update={"devices": [d for d in base.devices if d.name != "loop0"]})
    async with app.run_test(size=(100, 30)) as pilot:
        app.reload_devices()
        app.reload_devices()  # another event: nothing new to say
        await pilot.pause()
        gone = [n.message for n in app._notifications if "loop0 is gone" in n.message]
    assert len(gone) == 1


@pytest.mark.parametrize(("step", "quit_key"), [("devices", "q"), ("workload", "^q")])
async def test_ctrl_c_names_the_quit_key_in_plain_text(
        make_app: AppFactory, frozen_proposal: Proposal, step: str, quit_key: str) -> None:
    app = make_app(device="nvme0n1", start=step)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("ctrl+c")
        await pilot.pause()
        notices = [(n.title, n.message) for n in app._notifications]
        assert app.is_running  # ctrl+c only says how to quit
    assert notices == [("Do you want to quit?", f"Press {quit_key} to quit")]
