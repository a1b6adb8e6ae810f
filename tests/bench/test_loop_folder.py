"""The loop folder and the state folder, whatever they are called or however full: fio stays
inside the test filesystem when the folder's name holds `;` and `:` (fio cuts `directory=` at `;`
and splits it at `:`), folders the run had to make are gone afterwards, and a full state folder
is a one-line error that leaves no temporary file.

Each run stops on purpose after side A's first round (side B's mount option is refused by the
kernel), so that a real fio round runs in seconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.bench import jobs
from advisor.models.workload import Workload
from tests.conftest import REPO, leftovers, require_root_tools, sh

pytestmark = pytest.mark.root

TOOLS = ("losetup", "mkfs.xfs", "fio", "xfs_info", "mount")
SMALL = ("--largest-directory-entries", "2000", "--concurrent-writers", "1",
         "--fsyncs-per-second", "0", "--median-file-size", "4KiB")
#: Side B's mount fails (the log buffer size is not a power of two): the run stops right after
#: side A's first round, which ran mkfs, mount and the whole fio job file.
STOP_AFTER_A = ("--mount-options", "logbsize=3k")


def _validate(tmp_path: Path, loop_dir: str, *args: str, cwd: Path = REPO,
              state: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XFS_ADVISOR_STATE_DIR": str(state or tmp_path / "state"),
           "XFS_ADVISOR_CALIBRATION": str(tmp_path / "calibration.json"),
           "PYTHONPATH": str(REPO)}
    env.pop("XFS_ADVISOR_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "advisor", "validate", "--json", "--loop-dir",
                           loop_dir, "--loop-size", "1GiB", "--budget", "10", *SMALL, *args],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def _error(proc: subprocess.CompletedProcess[str]) -> str:
    return str(json.loads(proc.stderr.strip().splitlines()[-1])["error"]["message"])


def test_fio_stays_in_the_test_filesystem_whatever_the_folder_is_called(tmp_path: Path) -> None:
    require_root_tools(*TOOLS)
    # fio cut the old job file's `directory=.../d;x:y/xfs-advisor-.../mnt/big` at `;`: the
    # creates went to .../d, outside the test filesystem (2,199 files there in one round).
    (tmp_path / "d").mkdir()
    proc = _validate(tmp_path, str(tmp_path / "d;x:y"), *STOP_AFTER_A)
    assert proc.returncode == 4, proc.stderr
    assert "mount -o logbsize=3k failed" in _error(proc)  # side A's fio round had run
    assert list((tmp_path / "d").iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "state"]
    assert leftovers(tmp_path) == []


def test_job_file_names_only_what_fio_takes_literally() -> None:
    shape = jobs.shape_for(Workload(), measure_seconds=1.0, fs_bytes=1 << 30)
    text = jobs.jobfile(shape, "mnt", counters_for="loop3")
    assert "directory=mnt/big" in text
    for hostile in ("/tmp/a;b/mnt", "/tmp/a:b/mnt", "/tmp/$HOME/mnt", "/tmp/a b/mnt",
                    "/tmp/a\nrw=trim/mnt", "/tmp/${X}/mnt"):
        with pytest.raises(ValueError, match="fio"):
            jobs.jobfile(shape, hostile)
    with pytest.raises(ValueError, match="fio"):
        jobs.jobfile(shape, "mnt", counters_for="sda;reboot")


@pytest.mark.parametrize("where", ["deep/er/dir", "ABS/deep/er/dir"])
def test_missing_loop_folders_are_not_left_behind(tmp_path: Path, where: str) -> None:
    require_root_tools(*TOOLS)
    loop_dir = where.replace("ABS", str(tmp_path))
    proc = _validate(tmp_path, loop_dir, *STOP_AFTER_A, cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    assert not (tmp_path / "deep").exists()
    assert leftovers(tmp_path) == []


def test_a_full_state_folder_is_one_line_and_no_stray_file(tmp_path: Path) -> None:
    require_root_tools(*TOOLS)
    state = tmp_path / "state"
    state.mkdir()
    sh("mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(state))
    try:
        fd = os.open(state / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:  # full
            pass
        finally:
            os.close(fd)
        proc = _validate(tmp_path, str(tmp_path / "work"), state=state)
        assert proc.returncode == 4, proc.stderr
        assert "cannot write the run's state file" in _error(proc)
        assert len(proc.stderr.strip().splitlines()) == 1
        assert sorted(p.name for p in state.iterdir()) == ["filler"]
    finally:
        sh("umount", str(state), check=False)
    assert leftovers(tmp_path) == []
