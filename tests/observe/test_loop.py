"""The tuning loop on real loop devices: observe a workload, write the answers it measured, and
let them drive `validate`, whose report names them as measured by observe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, require, require_root_tools
from tests.observe.test_observe import fsync_writers, have_perf, observing


@pytest.mark.root
@pytest.mark.slow
def test_observed_answers_drive_validate(xfs: tuple[str, Path], tmp_path: Path) -> None:
    require_root_tools("fio", "xfs_info")
    require(have_perf(), "needs perf with xfs tracepoints")
    _, mnt = xfs
    answers = tmp_path / "answers.toml"
    answers.write_text("# mine\nlargest_directory_entries = 5000\nmedian_file_size = \"4KiB\"\n")
    with fsync_writers(mnt, 2, 20), \
            observing("--for", "2s", "--write-workload", str(answers), str(mnt)) as proc:
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    text = answers.read_text()
    # The report lists the writers: a failure names any other process that changed the
    # filesystem in the window.
    assert "concurrent_writers = 2  # measured by xfs-advisor observe" in text, out
    assert "largest_directory_entries = 5000" in text and "# mine" in text

    env = {**os.environ, "XFS_ADVISOR_STATE_DIR": str(tmp_path / "state"),
           "XFS_ADVISOR_CALIBRATION": str(tmp_path / "calibration.json")}
    proc2 = subprocess.run([sys.executable, "-m", "advisor", "validate", "--json",
                            "--workload", str(answers), "--loop-dir", str(tmp_path / "work"),
                            "--loop-size", "1GiB", "--budget", "20"],
                           capture_output=True, text=True, cwd=REPO, env=env, timeout=400)
    assert proc2.returncode in (0, 5), proc2.stderr
    report = json.loads(proc2.stdout)
    assert report["measured_answers"] == {"concurrent_writers": "observe",
                                          "fsyncs_per_second": "observe",
                                          "writer_activity": "observe"}
    assert report["workload"]["writers"] == 2
    assert report["workload"]["fsync_phase"] is True
