"""Step 3: the proposal: the mkfs command and fstab line first, then every decision, warnings, why
old advice is not followed, and what differs from mkfs.xfs's own choices. Copy and save."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from advisor.errors import AdvisorError

if TYPE_CHECKING:
    from advisor.tui.app import AdvisorApp


def mkfs_line(proposal: dict[str, Any]) -> str:
    """The mkfs command as a person would type it (and as `--json`'s mkfs_argv joins)."""
    return shlex.join(str(a) for a in proposal.get("mkfs_argv", []))


def default_changes(proposal: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(setting, mkfs.xfs's own choice, proposed) for each decision that changes a default."""
    changes = []
    for d in proposal.get("decisions", []):
        value, default = str(d.get("value", "")), str(d.get("default", ""))
        if value != default:
            changes.append((str(d.get("setting", "")), default, value))
    return changes


def save_text(proposal: dict[str, Any], device: str) -> str:
    """What `s` writes: a shell script a person can read, then run."""
    lines = ["#!/bin/sh", f"# xfs-advisor proposal for {device}", ""]
    for d in proposal.get("decisions", []):
        lines.append(f"# {d.get('setting')}: {d.get('value')} ({d.get('reason', '')})")
    for w in proposal.get("warnings", []):
        lines.append(f"# WARNING: {w.get('message')}")
    lines += ["", mkfs_line(proposal), "", "# /etc/fstab:", f"# {proposal.get('fstab', '')}", ""]
    return "\n".join(lines)


class ProposalScreen(Screen[None]):
    """The proposal for the chosen device and the current answers, recomputed when shown."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "copy_mkfs", "Copy mkfs"),
        Binding("f", "copy_fstab", "Copy fstab"),
        Binding("s", "save", "Save"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.proposal: dict[str, Any] | None = None
        self._shown_for: tuple[str, str] | None = None

    @property
    def advisor(self) -> AdvisorApp:
        from advisor.tui.app import AdvisorApp

        assert isinstance(self.app, AdvisorApp)
        return self.app

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="proposal-body"):
            yield Static(id="problem", classes="note")
            yield Static(id="mkfs", classes="command")
            yield Static(id="fstab", classes="command")
            yield Static("Decisions", classes="section-title")
            yield DataTable(id="decisions", classes="proposal-table", cursor_type="row")
            yield Static("Warnings", classes="section-title", id="warnings-title")
            yield Static(id="warnings", classes="warning")
            yield Static("Why not the old advice", classes="section-title", id="why-not-title")
            yield Static(id="why-not", classes="why-not")
            yield Static("Changed from mkfs.xfs's own choices", classes="section-title")
            yield DataTable(id="diff", classes="proposal-table", cursor_type="row")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        self.title = "xfs-advisor: proposal"
        self.query_one("#mkfs", Static).border_title = "mkfs"
        self.query_one("#fstab", Static).border_title = "fstab"
        self.query_one("#decisions", DataTable).add_columns(
            "setting", "value", "default", "reason", "source", "later")
        self.query_one("#diff", DataTable).add_columns("setting", "mkfs.xfs alone", "proposed")

    def on_screen_resume(self) -> None:
        self.refresh_proposal()

    def refresh_proposal(self) -> None:
        """Ask the core again if the device or the answers changed since the last time."""
        state = self.advisor.state
        device = state.device
        self.sub_title = device.name if device else ""
        key = (device.name if device else "", state.workload.model_dump_json())
        if key == self._shown_for and self.proposal is not None:
            return
        problem = None
        if device is None:
            problem = "No device chosen yet: F2 shows the devices."
        elif state.workload_problem:
            problem = f"The answers are not valid ({state.workload_problem}): F3 to fix them."
        if problem is None and device is not None:
            from advisor.tui.core import propose

            try:
                self.proposal = propose(device, state.workload)
                self._shown_for = key
            except AdvisorError as err:
                problem = err.message
        if problem is not None:
            self.proposal = None
            self._shown_for = None
        self._show(problem)

    def _show(self, problem: str | None) -> None:
        self.query_one("#problem", Static).update(problem or "")
        self.query_one("#problem", Static).display = problem is not None
        proposal = self.proposal or {}
        self.query_one("#mkfs", Static).update(Text(mkfs_line(proposal)))
        self.query_one("#fstab", Static).update(Text(str(proposal.get("fstab", ""))))
        decisions = self.query_one("#decisions", DataTable)
        decisions.clear()
        for d in proposal.get("decisions", []):
            decisions.add_row(*(Text(str(d.get(k) if d.get(k) is not None else "")) for k in (
                "setting", "value", "default", "reason", "source", "changeable_later")))
        warnings = proposal.get("warnings", [])
        self.query_one("#warnings-title").display = bool(warnings)
        self.query_one("#warnings", Static).update(Text("\n".join(
            f"! {w.get('message', '')}" + (f" [{w['rule']}]" if w.get("rule") else "")
            for w in warnings)))
        why_not = proposal.get("why_not") or proposal.get("obsolete") or []
        self.query_one("#why-not-title").display = bool(why_not)
        self.query_one("#why-not", Static).update(Text("\n".join(
            f"{w.get('advice', w.get('id', ''))}: {w.get('reason', w.get('message', ''))}"
            for w in why_not if isinstance(w, dict))))
        diff = self.query_one("#diff", DataTable)
        diff.clear()
        for change in default_changes(proposal):
            diff.add_row(*(Text(c) for c in change))

    def _need_proposal(self) -> dict[str, Any] | None:
        if self.proposal is None:
            self.notify("no proposal to use yet", severity="warning")
        return self.proposal

    def action_copy_mkfs(self) -> None:
        if (proposal := self._need_proposal()) is not None:
            self.app.copy_to_clipboard(mkfs_line(proposal))
            self.notify("mkfs command copied (OSC 52)")

    def action_copy_fstab(self) -> None:
        if (proposal := self._need_proposal()) is not None:
            self.app.copy_to_clipboard(str(proposal.get("fstab", "")))
            self.notify("fstab line copied (OSC 52)")

    def action_save(self) -> None:
        if self._need_proposal() is None:
            return
        from advisor.tui.workload import PathPrompt

        device = self.advisor.state.device_name or "device"
        prompt = PathPrompt("Save the proposal to:", f"mkfs-{device}.sh")
        self.app.push_screen(prompt, self._save_to)

    def _save_to(self, path: str | None) -> None:
        if not path or self.proposal is None:
            return
        try:
            Path(path).write_text(save_text(self.proposal, self.advisor.state.device_name or ""),
                                  encoding="utf-8")
        except OSError as err:
            self.notify(f"cannot write {path}: {err.strerror}", severity="error")
            return
        self.notify(f"proposal saved to {path}")
