"""The calibration store is input like any other: checked when validate starts (a corrupt file is
exit 2 naming it, before anything is made), bounded (finite, >= 0, a floor of at most 10), and a
floor above 50% caps the margin there, which the report says, instead of hiding every difference."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from advisor.bench.calibration import MAX_MARGIN, CalibrationStore, margin_for
from advisor.bench.plan import Plan
from advisor.bench.stats import DEFAULT_MARGIN
from advisor.bench.verdicts import device_key, judge
from advisor.errors import BadInput
from advisor.models.bench import (
    MAX_STORED_FLOOR,
    BenchEnvironment,
    SideConfig,
    Timing,
    ValidationReport,
)
from advisor.models.workload import Workload
from advisor.render.validation import render_text
from tests.conftest import REPO

ENV = BenchEnvironment(device="/dev/loop7", device_size_bytes=4 << 30,
                       loop_backing_file="/var/tmp/xfs-advisor-x/scratch.img")


def _entry(floor: object = 0.03, sd: object = 0.02, rounds: object = 6) -> dict[str, object]:
    return {"device_key": "k", "measured_at": "2026-01-01T00:00:00+00:00",
            "metrics": {"creates_per_s": {"floor": floor, "sd": sd, "rounds": rounds}}}


BAD = {
    "not json": "{",
    "a list": "[]",
    "huge floor": json.dumps({"k": _entry(floor=1e308)}),
    "nan floor": '{"k": ' + json.dumps(_entry()).replace("0.03", "NaN") + "}",
    "infinite sd": '{"k": ' + json.dumps(_entry()).replace("0.02", "Infinity") + "}",
    "negative floor": json.dumps({"k": _entry(floor=-0.1)}),
    "bool rounds": json.dumps({"k": _entry(rounds=True)}),
    "string floor": json.dumps({"k": _entry(floor="lots")}),
    "deep": "[" * 100_000 + "]" * 100_000,
    "huge integer": '{"k": {"x": ' + "9" * 5000 + "}}",
}


@pytest.mark.parametrize("name", BAD)
def test_malformed_store_is_bad_input_naming_the_file(tmp_path: Path, name: str) -> None:
    path = tmp_path / "calibration.json"
    path.write_text(BAD[name])
    with pytest.raises(BadInput, match=re.escape(str(path))):
        CalibrationStore(path).check(writing=False)


def test_fifo_store_does_not_hang(tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    os.mkfifo(path)
    with pytest.raises(BadInput, match="FIFO"):
        CalibrationStore(path).check(writing=False)


def test_missing_store_is_empty_and_unwritable_one_is_refused_for_calibrate(
        tmp_path: Path) -> None:
    CalibrationStore(tmp_path / "none.json").check(writing=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(BadInput, match="is not a writable directory"):
        CalibrationStore(tmp_path / "file" / "c.json").check(writing=True)


def test_margin_is_capped_at_half() -> None:
    assert margin_for(None) == (DEFAULT_MARGIN, False)
    assert margin_for(0.01) == (DEFAULT_MARGIN, False)
    assert margin_for(0.2) == (0.2, False)
    assert margin_for(MAX_MARGIN) == (MAX_MARGIN, False)
    assert margin_for(7.0) == (MAX_MARGIN, True)


def _judged(store: CalibrationStore, slower: float) -> ValidationReport:
    plan = Plan(a=SideConfig(label="A"), b=SideConfig(label="B"), workload=Workload())
    shape = plan.shape
    wobble = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0]
    samples = {m.name: {"A": [1000.0 * w for w in wobble],
                        "B": [1000.0 * w * (slower if m.higher_is_better else 1 / slower)
                              for w in reversed(wobble)]}
               for m in shape.metrics}
    return judge(plan, samples, infos={}, env=ENV, shape=shape, age=None,
                 timing=Timing(wall_seconds=100.0, measuring_seconds=60.0, measuring_share=0.6),
                 recovered=[], store=store)


def test_a_huge_stored_floor_cannot_hide_a_twentyfold_slowdown(tmp_path: Path) -> None:
    """A stored floor (here 10 = 1000%) is shown, never the margin: B 20x slower is worse."""
    plan = Plan(a=SideConfig(label="A"), b=SideConfig(label="B"), workload=Workload())
    names = [m.name for m in plan.shape.metrics]
    path = tmp_path / "calibration.json"
    now = datetime.now(UTC).isoformat(timespec="seconds")
    path.write_text(json.dumps({device_key(ENV): {
        "device_key": device_key(ENV), "measured_at": now,
        "metrics": {n: {"floor": MAX_STORED_FLOOR, "sd": 1.0, "rounds": 6} for n in names}}}))
    report = _judged(CalibrationStore(path), slower=1 / 20)
    assert report.calibration is not None and report.calibration.source == "measured"
    assert report.verdict == "worse"
    for m in report.metrics:
        assert m.margin == DEFAULT_MARGIN and not m.margin_capped
        assert m.calibrated_floor == MAX_STORED_FLOOR and m.verdict == "worse"
    text = render_text(report, with_plot=False)
    assert "Margin capped" not in text and "margins stay 5%" in text
    doc = json.loads(report.model_dump_json())
    assert doc["metrics"][0]["margin"] == DEFAULT_MARGIN


def test_no_floor_means_no_cap_field_set(tmp_path: Path) -> None:
    report = _judged(CalibrationStore(tmp_path / "none.json"), slower=1.0)
    for m in report.metrics:
        assert m.calibrated_floor is None and not m.margin_capped
        assert m.margin == DEFAULT_MARGIN


def test_save_keeps_what_it_writes_loadable(tmp_path: Path) -> None:
    """An A/A run so noisy that its floor exceeds the bound is stored at the bound, so the next
    run can still read the file."""
    store = CalibrationStore(tmp_path / "sub" / "calibration.json")
    wild = ([1.0, 1000.0, 1.0, 1000.0, 1.0, 1000.0], [1000.0, 1.0, 1000.0, 1.0, 1000.0, 1.0])
    store.save("k", {"creates_per_s": wild})
    calibration = store.get("k")
    assert calibration is not None
    noise = calibration.metrics["creates_per_s"]
    assert noise.floor == MAX_STORED_FLOOR and math.isfinite(noise.sd)


def test_validate_checks_the_file_before_anything_is_made(tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"k": _entry(floor=1e308)}))
    env = {**os.environ, "XFS_ADVISOR_STATE_DIR": str(tmp_path / "state")}
    env.pop("XFS_ADVISOR_DEBUG", None)
    proc = subprocess.run([sys.executable, "-m", "advisor", "validate", "--calibration-file",
                           str(path), "--loop-dir", str(tmp_path / "work"), "--loop-size",
                           "1GiB"], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=60)
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip()
    assert "\n" not in line and f"calibration file {path} is malformed" in line
    assert "floor" in line and "Traceback" not in proc.stderr
    assert not (tmp_path / "work").exists() and not (tmp_path / "state").exists()


# ---- the calibration in use is shown, and a stale or foreign one is not used silently ----

def _stored(path: Path, when: datetime, **versions: str) -> None:
    names = [m.name for m in Plan(a=SideConfig(label="A"), b=SideConfig(label="B"),
                                  workload=Workload()).shape.metrics]
    path.write_text(json.dumps({device_key(ENV): {
        "device_key": device_key(ENV), "measured_at": when.isoformat(timespec="seconds"),
        **versions, "metrics": {n: {"floor": 0.2, "sd": 0.1, "rounds": 10} for n in names}}}))


@pytest.mark.parametrize(("age_days", "versions", "source", "words"), [
    (2, {}, "measured", "tool versions not recorded"),
    (45, {}, "ignored", "measured 45 days ago (older than 30)"),
    (2, {"kernel": "5.10.0-28-amd64"}, "ignored", "measured with another kernel 5.10.0-28"),
])
def test_the_calibration_in_use_is_named_with_its_age_and_origin(
        tmp_path: Path, age_days: float, versions: dict[str, str], source: str,
        words: str) -> None:
    path = tmp_path / "calibration.json"
    _stored(path, datetime.now(UTC) - timedelta(days=age_days), **versions)
    report = _judged(CalibrationStore(path), slower=1.0)
    used = report.calibration
    assert used is not None and used.source == source
    assert words in used.summary and str(path) in used.summary
    # The margin is what "equivalent" allows, never the noise floor (noise widens the intervals).
    assert {m.margin for m in report.metrics} == {DEFAULT_MARGIN}
    if source == "measured":
        assert {m.calibrated_floor for m in report.metrics} == {0.2}
    assert used.summary in render_text(report, with_plot=False)


def test_calibrate_records_the_versions_it_ran_with(tmp_path: Path) -> None:
    store = CalibrationStore(tmp_path / "calibration.json")
    store.save("k", {"creates_per_s": ([1.0, 1.1, 0.9], [1.0, 1.05, 0.95])},
               {"kernel": "6.18", "xfsprogs": "6.1.0", "fio": "fio-3.33"})
    cal = store.get("k")
    assert cal is not None and (cal.kernel, cal.xfsprogs, cal.fio) == (
        "6.18", "6.1.0", "fio-3.33")


def test_a_new_calibration_keeps_none_of_the_older_metrics(tmp_path: Path) -> None:
    """An earlier A/A run's metric that this run did not measure is dropped, not kept under the
    new date and versions (it would pass for measured now)."""
    store = CalibrationStore(tmp_path / "calibration.json")
    store.save("k", {"fsync_writes_per_s": ([1.0, 1.1, 0.9], [1.0, 1.05, 0.95]),
                     "creates_per_s": ([1.0, 1.1, 0.9], [1.0, 1.05, 0.95])},
               {"kernel": "5.10", "xfsprogs": "5.10.0", "fio": "fio-3.25"})
    store.save("k", {"creates_per_s": ([1.0, 1.1, 0.9], [1.0, 1.05, 0.95])},
               {"kernel": "6.18", "xfsprogs": "6.1.0", "fio": "fio-3.33"})
    cal = store.get("k")
    assert cal is not None and set(cal.metrics) == {"creates_per_s"}
    assert cal.kernel == "6.18"


def test_the_same_versions_are_used_and_said(tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    now = {"kernel": "6.18.44", "xfsprogs": "6.1.0", "fio": "fio-3.33"}
    _stored(path, datetime.now(UTC) - timedelta(days=3), **now)
    floors, used = CalibrationStore(path).use(device_key(ENV), dict(now))
    assert used.source == "measured" and set(floors.values()) == {0.2}
    assert used.measured_with == now and used.pairs == 10 and used.age_days == 3.0
    assert "3.0 days ago" in used.summary and "not recorded" not in used.summary
    newer = {**now, "xfsprogs": "6.9.0"}
    floors, used = CalibrationStore(path).use(device_key(ENV), dict(newer))
    assert floors == {} and used.source == "ignored"
    assert used.why == "measured with another xfsprogs 6.1.0 (now 6.9.0)"
