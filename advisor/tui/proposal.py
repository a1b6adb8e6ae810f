"""Step 3: the proposal: the mkfs command and fstab line first, then every decision, warnings, what
differs from mkfs.xfs's own choices, and why old advice is not followed. Copy and save."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Footer, Header, Static

from advisor.errors import AdvisorError, BadInput
from advisor.models.units import human_size
from advisor.render.inert import is_hidden, shell_comment, terminal
from advisor.tui.messages import ProposalChanged
from advisor.tui.step import StepScreen

if TYPE_CHECKING:
    from advisor.models.proposal import MkfsGeometry, Proposal


def geometry_rows(geometry: MkfsGeometry) -> dict[str, str]:
    """What mkfs.xfs builds, by the names a person reads."""
    block = geometry.block_size
    rows = {
        "block size": f"{block} B",
        "inode size": f"{geometry.inode_size} B",
        "sector size": f"{geometry.sector_size} B",
        "allocation groups": f"{geometry.agcount} x {human_size(geometry.agsize_bytes)}",
        "directory block": f"{geometry.naming_block_size} B",
        "log": human_size(geometry.log_bytes),
        "log stripe unit": human_size(geometry.log_sunit_blocks * block)
        if geometry.log_sunit_blocks else "none",
        "stripe": (f"su={human_size(geometry.sunit_blocks * block)} "
                   f"sw={geometry.swidth_blocks // geometry.sunit_blocks}")
        if geometry.sunit_blocks else "none",
    }
    rows |= {f"feature {k}": str(v) for k, v in sorted(geometry.features.items())}
    return rows


def geometry_diff(proposal: Proposal) -> list[tuple[str, str, str]]:
    """(what, mkfs.xfs alone, with the proposal) for everything the proposal changes."""
    if proposal.mkfs_defaults is None or proposal.check is None:
        return []
    alone = geometry_rows(proposal.mkfs_defaults)
    proposed = geometry_rows(proposal.check.geometry)
    return [(k, alone.get(k, "-"), v) for k, v in proposed.items() if alone.get(k) != v]


def save_text(proposal: Proposal, device: str) -> str:
    """What `s` writes: a shell script a person can read, then run. Its one command is the mkfs
    line; everything else is comments, each one line whatever a device, a captured host or a
    workload file put in the text (advisor.render.inert). BadInput when the mkfs line itself
    holds characters a script cannot show (a device name with control characters)."""
    command = proposal.mkfs_command
    if any(is_hidden(c) for c in command):
        raise BadInput(f"the mkfs command holds control characters ({terminal(command)}): "
                       "no script saved")
    lines = ["#!/bin/sh", shell_comment_line(f"xfs-advisor proposal for {device}"), ""]
    for d in proposal.decisions:
        if d.changed:
            lines.append(shell_comment_line(
                f"{d.setting} = {d.value} (default {d.default}): {d.reason}"))
    for w in proposal.warnings:
        lines.append(shell_comment_line(f"WARNING: {w.message}"))
    lines += ["", command, "", "# /etc/fstab:", shell_comment_line(proposal.fstab), ""]
    return "\n".join(lines)


def shell_comment_line(text: str) -> str:
    """`# text`, on one line."""
    return f"# {shell_comment(text)}"


def decisions_table(proposal: Proposal) -> Table:
    table = Table(expand=True, show_edge=False, pad_edge=False, box=None)
    table.add_column("setting", no_wrap=True, style="bold")
    table.add_column("decision", ratio=1)
    # What the proposal changes first; then the defaults it keeps, each still with its reason.
    for d in sorted(proposal.decisions, key=lambda d: not d.changed):
        head = Text.assemble(
            (d.value, "bold" if d.changed else "dim"), (f"  default {d.default}", "dim"),
            (f"  later: {d.changeable_later}", "dim"))
        body = Text(f"{terminal(d.reason)} [{d.source}; {d.rule}]")
        if d.resolution:
            body.append(f"\n{terminal(d.resolution)}", style="italic")
        table.add_row(Text(d.setting, style="" if d.changed else "dim"), head + "\n" + body)
    return table


class ProposalScreen(StepScreen):
    """The proposal for the chosen device and the current answers, recomputed when they change."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # c and f are named on the boxes they copy ("mkfs (c copies)"): in the footer too, the
        # three keys would cut it at 80 columns behind the step keys.
        Binding("c", "copy_mkfs", "Copy mkfs", show=False),
        Binding("f", "copy_fstab", "Copy fstab", show=False),
        Binding("s", "save", "Save script"),
        Binding("j", "scroll_body(1)", "Down", show=False),
        Binding("k", "scroll_body(-1)", "Up", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="proposal-body"):
            yield Static(id="problem", classes="note")
            yield Static(id="mkfs", classes="command")
            yield Static(id="fstab", classes="command")
            yield Static("Warnings", classes="section-title", id="warnings-title")
            yield Static(id="warnings", classes="warning")
            yield Static("Decisions", classes="section-title")
            yield Static(id="decisions", classes="note")
            yield Static("Changed from what mkfs.xfs builds on its own", classes="section-title")
            yield Static(id="diff", classes="note")
            yield Static("Why not the old advice", classes="section-title")
            yield Static(id="why-not", classes="why-not")
        yield Footer(compact=True, show_command_palette=False)

    _shown: Proposal | None = None

    def on_mount(self) -> None:
        self.title = "xfs-advisor: proposal"
        self.query_one("#mkfs", Static).border_title = "mkfs (c copies)"
        self.query_one("#fstab", Static).border_title = "/etc/fstab (f copies)"
        self._show_why_not()

    def on_screen_resume(self) -> None:
        device = self.advisor.state.device
        self.sub_title = device.display_name if device else ""
        self.show_proposal()
        self.advisor.request_proposal()

    def on_proposal_changed(self, _message: ProposalChanged) -> None:
        self.show_proposal()

    def show_proposal(self) -> None:
        state = self.advisor.state
        proposal = state.proposal
        if proposal is not None and proposal is not self._shown:
            # A new proposal (new answers, another device) is read from its top: the command
            # and the warnings, not wherever the previous one was scrolled to.
            self._shown = proposal
            self.query_one("#proposal-body", VerticalScroll).scroll_home(animate=False)
        problem = state.proposal_problem
        if state.proposing:
            problem = "computing the proposal (mkfs.xfs dry runs)..."
        elif state.workload_problem:
            problem = f"{problem} F3 to fix them."
        self.query_one("#problem", Static).update(problem or "")
        self.query_one("#problem", Static).display = problem is not None
        self.query_one("#mkfs", Static).update(
            Text(terminal(proposal.mkfs_command) if proposal else ""))
        self.query_one("#fstab", Static).update(Text(terminal(proposal.fstab) if proposal else ""))
        warnings = proposal.warnings if proposal else []
        self.query_one("#warnings-title").display = bool(warnings)
        self.query_one("#warnings").display = bool(warnings)
        self.query_one("#warnings", Static).update(Text("\n".join(
            f"! {terminal(w.message)} [{w.rule}]" for w in warnings)))
        self.query_one("#decisions", Static).update(
            decisions_table(proposal) if proposal else "")
        diff = geometry_diff(proposal) if proposal else []
        if proposal is None:
            self.query_one("#diff", Static).update("")
        elif not diff:
            self.query_one("#diff", Static).update("nothing: the proposal is mkfs.xfs's defaults")
        else:
            table = Table(expand=True, show_edge=False, pad_edge=False, box=None)
            for title in ("", "mkfs.xfs alone", "with the proposal"):
                table.add_column(title)
            for row in diff:
                table.add_row(*row)
            self.query_one("#diff", Static).update(table)

    def _show_why_not(self) -> None:
        try:
            advice = self.advisor.state.session.obsolete_advice()
        except AdvisorError as err:
            self.query_one("#why-not", Static).update(err.message)
            return
        table = Table(expand=True, show_edge=False, pad_edge=False, box=None)
        table.add_column("advice", style="bold", ratio=1)
        table.add_column("today", ratio=3)
        for item in advice:
            table.add_row(item.advice, f"{item.today} (since {item.since}; {item.rule})")
        self.query_one("#why-not", Static).update(table if advice else "no obsolete advice known")

    def action_scroll_body(self, lines: int) -> None:
        body = self.query_one("#proposal-body", VerticalScroll)
        body.scroll_relative(y=lines, animate=False)

    def _need_proposal(self) -> Proposal | None:
        proposal = self.advisor.state.proposal
        if proposal is None or self.advisor.state.proposing:
            self.notify("no proposal to use yet", severity="warning")
            return None
        return proposal

    def action_copy_mkfs(self) -> None:
        if (proposal := self._need_proposal()) is not None:
            self.app.copy_to_clipboard(proposal.mkfs_command)
            self.notify("mkfs command sent to the terminal's clipboard")

    def action_copy_fstab(self) -> None:
        if (proposal := self._need_proposal()) is not None:
            self.app.copy_to_clipboard(proposal.fstab)
            self.notify("fstab line sent to the terminal's clipboard")

    def action_save(self) -> None:
        if self._need_proposal() is None:
            return
        from advisor.tui.dialogs import save_file

        device = self.advisor.state.device_name or "device"
        save_file(self.app, f"Save the proposal to (relative to {Path.cwd()}):",
                  f"mkfs-{terminal(device)}.sh", "proposal script", self._script_text)

    def _script_text(self) -> str | None:
        proposal = self.advisor.state.proposal
        if proposal is None:
            return None
        try:
            return save_text(proposal, self.advisor.state.device_name or "")
        except BadInput as err:
            self.notify(err.message, severity="error")
            return None
