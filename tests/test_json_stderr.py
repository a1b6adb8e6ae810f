"""Under --json, stderr carries JSON documents only, one a line: errors, notices (the plan a
device run shows, what a run left), progress. A script reads stdout as the answer and each stderr
line as an event, without parsing text meant for people."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, loop_device, require_root_tools


def _json_lines(stderr: str) -> list[dict[str, Any]]:
    docs = []
    for line in stderr.splitlines():
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            pytest.fail(f"a line of stderr is not JSON: {line!r}\n{stderr}")
        assert doc["schema_version"] == 1 and len(doc) == 2, line
        docs.append(doc)
    return docs


def test_profile_progress_under_json_is_json(tmp_path: Path) -> None:
    (tmp_path / "tree" / "a").mkdir(parents=True)
    for i in range(3):
        (tmp_path / "tree" / "a" / str(i)).write_text("x")
    proc = subprocess.run([sys.executable, "-m", "advisor", "profile", "--json", "--progress",
                           str(tmp_path / "tree")], capture_output=True, text=True, cwd=REPO,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    docs = _json_lines(proc.stderr)
    assert docs and docs[-1]["progress"]["unit"] == "entries seen"
    assert docs[-1]["progress"]["done"] == 5 and docs[-1]["progress"]["finished"] is True
    assert json.loads(proc.stdout)["files"] == 3


@pytest.mark.root
@pytest.mark.slow
def test_validate_on_a_device_under_json_writes_only_json_to_stderr(tmp_path: Path) -> None:
    require_root_tools("losetup", "mkfs.xfs", "fio", "xfs_info", "mount")
    env = {**os.environ, "XFS_ADVISOR_STATE_DIR": str(tmp_path / "state"),
           "XFS_ADVISOR_CALIBRATION": str(tmp_path / "calibration.json")}
    env.pop("XFS_ADVISOR_DEBUG", None)
    with loop_device(tmp_path / "scratch.img", 1 << 30) as dev:
        proc = subprocess.run(
            [sys.executable, "-m", "advisor", "validate", "--json", "--device", dev, "--yes",
             "--loop-dir", str(tmp_path / "work"), "--mkfs-options", "-i size=1024",
             "--budget", "10", "--largest-directory-entries", "5000", "--concurrent-writers",
             "1", "--fsyncs-per-second", "0", "--median-file-size", "4KiB"],
            capture_output=True, text=True, cwd=REPO, env=env, timeout=300, check=False)
    assert proc.returncode in (0, 5), proc.stderr
    json.loads(proc.stdout)
    docs = _json_lines(proc.stderr)
    plan = [d["notice"] for d in docs if "commands" in d.get("notice", {})]
    assert plan and any("mkfs.xfs" in c and "-i size=1024" in c for c in plan[0]["commands"])
    progress = [d["progress"] for d in docs if "progress" in d]
    assert progress and {p["unit"] for p in progress} == {"benchmark runs"}
    assert progress[0]["done"] == 0 and progress[0]["total"] >= 12
    # The most runs the plan may have, said from the first document to the last ("judging").
    assert {p["total"] for p in progress} == {progress[0]["total"]}, progress
    assert progress[-1]["step"] == "judging" and progress[-1]["done"] <= progress[-1]["total"]
    # The untimed pilot first, then each side of each pair counted towards the same total.
    assert progress[0]["step"].startswith("pilot"), progress
    assert all(" of at most " in p["step"] for p in progress[1:-1]), progress
    assert any(f"wipefs -a {dev}" in d.get("notice", {}).get("message", "") for d in docs)
