"""The commands as users run them: exit codes, one-line errors, JSON on stdout, and the generated
files (rule reference, JSON Schemas) kept current."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from advisor.cli import main
from advisor.commands.schema import SCHEMAS, schema_text
from advisor.engine.docs import rules_markdown
from advisor.engine.rulebook import BUILTIN_RULES, RuleBook

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
HOST = str(DATA / "hosts" / "nvme-100g.json")
FILESERVER = str(DATA / "workloads" / "fileserver.toml")


def cold_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter: what a script sees (exit status, streams, no traceback)."""
    return subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=60)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The same entry point in this process (fast): main()'s return value and its streams."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse
            code = exc.code if isinstance(exc.code, int) else 2
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def test_json_proposal_matches_its_schema_and_golden_mkfs_line() -> None:
    proc = cold_cli("--json", "--device-file", HOST, "--workload", FILESERVER)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    jsonschema.validate(doc, json.loads(schema_text("output")))
    assert doc["schema_version"] == 1
    assert set(doc) >= {"device", "workload", "proposal", "environment"}
    proposal = doc["proposal"]
    golden = (REPO / "tests" / "golden" / "nvme-100g__fileserver.mkfs").read_text().strip()
    assert proposal["mkfs_argv"] == golden.split()
    assert proposal["mkfs_argv"][0] == "mkfs.xfs" and proposal["mkfs_argv"][-1] == "/dev/nvme0n1"
    assert proposal["mkfs_options"] == proposal["mkfs_argv"][1:-1]
    assert proposal["fstab"].startswith("UUID=<uuid-after-mkfs> /srv/data xfs ")
    settings = [d["setting"] for d in proposal["decisions"]]
    assert len(settings) == len(set(settings))
    assert doc["workload"]["concurrent_writers"] == 8
    assert doc["extra"] == {}


def test_two_runs_print_the_same_document_and_timings_only_when_asked() -> None:
    first = cli("--json", "--device-file", HOST, "--workload", FILESERVER)
    second = cli("--json", "--device-file", HOST, "--workload", FILESERVER)
    assert first.returncode == second.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    timed = cli("--json", "--timings", "--device-file", HOST, "--workload", FILESERVER)
    doc = json.loads(timed.stdout)
    assert set(doc["extra"]["timings_ms"]) >= {"imports", "engine", "proposal_check"}
    doc["extra"] = {}
    assert doc == json.loads(first.stdout)


def test_propose_subcommand_and_flags_win_over_the_file() -> None:
    proc = cli("propose", "--json", "--device-file", HOST, "--workload", FILESERVER,
               "--largest-directory-entries", "20000000", "--atime-needed", "yes")
    assert proc.returncode == 0, proc.stderr
    proposal = json.loads(proc.stdout)["proposal"]
    assert "size=64k" in proposal["mkfs_options"]
    assert "noatime" not in proposal["mount_options"]


def test_human_output() -> None:
    proc = cli("--device-file", HOST, "--workload", FILESERVER)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("Proposal for /dev/nvme0n1 (100 GiB): 3 changes, 0 warnings\n")
    assert "mkfs.xfs -d agcount=16 /dev/nvme0n1" in out
    assert "fstab: UUID=<uuid-after-mkfs> /srv/data xfs logbsize=256k,noatime 0 0" in out
    assert "-n size: keep the default (4k)" in out
    assert out.index("mkfs.xfs") < out.index("fstab:") < out.index("Changes from") \
        < out.index("-d agcount/agsize: agcount=16") < out.index("Kept at the default") \
        < out.index("-n size: keep the default")


VM = str(DATA / "hosts" / "vm-misaligned-2g.json")


def test_warnings_and_changes_come_before_the_defaults_kept() -> None:
    out = cli("--device-file", VM, "--workload", FILESERVER).stdout
    assert out.index("fstab:") < out.index("Warnings:") < out.index("! vdb1 is mounted on") \
        < out.index("Changes from") < out.index("Kept at the default")
    assert out.index("mount atime: noatime") < out.index("-n size: keep the default")


def test_brief_names_the_defaults_kept_without_their_reasons() -> None:
    full = cli("--device-file", VM, "--workload", FILESERVER).stdout
    brief = cli("--device-file", VM, "--workload", FILESERVER, "--brief").stdout
    assert "! vdb1 is mounted on /mnt/old" in brief and "agcount=8 (default" in brief
    assert "-n size: keep the default" in full and "-n size: keep the default" not in brief
    kept = brief[brief.index("Kept at the default"):brief.index("(without --brief")]
    assert "-n size," in kept and "mount inode32/inode64," in kept
    assert len(brief.splitlines()) < len(full.splitlines()) / 2


@pytest.mark.parametrize(("workload", "needle"), [
    ("largest_directory_entries = [1,", "malformed TOML"),
    ('{"access": "mixed",', "malformed JSON"),
    ("colour = 3\n", "colour: unknown key"),
    ("concurrent_writers = -4\n", "concurrent_writers"),
    ('eventual_size = "4TiB"\ngrowth_factor = 3\n', "not both"),
    ('median_file_size = "12 parsecs"\n', "median_file_size"),
    ("[storage]\nraid_data_disks = 0\n", "storage.raid_data_disks"),
])
def test_bad_workload_is_one_line_exit_2(tmp_path: Path, workload: str, needle: str) -> None:
    suffix = ".json" if workload.startswith("{") else ".toml"
    path = tmp_path / f"answers{suffix}"
    path.write_text(workload)
    proc = cli("--device-file", HOST, "--workload", str(path))
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_flag_value_is_exit_2_as_json() -> None:
    proc = cold_cli("--json", "--device-file", HOST, "--concurrent-writers", "-3")
    assert proc.returncode == 2, proc.stderr
    err = json.loads(proc.stderr)["error"]
    assert err["kind"] == "bad-input" and "concurrent_writers" in err["message"]


def test_bad_device_file_and_missing_device(tmp_path: Path) -> None:
    bad = tmp_path / "dev.json"
    bad.write_text('{"name": "x"}')
    proc = cli("--device-file", str(bad))
    assert proc.returncode == 2 and "display_name" in proc.stderr, proc.stderr
    proc = cli("propose", "--json")
    assert proc.returncode == 2, proc.stderr
    assert "--device" in json.loads(proc.stderr)["error"]["message"], proc.stderr


def test_too_small_device_is_exit_3(tmp_path: Path) -> None:
    small = json.loads(Path(HOST).read_text())
    small["size_bytes"]["value"] = 32 << 20
    path = tmp_path / "small.json"
    path.write_text(json.dumps(small))
    proc = cli("--device-file", str(path))
    assert proc.returncode == 3 and "mkfs.xfs rejects" in proc.stderr, proc.stderr


def test_unknown_live_device_is_exit_3() -> None:
    proc = cli("--json", "--device", "no-such-disk-xyz")
    assert proc.returncode == 3, proc.stderr
    assert "unknown device" in json.loads(proc.stderr)["error"]["message"]


@pytest.mark.parametrize("name", ["nobarrier", "barrier", "unwritten-0", "lazy-count", "attr2",
                                  "ikeep", "crc=0", "nodiratime", "logbufs=8", "inode64"])
def test_explain_obsolete_advice(name: str) -> None:
    proc = cli("explain", name)
    assert proc.returncode == 0, proc.stderr
    assert "OBSOLETE" in proc.stdout and "today:" in proc.stdout


def test_explain_rule_and_unknown() -> None:
    proc = cli("explain", "dir-block-size")
    assert proc.returncode == 0, proc.stderr
    assert "table 2.5" in proc.stdout and "when not" in proc.stdout, proc.stdout
    proc = cli("explain", "warp-drive")
    assert proc.returncode == 2, proc.stderr
    assert "unknown rule 'warp-drive'" in proc.stderr and "dir-block-size" in proc.stderr


def test_rules_listing(book: RuleBook) -> None:
    proc = cli("rules", "--json")
    assert proc.returncode == 0, proc.stderr
    assert {r["id"] for r in json.loads(proc.stdout)} == set(book.rules)


def test_rules_markdown_is_current(book: RuleBook) -> None:
    assert (BUILTIN_RULES / "RULES.md").read_text() == rules_markdown(book), (
        "rules/RULES.md is stale: xfs-advisor rules --markdown > rules/RULES.md")


@pytest.mark.parametrize("name", SCHEMAS)
def test_committed_schemas_are_current(name: str) -> None:
    committed = REPO / "advisor" / "data" / "schemas" / f"{name}.json"
    assert committed.read_text() == schema_text(name), (
        f"{committed} is stale: xfs-advisor schema {name} > {committed}")


def test_schema_command() -> None:
    proc = cli("schema", "workload")
    assert proc.returncode == 0, proc.stderr
    assert "largest_directory_entries" in json.loads(proc.stdout)["properties"]
    assert set(json.loads(cli("schema").stdout)) == set(SCHEMAS)


def test_example_rule_files_validate_against_the_rule_schema() -> None:
    import tomllib

    schema = json.loads(schema_text("rule"))
    files = sorted(BUILTIN_RULES.rglob("*.toml"))
    assert len(files) >= 20, "the rule book is not where the tests look"
    for path in files:
        jsonschema.validate(tomllib.loads(path.read_text()), schema)


def test_host_managed_zoned_device_is_refused_with_exit_3(tmp_path: Path) -> None:
    """No proposal for a host-managed zoned device (conventional XFS cannot live on it): exit 3,
    one line naming what can format it."""
    host = json.loads(Path(HOST).read_text())
    host["zoned"] = {"value": "host-managed", "source": "sysfs"}
    zoned = tmp_path / "zoned.json"
    zoned.write_text(json.dumps(host))
    proc = cold_cli("--json", "--device-file", str(zoned))
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "host-managed zoned device" in lines[0]
    assert "Linux 6.15" in lines[0] and "xfsprogs 6.15" in lines[0] and "dm-zoned" in lines[0]


@pytest.mark.parametrize(("text", "rules", "words"), [
    ("-l size=128m", ["log-size"], "fixed log"),
    ("logbsize=256k", ["logbsize"], "log buffers"),
    ("agcount", ["ag-growth", "ag-concurrency"], "16, 45 or 90 AGs"),
    ("-d agcount=16", ["ag-growth", "ag-concurrency"], "one disk"),
    ("noatime", ["atime"], "relatime"),
    ("-l version=2", ["log-version-2"], "OBSOLETE"),
])
def test_explain_resolves_option_text(text: str, rules: list[str], words: str) -> None:
    proc = cli("explain", text)
    assert proc.returncode == 0, proc.stderr
    shown = [line.split(":")[0] for line in proc.stdout.splitlines()
             if line and not line.startswith(" ") and ": " in line and " " not in
             line.split(":")[0]]
    assert shown[:len(rules)] == rules and words in proc.stdout, proc.stdout[:300]


def test_an_answer_that_decides_a_setting_is_asked() -> None:
    """5M entries, access not answered: every access gives 16k or more, so the default kept is
    the answer's to decide. The summary, --brief and the JSON ask for it; answered, nothing is
    asked and the setting changes."""
    asked = "1 answer would change this: access"
    brief = cli("--device-file", HOST, "--largest-directory-entries", "5M", "--brief").stdout
    first = brief.splitlines()[0]
    assert first.endswith(f"0 changes, 0 warnings; {asked}"), first
    assert "? access (--access): 5,000,000 entries" in brief
    assert "read-heavy 64k, write-heavy 16k, mixed 16k (default 4k)" in " ".join(brief.split())
    assert brief.index("Questions") < brief.index("Changes from")
    doc = json.loads(cli("--json", "--device-file", HOST, "--largest-directory-entries",
                         "5M").stdout)
    assert [(q["answer"], q["setting"], q["rule"]) for q in doc["proposal"]["questions"]] == [
        ("access", "-n size", "dir-block-size")]
    answered = cli("--device-file", HOST, "--largest-directory-entries", "5M", "--access",
                   "write-heavy", "--brief").stdout
    assert "would change this" not in answered and "-n size: 16k" in answered
    small = cli("--device-file", HOST, "--largest-directory-entries", "50000", "--brief").stdout
    assert "would change this" not in small and "Questions" not in small
