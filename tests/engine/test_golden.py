"""Golden files: for each fixture host and a few workloads, the JSON document, the mkfs line and
the fstab line are pinned in tests/golden/. A diff there is a contract change: regenerate with
XFS_ADVISOR_UPDATE_GOLDEN=1 and say so in the CHANGELOG."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from advisor.advice import propose
from advisor.answers import load_workload
from advisor.engine.rulebook import RuleBook
from advisor.models.device import Device
from advisor.models.proposal import ProposalDocument
from tests.engine.helpers import environment

DATA = Path(__file__).parent / "data"
GOLDEN = Path(__file__).parent.parent / "golden"
UPDATE = os.environ.get("XFS_ADVISOR_UPDATE_GOLDEN") == "1"

CASES = [
    ("nvme-100g", "empty.toml"),
    ("nvme-100g", "fileserver.toml"),
    ("sata-hdd-4t", "nfs-archive.json"),
    ("md-raid6-8t", "maildir.toml"),
    ("lvm-md-raid6-8t", "fileserver.toml"),
    ("hwraid-20t", "database.toml"),
    ("vm-misaligned-2g", "fileserver.toml"),
]


def host(name: str) -> Device:
    return Device.model_validate_json((DATA / "hosts" / f"{name}.json").read_text())


def document(host_name: str, workload_file: str, book: RuleBook) -> ProposalDocument:
    device = host(host_name)
    workload = load_workload(DATA / "workloads" / workload_file)
    env = environment()
    proposal = propose(device, workload, env=env, rulebook=book)
    return ProposalDocument(device=device, workload=workload, environment=env, proposal=proposal)


def _compare(path: Path, actual: str) -> None:
    if UPDATE:
        path.write_text(actual)
    assert path.exists(), f"{path} missing: run with XFS_ADVISOR_UPDATE_GOLDEN=1"
    assert actual == path.read_text(), f"{path.name} changed (a contract change?)"


@pytest.mark.parametrize(("host_name", "workload_file"), CASES)
def test_golden(book: RuleBook, host_name: str, workload_file: str) -> None:
    doc = document(host_name, workload_file, book)
    data = doc.model_dump(mode="json", exclude={"extra"})
    # The lts_*.conf paths are the host's; the goldens must not depend on them.
    data["environment"]["lts_configs"] = sorted(data["environment"]["lts_configs"])
    # How the stand-in was made depends on the temp directory's filesystem, not on the rules.
    del data["proposal"]["check"]["argv"], data["proposal"]["check"]["method"]
    # The rule book's folder is wherever the repository was cloned.
    repo = str(Path(__file__).resolve().parents[2])
    dirs = data["proposal"]["rules_dirs"]
    data["proposal"]["rules_dirs"] = [d.replace(repo, "<repo>") for d in dirs]
    stem = GOLDEN / f"{host_name}__{Path(workload_file).stem}"
    _compare(stem.with_suffix(".json"), json.dumps(data, indent=2, sort_keys=True) + "\n")
    _compare(stem.with_suffix(".mkfs"), doc.proposal.mkfs_command + "\n")
    _compare(stem.with_suffix(".fstab"), doc.proposal.fstab + "\n")


def test_every_fixture_host_has_a_golden() -> None:
    hosts = {p.stem for p in (DATA / "hosts").glob("*.json")}
    assert hosts == {h for h, _ in CASES}
