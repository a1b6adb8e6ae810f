"""`xfs-advisor capture` (being built)."""

from __future__ import annotations

import argparse
from typing import Any

from advisor.errors import AdvisorError


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    sub.add_parser("capture", parents=[common], help="(being built)")


def run(args: argparse.Namespace) -> int:
    raise AdvisorError("'capture' is not built yet")
