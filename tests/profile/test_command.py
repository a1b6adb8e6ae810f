"""`xfs-advisor profile`: the JSON contract, the workload file it writes, errors, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from advisor.answers import load_workload
from advisor.cli import main
from advisor.commands.schema import schema_text
from advisor.models.profile import MeasuredAnswers, Profile
from advisor.models.workload import Storage, Workload
from advisor.profile.workload_file import edit_toml, write_measured_answers
from tests.conftest import REPO

EXPECTED = MeasuredAnswers(largest_directory_entries=6, median_file_size=4096,
                           xattr_bytes_per_file=0, xattrs_per_file=0, largest_xattr_value=0)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """Known answers: 6 entries in the largest directory, a 4 KiB median, no xattrs."""
    top = tmp_path / "tree"
    (top / "docs").mkdir(parents=True)
    for i in range(5):
        (top / "docs" / f"page{i}").write_bytes(b"p" * 4096)
    (top / "big").write_bytes(b"b" * 100_000)
    os.link(top / "big", top / "docs" / "big-again")
    os.symlink("nowhere", top / "dangling")
    os.mkdir(os.fsencode(top) + b"/\xffodd")
    return top


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_validates_against_its_schema(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "profile", "--json", str(tree))
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    published = json.loads(schema_text("profile"))  # what `xfs-advisor schema profile` prints
    jsonschema.validate(doc, published)
    assert Profile.model_validate(doc).model_dump(mode="json") == doc
    assert doc["schema_version"] == 1
    assert MeasuredAnswers.model_validate(doc["answers"]) == EXPECTED
    assert doc["files"] == 6 and doc["hard_links"] == {"inodes": 1, "extra_names": 1}
    assert f"{tree}/\\xffodd" in [d["path"] for d in doc["largest_directories"]]
    # A broken document is caught: the schema is not vacuous.
    doc["files"] = -1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, published)


def test_global_json_flag_before_the_subcommand(tree: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "--json", "profile", str(tree))
    assert code == 0
    assert json.loads(out)["directories"] == 3


def test_text_report(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "profile", str(tree), "--top", "2")
    assert code == 0 and err == ""
    assert out.startswith(f"Profile of {tree}\n")
    assert "Largest directories (entries):" in out
    assert "File sizes:" in out and "median 4 KiB" in out
    assert "largest_directory_entries = 6" in out
    assert "1 files with several names (1 extra names" in out
    assert out.count(f"  {tree}") == 2  # --top 2


def test_write_workload_creates_a_file_that_loads_back(
        tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "answers.toml"
    code, _, err = run_cli(capsys, "profile", str(tree), "--write-workload", str(target))
    assert code == 0
    assert f"wrote the measured answers to {target}" in err
    text = target.read_text()
    assert text.startswith("# Workload answers for xfs-advisor")
    assert 'median_file_size = "4KiB"' in text
    loaded = load_workload(target)
    assert loaded == EXPECTED.merged_into(Workload())
    # Measuring the same tree again changes nothing.
    run_cli(capsys, "profile", str(tree), "--write-workload", str(target))
    assert target.read_text() == text


EXISTING = """\
# Our mail store. Keep this comment.
access = "write-heavy"   # lots of deliveries
fsyncs_per_second = 400
median_file_size = "1MiB"  # a guess, before we measured
concurrent_writers = 16

[storage]
# RAID6 of 10 disks
raid_stripe_unit = "256KiB"
raid_data_disks = 8
"""


def test_write_workload_keeps_comments_and_unmeasurable_answers(
        tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "mail.toml"
    target.write_text(EXISTING)
    before = load_workload(target)
    code, _, err = run_cli(capsys, "profile", str(tree), "--write-workload", str(target))
    assert code == 0 and "could not be kept" not in err
    loaded = load_workload(target)
    assert loaded == EXPECTED.merged_into(before)
    assert loaded.fsyncs_per_second == 400 and loaded.access == "write-heavy"
    assert loaded.storage == Storage(raid_stripe_unit=256 << 10, raid_data_disks=8)
    text = target.read_text()
    for kept in ("# Our mail store. Keep this comment.", "# lots of deliveries",
                 "# RAID6 of 10 disks", 'median_file_size = "4KiB"  # a guess, before we measured'):
        assert kept in text
    # The new answers go to the top-level table, before [storage].
    assert text.index("largest_directory_entries = 6") < text.index("[storage]")


def test_write_workload_to_json(tree: Path, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "answers.json"
    target.write_text(json.dumps({"fsyncs_per_second": 10, "largest_directory_entries": 1}))
    assert run_cli(capsys, "profile", str(tree), "--write-workload", str(target))[0] == 0
    assert load_workload(target) == EXPECTED.merged_into(Workload(fsyncs_per_second=10))
    assert json.loads(target.read_text())["largest_directory_entries"] == 6


def test_quoted_keys_and_inline_tables_keep_their_comments(tmp_path: Path) -> None:
    target = tmp_path / "quoted.toml"
    target.write_text('# a comment\n"median_file_size" = 5  # mine\nfsyncs_per_second = 3\n'
                      'storage = { kind = "ssd" }  # inline\n')
    loaded, kept = write_measured_answers(target, EXPECTED)
    assert kept
    assert loaded == EXPECTED.merged_into(
        Workload(fsyncs_per_second=3, storage=Storage(kind="ssd")))
    text = target.read_text()
    assert text.startswith("# a comment\n") and "# mine" in text and "# inline" in text


def test_edit_toml_keeps_values_with_hashes_in_strings() -> None:
    text = 'mount_point = "/srv/a#b"  # where\nlargest_directory_entries = 1 # old\n'
    edited = edit_toml(text, {"largest_directory_entries": 9})
    assert edited == 'mount_point = "/srv/a#b"  # where\nlargest_directory_entries = 9 # old\n'


def test_a_mount_point_beyond_the_basic_plane_loads_back(tmp_path: Path) -> None:
    target = tmp_path / "emoji.toml"
    target.write_text('mount_point = "/srv/\U0001F600data"  # ours\n')
    loaded, kept = write_measured_answers(target, EXPECTED)
    assert kept and loaded.mount_point == "/srv/\U0001F600data"
    assert "/srv/\U0001F600data" in target.read_text()


def test_answers_go_before_the_first_table(tmp_path: Path) -> None:
    target = tmp_path / "tables-only.toml"
    target.write_text("[storage]\nraid_stripe_unit = 65536\nraid_data_disks = 4\n")
    loaded, kept = write_measured_answers(target, EXPECTED)
    assert kept
    assert loaded == EXPECTED.merged_into(
        Workload(storage=Storage(raid_stripe_unit=65536, raid_data_disks=4)))
    assert target.read_text().startswith("largest_directory_entries = 6  # measured")


def test_a_malformed_workload_file_is_left_alone(tree: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "bad.toml"
    target.write_text("largest_directory_entries = \n")
    code, _, err = run_cli(capsys, "profile", str(tree), "--write-workload", str(target))
    assert code == 2
    assert err.startswith("xfs-advisor: ") and "malformed TOML" in err and err.count("\n") == 1
    assert target.read_text() == "largest_directory_entries = \n"


def test_bad_paths_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "profile", str(tmp_path / "missing"))
    assert (code, out) == (2, "")
    assert err == f"xfs-advisor: cannot profile {tmp_path / 'missing'}: No such file or directory\n"
    code, _, err = run_cli(capsys, "profile", "--json", str(tmp_path / "missing"))
    assert code == 2
    assert json.loads(err)["error"]["kind"] == "bad-input"


def test_progress_on_request(big_directory: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "advisor", "profile", "--progress", "--json",
                           str(big_directory)], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    # Under --json each report is a JSON document: stderr stays machine-readable.
    reports = [json.loads(line)["progress"] for line in proc.stderr.splitlines()]
    assert reports[0] == {"done": 0, "unit": "entries seen", "per_second": 0.0,
                          "finished": False}
    assert reports[-1]["done"] == 100_006 and reports[-1]["finished"] is True
    assert json.loads(proc.stdout)["files"] == 100_003
    text = subprocess.run([sys.executable, "-m", "advisor", "profile", "--progress",
                           str(big_directory)], capture_output=True, text=True, cwd=REPO)
    lines = text.stderr.splitlines()
    assert lines[0] == f"profiling {big_directory} ..."
    assert lines[-1].startswith("  100,006 entries, ") and lines[-1].endswith("/s (done)")
    assert all(" entries, " in line for line in lines[1:])


def test_ctrl_c_prints_what_was_seen_and_exits_130(big_directory: Path, tmp_path: Path) -> None:
    target = tmp_path / "never.toml"
    proc = subprocess.Popen([sys.executable, "-m", "advisor", "profile", "--progress", "--json",
                             "--write-workload", str(target), str(big_directory)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()  # printed once the walk has started
        assert json.loads(first)["progress"]["done"] == 0
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    doc = json.loads(out)
    assert doc["partial"] is True
    assert doc["entries"] < 100_000 + 6
    assert "interrupted: the report covers only what was seen, workload file not written" in err
    assert all(json.loads(line) for line in err.splitlines())
    assert not target.exists()  # partial numbers must not become answers


def test_text_report_escapes_names_that_could_drive_the_terminal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A directory named with a newline and an escape sequence cannot fake report lines or
    clear the screen: the text shows it escaped; the JSON keeps the real name."""
    top = tmp_path / "tree"
    odd = top / "fake\nLargest directories (entries):\x1b[2J"
    odd.mkdir(parents=True)
    for i in range(7):
        (odd / f"f{i}").write_bytes(b"x")
    code, out, _ = run_cli(capsys, "profile", str(top))
    assert code == 0
    lines = out.splitlines()
    assert "\x1b" not in out
    assert [x for x in lines if x.startswith("Largest directories")] == [
        "Largest directories (entries):"]
    assert "fake\\nLargest directories (entries):\\e[2J" in out
    code, out, _ = run_cli(capsys, "profile", "--json", str(top))
    assert json.loads(out)["largest_directories"][0]["path"].endswith(odd.name)


def test_a_small_tree_is_profiled_without_what_only_other_runs_need(tree: Path) -> None:
    """Start-up a run does not need is deferred: pickle serves only a walk shared with a forked
    process (not one of a tree this small), and the checks of a workload file's path only
    --write-workload."""
    code = ("import json, sys\n"
            f"sys.argv = ['xfs-advisor', 'profile', '--json', {str(tree)!r}]\n"
            "from advisor.__main__ import entry\n"
            "code = entry()\n"
            "sys.stderr.write(json.dumps({'code': code, 'modules': sorted(sys.modules)}))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stderr)
    assert result["code"] == 0 and json.loads(proc.stdout)["files"] > 0
    assert "advisor.profile.walker" in result["modules"]
    assert {"pickle", "advisor.system.files"} & set(result["modules"]) == set()
