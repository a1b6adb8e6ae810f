"""`xfs-advisor profile` (being built)."""

from __future__ import annotations

import argparse
from typing import Any

from advisor.errors import AdvisorError


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    sub.add_parser("profile", parents=[common], help="(being built)")


def run(args: argparse.Namespace) -> int:
    raise AdvisorError("'profile' is not built yet")
