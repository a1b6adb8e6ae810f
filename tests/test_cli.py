"""The entry point: subcommand routing, and errors as one line with the documented exit code."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from advisor.commands.parser import requested_command
from tests.conftest import REPO


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["devices", "--json"], "devices"),
        (["--json", "--sysroot", "devices", "devices"], "devices"),  # a sysroot named "devices"
        (["--sysroot", "/x", "capture", "d"], "capture"),
        (["--json", "--device", "sda"], None),
        ([], None),
        (["--help"], None),
    ],
)
def test_requested_command(argv: list[str], expected: str | None) -> None:
    assert requested_command(argv) == expected


@pytest.mark.parametrize(
    ("argv", "answers"),
    [
        ([], {}),
        (["--sysroot", "/x"], {}),
        (["--sysroot=/x", "--json"], {}),
        (["--json", "--device", "sda", "--workload", "w.toml", "--brief"], {}),
        (["--sys", "/x"], {}),  # an abbreviation: only the whole parser takes one
        (["--device", "sda", "--fsyncs-per-second", "200"],
         {"answer:fsyncs_per_second": "200"}),
        (["--device", "sda", "--storage-kind", "ssd", "--rules", "r"],
         {"answer:storage.kind": "ssd"}),
    ],
)
def test_a_run_without_subcommand_parses_as_the_whole_parser_has_it(
        argv: list[str], answers: dict[str, str]) -> None:
    """parse() tries a parser without the answer flags first (they are made from the workload
    model, so pydantic): whichever parser takes the command line, the arguments are the whole
    parser's, less the answer flags not given."""
    from advisor.commands.parser import build_parser, parse

    def given(namespace: object) -> dict[str, object]:
        return {k: v for k, v in vars(namespace).items()
                if not (k.startswith("answer:") and v is None)}

    parser, args = parse(argv)
    assert given(args) == given(build_parser().parse_args(argv))
    assert {k: v for k, v in given(args).items() if k.startswith("answer:")} == answers
    # The whole parser only when the smaller one cannot take the command line.
    whole = any(a.dest.startswith("answer:") for a in parser._actions)
    assert whole == (bool(answers) or "--sys" in argv)


def advisor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True,
                          text=True, stdin=subprocess.DEVNULL)


def test_no_terminal_and_no_command_is_bad_input() -> None:
    proc = advisor()
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "no terminal" in proc.stderr


def test_errors_are_json_under_json(tmp_path: object) -> None:
    proc = advisor("--json", "--sysroot", "/nonexistent-root", "devices")
    assert proc.returncode == 2, proc.stderr
    doc = json.loads(proc.stderr)
    assert doc["error"]["kind"] == "bad-input" and doc["error"]["exit_code"] == 2
    assert proc.stdout == ""


def test_every_command_has_help() -> None:
    from advisor.commands.parser import COMMANDS

    for name in COMMANDS:
        proc = advisor(name, "--help")
        assert proc.returncode == 0, (name, proc.stderr)
        assert f"xfs-advisor {name}" in proc.stdout
        assert "exit codes:\n  0    ok\n" in proc.stdout, name


def test_help_lists_the_exit_codes() -> None:
    from advisor.errors import HELP_EXIT_CODES

    proc = advisor("--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().endswith(HELP_EXIT_CODES.rstrip())
    codes = [line.split()[0] for line in HELP_EXIT_CODES.splitlines()[1:9]]
    assert codes == ["0", "1", "2", "3", "4", "5", "6", "130"]
    # The documentation's table has the same codes.
    page = (REPO / "docs" / "exit-codes.md").read_text()
    assert re.findall(r"^\| (\d+) \|", page, re.M) == codes


def test_help_says_what_a_size_unit_means() -> None:
    """16KB is accepted: the help says it is 16,000 bytes, and 16KiB 16,384 (the TUI form shows
    the bytes beside the field)."""
    proc = advisor("--help")
    text = " ".join(proc.stdout.split())
    assert "16KiB or 16k = 16,384 bytes" in text and "16KB = 16,000 bytes" in text


def test_validate_help_gives_the_bounds_and_defaults_a_run_keeps_to() -> None:
    """The numbers validate's help gives (--rounds, --max-rounds, --budget, --loop-size) are the
    ones a plan made without those flags has, not copies of them."""
    from advisor.bench.plan import Plan
    from advisor.models.bench import SideConfig
    from advisor.models.limits import (
        DEFAULT_BUDGET,
        DEFAULT_LOOP_SIZE,
        DEFAULT_PAIRS,
        MAX_PAIRS,
        MIN_PAIRS,
    )
    from advisor.models.workload import Workload

    proc = advisor("validate", "--help")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    for said in (f"most pairs the run may have (default {MAX_PAIRS}: the budget decides)",
                 f"(at least {MIN_PAIRS}; default {DEFAULT_PAIRS})",
                 f"set-up and clean-up included (default {DEFAULT_BUDGET:.0f})",
                 f"backing file (default {DEFAULT_LOOP_SIZE >> 30}GiB)"):
        assert said in text, said
    plan = Plan(a=SideConfig(label="A"), b=SideConfig(label="B"), workload=Workload())
    assert (plan.most_pairs, plan.pairs, plan.budget_seconds, plan.device_bytes) == (
        MAX_PAIRS, DEFAULT_PAIRS, DEFAULT_BUDGET, DEFAULT_LOOP_SIZE)
    with pytest.raises(ValueError, match=f"{MIN_PAIRS} to {MAX_PAIRS} pairs"):
        Plan(a=SideConfig(label="A"), b=SideConfig(label="B"), workload=Workload(),
             pairs=MIN_PAIRS - 1)


@pytest.mark.parametrize(("argv", "collecting"), [
    (["devices", "--json"], False),
    (["--json", "--device", "vda"], False),
    (["validate", "--device", "vda"], True),
    (["observe"], True),
])
def test_the_collector_is_off_while_a_command_starts_and_on_for_a_long_run(
        monkeypatch: pytest.MonkeyPatch, argv: list[str], collecting: bool) -> None:
    """The process's own run (main() without argv) starts with the cyclic garbage collector off,
    freezes what the start built, and turns it back on only for a command that may run long;
    at the end everything is frozen. A caller passing argv keeps the collector as it was."""
    import gc
    import types

    from advisor import cli

    seen: list[tuple[bool, int]] = []

    def run(args: object) -> int:
        seen.append((gc.isenabled(), gc.get_freeze_count()))
        return 0

    monkeypatch.setattr(cli, "load", lambda name: types.SimpleNamespace(run=run))
    monkeypatch.setattr(cli, "_ending_signals_interrupt", lambda: None)
    monkeypatch.setattr(sys, "argv", ["xfs-advisor", *argv])
    assert gc.isenabled() and gc.get_freeze_count() == 0
    try:
        assert cli.main() == 0
        assert not gc.isenabled() or collecting
        ended_frozen = gc.get_freeze_count()
    finally:
        gc.unfreeze()
        gc.enable()
    assert seen[0][0] is collecting and seen[0][1] > 0 and ended_frozen > 0
    seen.clear()
    assert cli.main(argv) == 0
    assert seen == [(True, 0)] and gc.isenabled() and gc.get_freeze_count() == 0
