"""The tuning loop on real loop devices: observe a workload, write the answers it measured, and
let them drive `validate`, whose report names them as measured by observe."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, require, require_root_tools
from tests.observe.test_observe import WRITER, finish, have_perf, observing


@pytest.mark.root
@pytest.mark.slow
def test_observed_answers_drive_validate(xfs: tuple[str, Path], tmp_path: Path) -> None:
    require_root_tools("fio", "xfs_info")
    require(have_perf(), "needs perf with xfs tracepoints")
    _, mnt = xfs
    until = time.time() + 30
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(mnt / f"w{i}"), "20",
                                 str(until)]) for i in range(2)]
    answers = tmp_path / "answers.toml"
    answers.write_text("# mine\nlargest_directory_entries = 5000\nmedian_file_size = \"4KiB\"\n")
    try:
        time.sleep(0.5)
        with observing("--for", "2s", "--write-workload", str(answers), str(mnt)) as proc:
            code, _, err = finish(proc)
    finally:
        for w in writers:
            w.send_signal(signal.SIGTERM)
            w.wait()
    assert code == 0, err
    text = answers.read_text()
    assert "concurrent_writers = 2  # measured by xfs-advisor observe" in text
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
