"""The fio workload of a round: its shape follows the answers and the budget, the delete phase
only names files that exist and scatters its holes through the directory, and a real fio run of
the job file leaves the directory the module's notes describe."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from advisor.bench import jobs
from advisor.errors import ToolProblem
from advisor.models.workload import Workload
from tests.conftest import mounted, require_root_tools, sh

METADATA_ONLY = Workload(largest_directory_entries=1_000_000, fsyncs_per_second=0,
                         median_file_size=4096, concurrent_writers=1)


def _shape(workload: Workload = METADATA_ONLY, seconds: float = 4.0) -> jobs.Shape:
    return jobs.shape_for(workload, measure_seconds=seconds, fs_bytes=1 << 30)


def _sections(text: str) -> dict[str, dict[str, str]]:
    """The job file as {job: {option: value}} (fio's own syntax: `[name]`, `key=value`)."""
    out: dict[str, dict[str, str]] = {}
    current: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("["):
            current = out.setdefault(line.strip("[]"), {})
        elif "=" in line:
            key, value = line.split("=", 1)
            current[key] = value
    return out


def _names(job: dict[str, str]) -> list[str]:
    """The file names fio gives a job: `$filenum` counts from 0 (fio 3.33)."""
    return [job["filename_format"].replace("$filenum", str(k)) for k in range(int(job["nrfiles"]))]


def test_shape_scales_with_the_budget_and_keeps_the_large_directory_floor() -> None:
    small, large = _shape(seconds=1.0), _shape(seconds=8.0)
    assert small.directory_entries == jobs.LARGE_DIRECTORY_FLOOR
    assert large.directory_entries > small.directory_entries
    for shape in (small, large):
        assert shape.directory_entries % 10 == 0
        assert shape.churn_entries == shape.directory_entries // 10
    # Never more than the answer, never fewer than can be timed.
    tiny = Workload(largest_directory_entries=50)
    assert _shape(tiny).directory_entries == jobs.MIN_DIRECTORY_ENTRIES
    asked = Workload(largest_directory_entries=12_345, fsyncs_per_second=0)
    assert _shape(asked, seconds=60).directory_entries == 12_340


def test_data_phases_follow_the_answers() -> None:
    assert {m.job for m in _shape().metrics} == {"create", "delete", "refill", "stat"}
    everything = Workload(largest_directory_entries=1_000_000)  # fsync and file size unknown
    assert {m.job for m in _shape(everything).metrics} == {m.job for m in jobs.METRICS}
    # Data phases take their share of the budget away from the directory.
    assert (_shape(everything, seconds=8.0).directory_entries
            < _shape(METADATA_ONLY, seconds=8.0).directory_entries)


def test_deletes_name_only_existing_files_one_in_ten_through_the_directory() -> None:
    shape = _shape()
    sections = _sections(jobs.jobfile(shape, "/mnt"))
    rest = _sections(jobs.jobfile(shape, "/mnt", part="rest"))
    assert list(sections) == ["global", "create", "delete", "refill"]
    assert list(rest)[:2] == ["global", "stat"]
    created = _names(sections["create"])
    position = {name: i for i, name in enumerate(created)}
    seeds = {Path(seed).name for seed in jobs.seed_files()}
    assert not seeds & set(created)
    deleted = _names(sections["delete"])
    assert len(deleted) == shape.churn_entries == len(set(deleted))
    missing = [n for n in deleted if n not in position and n not in seeds]
    assert missing == []
    # Every tenth file in creation order: holes spread over the whole directory, not a block
    # emptied at its start (which costs nothing extra with large directory blocks).
    places = sorted(position[n] for n in deleted if n in position)
    assert places[0] == 10 and places[-1] == shape.directory_entries - 10
    assert {b - a for a, b in itertools.pairwise(places)} == {10}
    # The refill makes new names, and the cold stat visits exactly those.
    refilled = _names(sections["refill"])
    assert len(refilled) == shape.churn_entries and not set(refilled) & set(created)
    assert _names(rest["stat"]) == refilled
    # Cold for the test filesystem only (the run mounts it again before this file): nothing
    # before the stats touches the host's caches or settings.
    assert "exec_prerun" not in rest["stat"]
    for text in (jobs.jobfile(shape, "/mnt", counters_for="loop0", part=p)
                 for p in ("changes", "rest")):
        assert "drop_caches" not in text and "sysctl" not in text


def test_job_file_runs_and_leaves_the_directory_described(tmp_path: Path, loop: str) -> None:
    require_root_tools("fio", "mount")
    shape = jobs.shape_for(Workload(largest_directory_entries=2000, fsyncs_per_second=10,
                                    median_file_size=1 << 20, concurrent_writers=2),
                           measure_seconds=1.0, fs_bytes=1 << 30)
    sh("mkfs.xfs", "-q", "-f", "-K", loop)
    with mounted(loop, tmp_path / "mnt") as mnt:
        jobs.prepare(shape, str(mnt))
        values: dict[str, float] = {}
        for part in ("changes", "rest"):
            jobfile = tmp_path / f"{part}.fio"
            jobfile.write_text(jobs.jobfile(shape, str(mnt), part=part))
            proc = subprocess.run(["fio", "--output-format=json", str(jobfile)], cwd=tmp_path,
                                  capture_output=True, text=True, check=False)
            assert proc.returncode == 0, proc.stderr
            wanted = tuple(m for m in shape.metrics
                           if (m.job in jobs.CHANGE_PHASES) == (part == "changes"))
            values.update(jobs.parse_fio(proc.stdout, wanted).values)
        big = set(os.listdir(mnt / "big"))
        # All created but the deleted tenth (and the seed), plus the refill.
        assert len(big) == shape.directory_entries + 1 - shape.churn_entries + shape.churn_entries
        # Files 10, 20, ... are gone (the delete's k = 0 name was the seed, so file 0 stays).
        tens = {n for n in big if re.fullmatch(r"msg\.[0-9]*0\.host\.example\.org", n)}
        assert tens == {"msg.0.host.example.org"}
        assert sum(n.startswith("new.") for n in big) == shape.churn_entries
        assert sorted(os.listdir(mnt / "w1")) == ["read.dat", "seq.dat", "sync.dat"]
    assert not (tmp_path / "stat.prerun.txt").exists()  # no command ran before the stats
    assert set(values) == {m.name for m in jobs.METRICS}
    assert all(v > 0 for v in values.values())


def _fio_json(jobs_out: list[dict[str, object]]) -> str:
    return "stat : Saving output of prerun in stat.prerun.txt\n" + json.dumps({"jobs": jobs_out})


def test_parse_sums_concurrent_writers_and_reads_past_fio_chatter() -> None:
    doc = [{"jobname": "create", "write": {"iops": 1000.0, "runtime": 2000, "total_ios": 2000},
            "usr_cpu": 10.0, "sys_cpu": 40.0, "job_runtime": 2000},
           {"jobname": "delete", "read": {"iops": 500.0, "runtime": 400, "total_ios": 200},
            "usr_cpu": 50.0, "sys_cpu": 50.0, "job_runtime": 400},
           {"jobname": "seqwrite.0", "write": {"bw_bytes": 100 << 20, "runtime": 500}},
           {"jobname": "seqwrite.1", "write": {"bw_bytes": 50 << 20, "runtime": 700}}]
    metrics = tuple(m for m in jobs.METRICS if m.job in ("create", "seqwrite"))
    result = jobs.parse_fio(_fio_json(doc), metrics)
    # Directory changes per CPU-second: 2,200 operations over 1.0 + 0.4 CPU-seconds.
    assert result.values == {"creates_per_s": 1000.0, "creates_per_cpu_s": 2000.0,
                             "dirops_per_cpu_s": pytest.approx(2200 / 1.4),
                             "seq_write_mib_s": 150.0}
    assert result.measuring_seconds == pytest.approx(2.7)


@pytest.mark.parametrize("doc, message", [
    ([{"jobname": "create", "error": 2, "write": {"iops": 1.0}}], "create failed with error 2"),
    ([{"jobname": "seqwrite.0", "write": {"bw_bytes": 1, "runtime": 1}}], "no result"),
    ([{"jobname": "create", "write": {"iops": 0.0, "runtime": 0}}], "measured nothing"),
])
def test_parse_refuses_failed_missing_or_empty_phases(doc: list[dict[str, object]],
                                                      message: str) -> None:
    metrics = tuple(m for m in jobs.METRICS if m.job == "create")
    with pytest.raises(ToolProblem, match=message):
        jobs.parse_fio(_fio_json(doc), metrics)
    with pytest.raises(ToolProblem, match="no JSON"):
        jobs.parse_fio("fio: engine not found", metrics)
