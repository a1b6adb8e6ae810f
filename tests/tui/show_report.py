"""A terminal launcher for tests: the TUI over a capture, opened on the validation step with a
saved report shown (no benchmark needed). Run as
`python -m tests.tui.show_report SYSROOT REPORT.json` from the repository."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from advisor.models.bench import ValidationReport
from advisor.session import Session
from advisor.tui.app import build_app


def main(sysroot: str, report_file: str) -> int:
    report = ValidationReport.model_validate_json(Path(report_file).read_text())
    app = build_app(Session(sysroot=sysroot), start="validate")

    async def show(pilot: Pilot[Any]) -> None:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        screen: Any = pilot.app.screen
        screen.show_report(report)
        await pilot.pause()

    return int(app.run(auto_pilot=show) or 0)


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
