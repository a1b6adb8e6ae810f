"""The rule book itself: every file valid, every function used, site rules, conflicts, and the
guarantee that a proposal mkfs.xfs rejects is reported as a bug."""

from __future__ import annotations

import hashlib
import json
import shutil
import tomllib
from pathlib import Path

import pytest

from advisor.advice import propose
from advisor.engine import rulebook
from advisor.engine.registry import DECIDERS
from advisor.engine.rulebook import BUILTIN_RULES, RuleBook, load_rulebook
from advisor.engine.settings import SETTINGS
from advisor.errors import BadInput, ProposalBug
from advisor.models.workload import Workload
from tests.engine.helpers import GiB, TiB, device, environment

REQUIRED_TOPICS = {"keep-defaults", "dir-block-size", "ag-concurrency", "ag-growth", "inode-size",
                   "stripe-geometry", "log-size", "log-stripe-unit", "inode32", "logbsize",
                   "logbufs", "atime", "discard", "kernel-compat", "nobarrier",
                   "barrier", "unwritten-0", "lazy-count", "attr2", "ikeep", "crc-0",
                   "nodiratime", "logbufs-8", "inode64", "flush-cost", "nonvolatile-cache",
                   *(f"device-{k}" for k in ("mounted", "swap", "held", "partitions",
                                              "holds-data", "read-only", "zoned", "misaligned"))}


def test_builtin_rules_cover_the_issue(book: RuleBook) -> None:
    assert set(book.rules) >= REQUIRED_TOPICS
    used = {r.rule.decide for r in book.rules.values() if r.rule.decide}
    site_only = {"keep_default"}  # advisor/engine/site.py: for sites' own rule files
    assert used == set(DECIDERS) - site_only, "every named function is used by a rule file"
    for setting in SETTINGS:
        if setting.name != "-b size":
            assert book.for_setting(setting.name), f"no rule decides {setting.name}"


def test_every_rule_is_explained(book: RuleBook) -> None:
    for rule in book.all():
        assert rule.why and rule.when_not and rule.changes, rule.id
        if rule.kind in ("mkfs", "mount"):
            assert rule.references, rule.id
        if rule.kind == "obsolete":
            assert rule.obsolete and rule.obsolete.matches


def test_rule_files_are_one_per_rule() -> None:
    files = list(BUILTIN_RULES.rglob("*.toml"))
    assert {f.stem for f in files} == set(load_rulebook().rules)


def _site(tmp_path: Path, name: str, text: str) -> Path:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / name).write_text(text)
    return site


@pytest.mark.parametrize(("text", "needle"), [
    ("id = \"x\"\ntitle = ", "malformed TOML"),
    ("id = \"x\"\ntitle = \"A rule\"\nkind = \"mount\"\nsource = \"site\"\nchanges = \"c\"\n"
     "why = \"w\"\nwhen_not = \"n\"\ncolour = \"red\"\n", "colour: unknown key"),
    ("id = \"x\"\ntitle = \"A rule\"\nkind = \"mount\"\nsource = \"site\"\nchanges = \"c\"\n"
     "why = \"w\"\nwhen_not = \"n\"\nsetting = \"-q size\"\ndecide = \"atime\"\n",
     "unknown setting"),
    ("id = \"x\"\ntitle = \"A rule\"\nkind = \"mount\"\nsource = \"site\"\nchanges = \"c\"\n"
     "why = \"w\"\nwhen_not = \"n\"\nsetting = \"mount atime\"\ndecide = \"magic\"\n",
     "unknown function"),
    ("id = \"x\"\ntitle = \"A rule\"\nkind = \"mount\"\nsource = \"site\"\nchanges = \"c\"\n"
     "why = \"w\"\nwhen_not = \"n\"\nsetting = \"mount inode32/inode64\"\ndecide = \"inode32\"\n"
     "[params]\nthreshold_bytes = \"lots\"\n", "params.threshold_bytes"),
    ("id = \"Bad Id\"\ntitle = \"A rule\"\nkind = \"policy\"\nsource = \"site\"\nchanges = \"c\"\n"
     "why = \"w\"\nwhen_not = \"n\"\n", "id:"),
])
def test_bad_rule_files(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(BadInput, match=r"bad\.toml") as err:
        load_rulebook(_site(tmp_path, "bad.toml", text))
    assert needle in err.value.message
    assert "\n" not in err.value.message


def test_missing_rules_dir(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="does not exist"):
        load_rulebook(tmp_path / "nope")


def test_site_rule_overrides_thresholds(tmp_path: Path) -> None:
    text = (BUILTIN_RULES / "mkfs" / "dir-block-size.toml").read_text()
    text = text.replace("max_entries_4k = 200000", "max_entries_4k = 1000")
    book = load_rulebook(_site(tmp_path, "dir-block-size.toml", text))
    assert len(book.dirs) == 2
    p = propose(device(), Workload(largest_directory_entries=50_000, access="read-heavy"),
                env=environment(), rulebook=book)
    assert [d.value for d in p.decisions if d.setting == "-n size"] == ["16k"]


def test_conflicting_rules_resolved_by_priority(tmp_path: Path) -> None:
    # With the growth limit lifted, ag-concurrency wants 32 AGs while ag-growth wants big AGs.
    text = (BUILTIN_RULES / "mkfs" / "ag-concurrency.toml").read_text()
    text = text.replace("max_agcount_when_grown = 256", "max_agcount_when_grown = 100000")
    book = load_rulebook(_site(tmp_path, "ag-concurrency.toml", text))
    p = propose(device(1 * TiB, rotational=False),
                Workload(concurrent_writers=16, eventual_size=200 * TiB),
                env=environment(), rulebook=book)
    ag = [d for d in p.decisions if d.setting == "-d agcount/agsize"]
    assert len(ag) == 1
    assert ag[0].rule == "ag-growth" and ag[0].value.startswith("agsize=")
    assert ag[0].resolution and "ag-concurrency" in ag[0].resolution
    assert [a.value for a in ag[0].alternatives] == ["agcount=32"]
    assert sum(1 for o in p.mkfs_options if "agcount" in o or "agsize" in o) == 1


def test_a_proposal_mkfs_rejects_is_a_bug(tmp_path: Path) -> None:
    text = (BUILTIN_RULES / "mkfs" / "log-size.toml").read_text()
    text = (text.replace("reservation_bytes_per_writer = 645456",
                         "reservation_bytes_per_writer = 10737418240")
            .replace("max_log_bytes = 2136997888", "max_log_bytes = 107374182400"))
    book = load_rulebook(_site(tmp_path, "log-size.toml", text))
    with pytest.raises(ProposalBug, match=r"fails `mkfs\.xfs -N`") as err:
        propose(device(4 * TiB), Workload(concurrent_writers=16), rulebook=book,
                env=environment(memory=4 * TiB))
    assert err.value.exit_code == 1


def test_obsolete_option_in_a_proposal_is_a_bug(tmp_path: Path) -> None:
    shutil.copytree(BUILTIN_RULES / "obsolete", tmp_path / "site")
    (tmp_path / "site" / "noatime-is-old.toml").write_text(
        "id = \"noatime-is-old\"\ntitle = \"pretend\"\nkind = \"obsolete\"\nsource = \"site\"\n"
        "changes = \"c\"\nwhy = \"w\"\nwhen_not = \"n\"\n"
        "[obsolete]\nmatches = [\"noatime\"]\nsince = \"now\"\ntoday = \"t\"\n")
    book = load_rulebook(tmp_path / "site")
    with pytest.raises(ProposalBug, match="obsolete"):
        propose(device(), Workload(atime_needed=False), env=environment(), rulebook=book)


# ---- what a site can say: switch a rule off, or keep a default whatever lower rules want ----

def _site_dir(tmp_path: Path, files: dict[str, str]) -> Path:
    site = tmp_path / "site"
    site.mkdir(parents=True)
    for name, text in files.items():
        (site / name).write_text(text)
    return site


def test_a_site_switches_a_rule_off(tmp_path: Path) -> None:
    site = _site_dir(tmp_path, {"off.toml": 'id = "ag-concurrency"\nenabled = false\n'
                            'why = "our arrays are sized by the storage team"\n'})
    book = load_rulebook(site)
    assert "ag-concurrency" not in book.rules
    p = propose(device(100 * GiB, rotational=False), Workload(concurrent_writers=16),
                env=environment(), rulebook=book)
    ag = next(d for d in p.decisions if d.setting == "-d agcount/agsize")
    assert not ag.changed
    assert p.disabled_rules["ag-concurrency"].startswith("our arrays are sized by the storage")
    with pytest.raises(BadInput, match="no rule 'no-such-rule' to switch off"):
        load_rulebook(_site_dir(tmp_path / "x", {
            "off.toml": 'id = "no-such-rule"\nenabled = false\nwhy = "typo"\n'}))


def test_a_site_keep_wins_over_lower_priority_changes(tmp_path: Path) -> None:
    keep = ('id = "site-fixed-logs"\ntitle = "Log size is fixed centrally"\nkind = "mkfs"\n'
            'source = "site policy"\nsetting = "-l size"\ndecide = "keep_default"\n'
            'priority = 95\nkeep_wins = true\nchanges = "nothing"\nwhy = "central sizing"\n'
            'when_not = "never"\n[params]\nreason = "log sizes are set by the storage team"\n')
    book = load_rulebook(_site_dir(tmp_path, {"keep.toml": keep}))
    p = propose(device(100 * GiB, rotational=False), Workload(concurrent_writers=200),
                env=environment(), rulebook=book)
    log = next(d for d in p.decisions if d.setting == "-l size")
    assert not log.changed and log.rule == "site-fixed-logs"
    assert log.reason == "log sizes are set by the storage team"
    assert log.resolution == ("site-fixed-logs (priority 95) keeps the default over log-size "
                              "(wanted 169m)")
    assert "-l" not in p.mkfs_options
    # Without keep_wins the same rule only adds its reason to the pile: the change stands.
    book = load_rulebook(_site_dir(tmp_path / "y", {"keep.toml": keep.replace(
        "keep_wins = true\n", "")}))
    p = propose(device(100 * GiB, rotational=False), Workload(concurrent_writers=200),
                env=environment(), rulebook=book)
    assert next(d for d in p.decisions if d.setting == "-l size").changed


def test_a_site_copy_with_other_params_says_its_own_numbers(tmp_path: Path) -> None:
    """The numbers in a rule's prose come from its params: `explain` of a site's logbsize with
    128 KiB buffers says 128 KiB, not the built-in 256 KiB. (Its examples, copied with their
    expected options, still say what they check: 256k.)"""
    from tests.engine.test_cli import cli

    text = (BUILTIN_RULES / "mount" / "logbsize.toml").read_text()
    assert "\nvalue_bytes = 262144\n" in text
    site = _site(tmp_path, "logbsize.toml",
                 text.replace("\nvalue_bytes = 262144\n", "\nvalue_bytes = 131072\n"))
    said = cli("explain", "logbsize", "--rules", str(site))
    assert said.returncode == 0, said.stderr
    assert "logbsize: 128 KiB log buffers" in said.stdout
    assert "Mount option `logbsize=128k` instead of 32 KiB." in said.stdout
    prose = said.stdout.split("  examples")[0]
    assert "256 KiB" not in prose and "`logbsize=256k`" not in prose
    builtin = cli("explain", "logbsize")
    assert "logbsize: 256 KiB log buffers" in builtin.stdout
    assert "Mount option `logbsize=256k` instead of 32 KiB." in builtin.stdout
    rule = load_rulebook(site).rules["logbsize"].rule
    assert "{params." not in rule.title + rule.changes


def test_a_placeholder_naming_no_parameter_is_refused(tmp_path: Path) -> None:
    text = (BUILTIN_RULES / "mount" / "logbsize.toml").read_text()
    site = _site(tmp_path, "logbsize.toml",
                 text.replace("{params.value_bytes:k}", "{params.value:k}"))
    with pytest.raises(BadInput, match=r"\{params\.value:k\} in the text names no whole-number"):
        load_rulebook(site)


def test_the_readme_lists_the_settings_in_the_order_they_are_decided() -> None:
    """rules/README.md's "decided in this order" is engine/settings.py's SETTINGS, each once."""
    import re

    readme = (Path(__file__).resolve().parents[2] / "rules" / "README.md").read_text()
    start = readme.index("Settings, decided in this order")
    paragraph = " ".join(readme[start:readme.index("Every setting gets", start)].split())
    listed = re.findall(r"`([^`]+)`", paragraph.split("ones):", 1)[1])
    assert listed == [s.name for s in SETTINGS]


def _typed(value: object) -> object:
    """`value` with the type of every leaf and the order of every table kept, so that 1 and 1.0,
    True and 1, or two orders of the same keys differ."""
    if isinstance(value, dict):
        return [(k, _typed(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


def test_the_parsed_rule_book_is_current_and_what_tomllib_parses() -> None:
    """advisor/data/parsed-rules.json holds every built-in rule file, as tomllib parses it, with
    the hash of its current text."""
    assert rulebook.PARSED_RULES.read_text() == rulebook.parsed_rules_text(), (
        "advisor/data/parsed-rules.json is stale: .venv/bin/python scripts/write_parsed_rules.py")
    stored = json.loads(rulebook.PARSED_RULES.read_text())
    files = sorted(BUILTIN_RULES.rglob("*.toml"))
    assert sorted(stored) == [p.relative_to(BUILTIN_RULES).as_posix() for p in files]
    for path in files:
        text = path.read_text()
        entry = stored[path.relative_to(BUILTIN_RULES).as_posix()]
        assert entry["sha256"] == hashlib.sha256(text.encode()).hexdigest()
        assert _typed(entry["data"]) == _typed(tomllib.loads(text)), path


def _one_rule(folder: Path) -> Path:
    folder.mkdir()
    rule = folder / "atime.toml"
    shutil.copy(BUILTIN_RULES / "mount" / "atime.toml", rule)
    return rule


def test_a_rule_file_whose_text_has_a_stored_hash_is_not_parsed_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rule = _one_rule(tmp_path / "rules")
    data = tomllib.loads(rule.read_text())
    stored = tmp_path / "parsed.json"
    digest = hashlib.sha256(rule.read_bytes()).hexdigest()
    stored.write_text(json.dumps({"atime.toml": {"sha256": digest,
                                                 "data": {**data, "title": "as stored"}}}))
    monkeypatch.setattr(rulebook, "PARSED_RULES", stored)
    assert load_rulebook(builtin=tmp_path / "rules").rules["atime"].rule.title == "as stored"
    # Any change to the text is parsed from the file.
    rule.write_text(rule.read_text() + "\n")
    assert load_rulebook(builtin=tmp_path / "rules").rules["atime"].rule.title == data["title"]


@pytest.mark.parametrize("content", [b"", b"{not json", b"[1, 2]", b'{"a": {"sha256": 1}}',
                                     b"[" * 100_000])
def test_a_damaged_parsed_rule_book_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               content: bytes) -> None:
    rule = _one_rule(tmp_path / "rules")
    stored = tmp_path / "parsed.json"
    stored.write_bytes(content)
    monkeypatch.setattr(rulebook, "PARSED_RULES", stored)
    loaded = load_rulebook(builtin=tmp_path / "rules").rules["atime"].rule
    assert loaded.title == tomllib.loads(rule.read_text())["title"]
