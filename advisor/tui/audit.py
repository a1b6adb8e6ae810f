"""The audit of one device's XFS filesystem, from the device screen (`a`): what `xfs-advisor audit
DEV` prints, read-only (xfs_info, or `xfs_db -r` when it is not mounted), through the session.
The answers of the workload step shape what "the advisor today" proposes."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static
from textual.worker import Worker, WorkerState

from advisor.errors import AdvisorError
from advisor.models.audit import AuditDocument
from advisor.session import Session


class AuditScreen(ModalScreen[None]):
    """Findings for the filesystem on `device` (escape, q or a close it)."""

    # Its own CSS (loaded with the screen) rather than app.tcss: the box is the help's.
    DEFAULT_CSS = "AuditScreen { align: center middle; }"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,a", "dismiss", "Close"),
    ]

    def __init__(self, session: Session, device: str, workload: object) -> None:
        super().__init__()
        self.session, self.device, self.workload = session, device, workload
        self.document: AuditDocument | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Label(f"Audit of {self.device} (read-only; escape closes)", id="audit-title")
            yield Static(f"reading {self.device}...", id="audit-body")

    def on_mount(self) -> None:
        from advisor.models.workload import Workload

        workload = self.workload if isinstance(self.workload, Workload) else None

        def work() -> AuditDocument:
            # The host's fstab is compared as `xfs-advisor audit DEV` does (the default file).
            return self.session.audit([self.device], workload=workload)

        self.run_worker(work, name="audit", thread=True, exit_on_error=False)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        body = self.query_one("#audit-body", Static)
        if event.state == WorkerState.SUCCESS and isinstance(event.worker.result, AuditDocument):
            from advisor.render.audit import render

            self.document = event.worker.result
            body.update(Text(render(self.document)))
        elif event.state == WorkerState.ERROR:
            error = event.worker.error
            body.update(Text(error.message if isinstance(error, AdvisorError)
                             else f"internal error: {type(error).__name__}: {error}",
                             style="bold red"))

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(result)
