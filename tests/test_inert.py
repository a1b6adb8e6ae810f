"""Untrusted text made inert (advisor.render.inert): a captured host's mount point cannot put a
command into the TUI's saved script, a device model cannot drive the terminal that prints it, a
fleet host's error cannot either, and arbitrary text through every escaping function comes out
with nothing a terminal, a shell, fio or a Markdown renderer would act on (hypothesis)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from advisor.models.proposal import Proposal
from advisor.models.workload import Workload
from advisor.render import inert
from advisor.render.fstab import fstab_field
from advisor.session import Session
from advisor.tui.proposal import save_text
from tests.conftest import REPO
from tests.inspect.sysfs_builder import Dev, write_tree

GIB = 1 << 30
#: The mount point of the security review, as mountinfo writes it (octal escapes): a line break,
#: then a command, then a line break and a `#` so that the rest of the warning is a comment.
HOSTILE_MOUNTINFO = "1 0 8:0 / /srv/x\\012touch\\040PWNED\\012# rw - xfs /dev/sda rw"
EVIL_MODEL = "Evil\x1b]0;title\x07\x1b[2J"

#: Fragments attackers use, mixed into generated text: line breaks of every kind, terminal
#: sequences, C1 controls, bidi overrides, quotes, command substitution, NUL and a lone surrogate.
HOSTILE = st.sampled_from([
    "\n", "\r", "\r\n", "\x0b", "\x0c", "\x85", "\u2028", "\u2029", "\ntouch PWNED\n",
    "\x1b[2J", "\x1b]0;title\x07", "\x9b2J", "\x9d0;t\x9c", "\u202e", "\u2066", "\u200f",
    "\ufeff", "'", '"', "`touch PWNED`", "$(touch PWNED)", "\\", "\x00", "\ud800", "\udfff",
    ";", ":", "#", "$", "${HOME}", "|", "<script>", "&amp;", "[x](y)", "*", "_", " ",
])
TEXT = st.lists(st.one_of(st.text(max_size=12), HOSTILE), max_size=8).map("".join)


def _visible(text: str, allowed: str = "") -> bool:
    """No character a terminal acts on or a reader cannot see, except those in `allowed`."""
    return not any(inert.is_hidden(c) and c not in allowed for c in text)


# ---- every escaping function, on arbitrary text ----

@given(TEXT)
def test_terminal_text_is_one_visible_line(text: str) -> None:
    shown = inert.terminal(text)
    assert _visible(shown)
    shown.encode("utf-8")  # raises on a lone surrogate
    assert inert.shell_comment(text) == shown
    if _visible(text):
        assert shown == text  # printable text is shown as it is


@given(TEXT)
def test_terminal_page_keeps_only_line_feeds_and_tabs(text: str) -> None:
    shown = inert.terminal_lines(text)
    assert _visible(shown, "\n\t")
    assert shown.count("\n") == text.count("\n")


@given(TEXT)
def test_markdown_cell_is_one_line_without_markup(text: str) -> None:
    cell = inert.markdown_cell(text)
    assert _visible(cell)
    unescaped = cell.replace("\\\\", "")
    for char in "`*_[]<>|&":
        assert all(i > 0 and unescaped[i - 1] == "\\"
                   for i, c in enumerate(unescaped) if c == char)


@given(TEXT)
def test_json_text_is_the_same_document_made_visible(text: str) -> None:
    doc = json.dumps({"model": text, "n": [1, 2]}, ensure_ascii=False, indent=2)
    # Our JSON is UTF-8 (pydantic cannot write a lone surrogate): two lone ones side by side
    # would read back as the pair they spell.
    assume(not any(0xD800 <= ord(c) < 0xE000 for c in text))
    shown = inert.json_text(doc)
    assert _visible(shown, "\n")
    assert json.loads(shown) == json.loads(doc)


@given(TEXT)
def test_fstab_field_is_one_field(text: str) -> None:
    field = fstab_field(text)
    assert _visible(field) and not any(c.isspace() for c in field)


@given(TEXT)
def test_fio_names_are_taken_literally_or_refused(text: str) -> None:
    try:
        name = inert.fio_name(text)
    except ValueError:
        return
    assert name == text
    assert not set(name) & set(";:#$\n\r\t ,=\"'\\{}()")


@settings(max_examples=60, deadline=None)
@given(TEXT)
def test_shell_words_are_one_literal_word_or_refused(text: str) -> None:
    try:
        word = inert.shell_word(text)
    except ValueError:
        assert not _visible(text)
        return
    assert _visible(word)
    got = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, check=True)
    assert got.stdout.decode("utf-8", "surrogateescape") == text


# ---- the saved script ----

def _captured_host(tmp_path: Path, mountinfo: str = HOSTILE_MOUNTINFO,
                   model: str | None = EVIL_MODEL) -> Path:
    return write_tree(tmp_path / "host", [Dev("sda", 100 * GIB, "8:0", model=model)],
                      mountinfo=mountinfo)


def _run_script(script: str, sandbox: Path) -> tuple[list[str], list[str]]:
    """Run `script` with bash in `sandbox`, mkfs.xfs replaced by a stub that records its
    arguments: (what mkfs.xfs was called with, one line per call; what else is in the sandbox).
    """
    sandbox.mkdir()
    stubs = sandbox.parent / "stubs"
    stubs.mkdir(exist_ok=True)
    stub = stubs / "mkfs.xfs"
    stub.write_text('#!/bin/sh\necho "$*" >> "$MKFS_LOG"\n')
    stub.chmod(0o755)
    (sandbox / "proposal.sh").write_text(script, encoding="utf-8")
    log = sandbox.parent / "mkfs.log"
    env = {"PATH": f"{stubs}:/usr/bin:/bin", "MKFS_LOG": str(log), "HOME": str(sandbox)}
    subprocess.run(["bash", "-n", "proposal.sh"], cwd=sandbox, check=True, env=env)
    subprocess.run(["bash", "proposal.sh"], cwd=sandbox, env=env, capture_output=True,
                   check=False)
    calls = log.read_text().splitlines() if log.exists() else []
    return calls, sorted(os.listdir(sandbox))


def test_saved_script_of_a_captured_host_runs_only_mkfs(tmp_path: Path) -> None:
    session = Session(str(_captured_host(tmp_path)))
    proposal = session.propose(session.device("sda"), Workload())
    assert any("touch PWNED" in w.message for w in proposal.warnings)  # the bait is there
    script = save_text(proposal, "sda")
    calls, left = _run_script(script, tmp_path / "sandbox")
    assert left == ["proposal.sh"]  # no PWNED: the mount point stayed inside its comment
    assert calls == ["/dev/sda"]
    assert "/srv/x\\ntouch PWNED\\n#" in script  # shown, escaped, for the reader


@pytest.fixture(scope="module")
def plain_proposal(tmp_path_factory: pytest.TempPathFactory) -> Proposal:
    session = Session(str(_captured_host(tmp_path_factory.mktemp("plain"), mountinfo="",
                                         model=None)))
    return session.propose(session.device("sda"), Workload())


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TEXT, TEXT)
def test_fuzzed_script_parses_and_runs_only_mkfs(tmp_path_factory: pytest.TempPathFactory,
                                                 plain_proposal: Proposal, text: str,
                                                 device: str) -> None:
    """Any reason, warning, fstab line or device name: the script is valid shell whose every
    line but the mkfs line is a visible comment, and running it calls mkfs.xfs once, nothing
    else."""
    base = plain_proposal
    proposal = base.model_copy(update={
        "decisions": [d.model_copy(update={"reason": text, "changed": True})
                      for d in base.decisions],
        "warnings": [w.model_copy(update={"message": text}) for w in base.warnings],
        "fstab": text})
    script = save_text(proposal, device)
    lines = script.split("\n")
    command = proposal.mkfs_command
    assert all(line in ("#!/bin/sh", "", command) or line.startswith("# ") for line in lines)
    assert lines.count(command) == 1
    assert all(_visible(line) for line in lines)
    work = tmp_path_factory.mktemp("run")
    calls, left = _run_script(script, work / "sandbox")
    assert left == ["proposal.sh"]
    assert calls == [" ".join(proposal.mkfs_argv[1:])]


# ---- terminals ----

def _cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "XFS_ADVISOR_DEBUG"}
    return subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True,
                          cwd=cwd, env=env, timeout=120, check=False)


@pytest.mark.parametrize("args", [
    ("devices",), ("devices", "sda"), ("devices", "--json"), ("devices", "sda", "--json"),
    ("--device", "sda"), ("--device", "sda", "--json"), ("propose", "--device", "sda"),
])
def test_device_model_and_mount_point_never_reach_the_terminal_raw(
        tmp_path: Path, args: tuple[str, ...]) -> None:
    root = _captured_host(tmp_path)
    proc = _cli("--sysroot", str(root), *args)
    assert proc.returncode == 0, proc.stderr
    for stream in (proc.stdout, proc.stderr):
        text = stream.decode()
        assert _visible(text, "\n"), text
    shown = proc.stdout.decode()
    if "sda" in args and "--json" not in args and args[0] == "devices":
        assert "Evil\\e]0;title\\x07\\e[2J" in shown  # the model, escaped, still readable


@pytest.mark.parametrize("args", [("devices", "--json"), ("devices", "sda", "--json")])
def test_json_escapes_what_json_itself_leaves_raw(tmp_path: Path, args: tuple[str, ...]) -> None:
    """A C1 control, a bidi override and DEL in a device's model: JSON escapes only C0 controls,
    so the whole inventory (written one device at a time) and one device's both escape the rest
    and still read back as the model."""
    model = "Evil\x9b2J\u202eflipped\x7f"
    proc = _cli("--sysroot", str(_captured_host(tmp_path, model=model)), *args)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode()
    assert _visible(text, "\n"), text
    assert json.loads(text)["devices"][0]["model"]["value"] == model


def test_error_messages_are_escaped(tmp_path: Path) -> None:
    proc = _cli("--sysroot", str(_captured_host(tmp_path)), "devices", "sd\x1b[2Jz")
    assert proc.returncode == 3, proc.stderr
    assert b"\x1b" not in proc.stderr and b"sd\\e[2Jz" in proc.stderr


def test_fleet_host_error_with_escapes_is_shown_escaped(tmp_path: Path) -> None:
    results = tmp_path / "results"
    host = results / "web1"
    host.mkdir(parents=True)
    (host / "error.txt").write_text("unreachable\x1b]0;owned\x07\x1b[2J\x9b1;1H\u202eevil\n"
                                    "second line <script>alert(1)</script> | cell\n")
    for extra in ((), ("--markdown",), ("--json",)):
        proc = _cli("fleet", str(results), *extra)
        assert proc.returncode == 0, proc.stderr
        out = proc.stdout.decode()
        assert _visible(out, "\n"), out
        if extra == ("--json",):
            assert json.loads(out)["hosts"][0]["error"].startswith("unreachable\x1b]0;owned")
        elif extra == ("--markdown",):  # the escapes, themselves escaped for Markdown
            assert "unreachable\\\\e\\]0;owned\\\\x07\\\\e\\[2J" in out
        else:
            assert "unreachable\\e]0;owned\\x07\\e[2J\\x9b1;1H\\u202eevil" in out
            row = next(line for line in out.splitlines() if "web1" in line)
            assert "second line" in row  # the error's second line stayed in the host's row
    md = _cli("fleet", str(results), "--markdown").stdout.decode()
    assert "<script>" not in md and "\\<script\\>" in md
