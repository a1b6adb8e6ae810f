from __future__ import annotations

import pytest

from advisor.engine.rulebook import RuleBook, load_rulebook
from advisor.system.runner import which
from tests.conftest import require


@pytest.fixture(scope="session")
def book() -> RuleBook:
    return load_rulebook()


@pytest.fixture(autouse=True)
def _needs_mkfs() -> None:
    require(which("mkfs.xfs") is not None, "needs mkfs.xfs (xfsprogs)")
