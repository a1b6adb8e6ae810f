"""Fixtures the inspect tests share."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from advisor.inspect import parallel


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The pids of the children the scan (advisor.inspect.parallel) forks during the test."""
    pids: list[int] = []
    real = os.fork

    def fork() -> int:
        pid = real()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(parallel.os, "fork", fork)
    yield pids
