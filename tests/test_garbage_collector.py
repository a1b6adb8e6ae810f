"""The cyclic garbage collector over a command: off for `devices` and a proposal (start-up
included), on for the others, and as it was once main() returns (tests call it in-process)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.cli import main
from tests.inspect.sysfs_builder import Dev, write_tree

REPO = Path(__file__).resolve().parent.parent
HOST = str(REPO / "tests" / "engine" / "data" / "hosts" / "nvme-100g.json")
WORKLOAD = str(REPO / "advisor" / "data" / "example-workload.toml")


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of every collection that starts, automatic or asked for."""
    seen: list[int] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(note)
    try:
        yield seen
    finally:
        gc.callbacks.remove(note)


def _run(argv: list[str], collections: list[int]) -> int:
    assert gc.isenabled()
    del collections[:]
    assert main(argv) == 0
    assert gc.isenabled(), "main() left the collector off"
    return len(collections)


def test_devices_and_a_proposal_run_without_the_collector(
        tmp_path: Path, collections: list[int], capsys: pytest.CaptureFixture[str]) -> None:
    host = write_tree(tmp_path / "host", [Dev(f"sd{c}", 1 << 40, f"8:{16 * i}")
                                          for i, c in enumerate("abcdefgh")])
    assert _run(["--sysroot", str(host), "devices", "--json"], collections) == 0
    assert _run(["--sysroot", str(host), "devices"], collections) == 0
    assert _run(["--json", "--device-file", HOST, "--workload", WORKLOAD], collections) == 0
    # The same amount of work with the collector on is seen collecting.
    assert _run(["rules", "--json"], collections) > 0
