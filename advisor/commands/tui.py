"""`xfs-advisor tui [--device DEV] [--workload FILE] [answers...]`: the interactive advisor, with
the device and answers preselected (plain `xfs-advisor` in a terminal starts it with nothing
chosen). Textual is imported only in `run`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from advisor.errors import BadInput


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    from advisor.commands import propose

    p = sub.add_parser("tui", parents=[common],
                       help="the interactive advisor, with a device and answers preselected")
    propose.add_options(p, suppress=True)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "json", False):
        raise BadInput("the interactive advisor has no --json: use `xfs-advisor --json --device "
                       "DEV` for the proposal as JSON")
    if getattr(args, "device_file", None):
        raise BadInput("--device-file is not supported by the interactive advisor: use "
                       "`xfs-advisor --device-file FILE`, or --sysroot with a capture")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise BadInput("no terminal for the interactive advisor: use `xfs-advisor --device DEV` "
                       "or --json instead")
    from advisor.tui.app import run_tui

    return run_tui(args)
