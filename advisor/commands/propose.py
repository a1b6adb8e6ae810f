"""`xfs-advisor propose` (also the default with --json/--device/--workload): being built."""

from __future__ import annotations

import argparse
from typing import Any

from advisor.errors import AdvisorError


def add_options(p: argparse.ArgumentParser) -> None:
    """Options of the proposal, valid with and without the `propose` subcommand."""
    p.add_argument("--device", metavar="DEV", help="the device to format (name or /dev path)")
    p.add_argument("--workload", metavar="FILE", help="workload answers (TOML or JSON)")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("propose", parents=[common], help="(being built)")
    add_options(p)


def run(args: argparse.Namespace) -> int:
    raise AdvisorError("'propose' is not built yet")
