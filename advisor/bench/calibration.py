"""Where `validate --calibrate` keeps the noise floor it measured, per kind of device, so that
later runs never call a difference smaller than the noise a real A/A run showed.

Root: /var/lib/xfs-advisor/calibration.json; others: ~/.cache/xfs-advisor/calibration.json;
XFS_ADVISOR_CALIBRATION (or --calibration-file) overrides both."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from advisor.bench import stats
from advisor.errors import BadInput
from advisor.models.bench import (
    MAX_STORED_FLOOR,
    MAX_STORED_SD,
    Calibration,
    CalibrationUse,
    MetricNoise,
)
from advisor.system.files import read_text, write_target, write_text_atomically

ENV = "XFS_ADVISOR_CALIBRATION"


def default_path() -> Path:
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    if os.geteuid() == 0:
        return Path("/var/lib/xfs-advisor/calibration.json")
    return Path.home() / ".cache" / "xfs-advisor" / "calibration.json"


#: Widest margin a calibrated noise floor can set: 50%. A margin is the difference a run still
#: calls "equivalent"; at 50% a side half again as slow passes, and a wider one makes the verdict
#: meaningless (a 1e308 floor once called a 20x slower B "equivalent"). A floor above it is
#: capped, and the report says so, rather than hiding every real difference behind it.
MAX_MARGIN = 0.5


def margin_for(floor: float | None) -> tuple[float, bool]:
    """The practical margin of one metric (a fraction) from its calibrated floor, and whether
    the floor had to be capped at MAX_MARGIN."""
    if floor is None:
        return stats.DEFAULT_MARGIN, False
    return max(stats.DEFAULT_MARGIN, min(floor, MAX_MARGIN)), floor > MAX_MARGIN


#: Calibrations older than this are not used: the machine's load, its storage and its neighbours
#: change, and a floor from another era decides today's margins silently. Measure again.
MAX_AGE_DAYS = 30.0
#: What an A/A run's noise depends on besides the device: a floor measured under another kernel
#: or another mkfs.xfs/fio is foreign to this run.
VERSIONS = ("kernel", "xfsprogs", "fio")


def _stored(value: float, limit: float) -> float:
    """A measured floor or sd as the file may hold it: rounded, finite, within the model's bound."""
    return round(min(value, limit), 4) if math.isfinite(value) else limit


class CalibrationStore:
    """A JSON file: {device_key: Calibration}."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()

    def check(self, *, writing: bool) -> None:
        """Before a run makes anything: the file must load (a corrupt one is bad input now, not
        after the whole benchmark) and, for --calibrate, be writable where it is."""
        self._load()
        if writing:
            self._check_writable()

    def _check_writable(self) -> None:
        target = Path(os.path.realpath(self.path))
        if target.exists():
            write_target(self.path, "calibration file")
        folder = target.parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
            raise BadInput(f"cannot write calibration file {self.path}: {folder} is not a "
                           "writable directory (use --calibration-file)")

    def _load(self) -> dict[str, Calibration]:
        if not os.path.lexists(self.path):
            return {}
        text = read_text(self.path, "calibration file")
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            raise BadInput(f"calibration file {self.path} is malformed: not JSON") from None
        if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
            raise BadInput(f"calibration file {self.path} is malformed: expected "
                           "{device_key: {...}}")
        try:
            return {k: Calibration.model_validate(v) for k, v in data.items()}
        except ValidationError as err:
            e = err.errors()[0]
            where = ".".join(str(p) for p in e["loc"])
            raise BadInput(f"calibration file {self.path} is malformed: {where}: "
                           f"{e['msg']}") from None

    def get(self, key: str) -> Calibration | None:
        return self._load().get(key)

    def use(self, key: str, now: dict[str, str | None],
            at: datetime | None = None) -> tuple[dict[str, float], CalibrationUse]:
        """The noise floors a run on `key` may rest on, and what to say about them: none stored
        (default margins), stored but foreign (another kernel, xfsprogs or fio than `now`) or
        older than MAX_AGE_DAYS (not used, and said why), or used (with when, how and from
        which file)."""
        cal = self.get(key)
        file = str(self.path)
        if cal is None:
            return {}, CalibrationUse(
                source="default", device_key=key, file=file,
                summary=f"margins: the default {stats.DEFAULT_MARGIN:.0%}: no calibration for "
                        f"{key} in {file} (`xfs-advisor validate --calibrate` measures one)")
        at = at or datetime.now(UTC)
        try:
            measured = datetime.fromisoformat(cal.measured_at)
            if measured.tzinfo is None:
                measured = measured.replace(tzinfo=UTC)
            age = max(0.0, (at - measured).total_seconds() / 86400)
        except ValueError:
            age = math.inf
        pairs = min((n.rounds for n in cal.metrics.values()), default=None)
        with_ = {k: getattr(cal, k) for k in VERSIONS if getattr(cal, k) is not None}
        base = dict(device_key=key, file=file, measured_at=cal.measured_at,
                    age_days=round(age, 1) if math.isfinite(age) else None, pairs=pairs,
                    measured_with=with_)
        foreign = [f"{k} {with_[k]} (now {now.get(k)})" for k in with_ if with_[k] != now.get(k)]
        why = None
        if foreign:
            why = "measured with another " + ", ".join(foreign)
        elif age > MAX_AGE_DAYS:
            why = (f"measured {age:.0f} days ago (older than {MAX_AGE_DAYS:.0f})"
                   if math.isfinite(age) else f"its date {cal.measured_at!r} does not parse")
        if why:
            return {}, CalibrationUse(
                source="ignored", why=why, **base,
                summary=f"margins: the default {stats.DEFAULT_MARGIN:.0%}: the calibration for "
                        f"{key} in {file} was not used: {why}; measure again with "
                        "`xfs-advisor validate --calibrate`")
        unknown = "" if with_ else "; tool versions not recorded"
        floors = {name: n.floor for name, n in cal.metrics.items()}
        return floors, CalibrationUse(
            source="measured", **base,
            summary=f"noise floors of an A/A run on {key} ({pairs} pairs, {cal.measured_at}, "
                    f"{age:.1f} days ago{unknown}) from {file}, shown beside the metrics; margins "
                    f"stay {stats.DEFAULT_MARGIN:.0%} (noise already widens the intervals)")

    def floors(self, key: str) -> dict[str, float]:
        """Metric name -> noise floor (fraction) for this kind of device; empty if never
        calibrated."""
        cal = self.get(key)
        return {name: n.floor for name, n in cal.metrics.items()} if cal else {}

    def save(self, key: str, samples: dict[str, tuple[Sequence[float], Sequence[float]]],
             versions: dict[str, str | None] | None = None) -> None:
        metrics = {}
        for name, (a, b) in samples.items():
            summary = stats.paired_log_ratios(a, b)
            metrics[name] = MetricNoise(floor=_stored(stats.noise_floor(a, b), MAX_STORED_FLOOR),
                                        sd=_stored(summary.sd, MAX_STORED_SD), rounds=summary.n)
        everything = self._load()
        recorded = {k: (versions or {}).get(k) for k in VERSIONS}
        # This run's metrics only: an earlier run's, kept under this run's date and versions,
        # would pass for measured now (an fsync floor from another kernel came back so).
        everything[key] = Calibration(device_key=key,
                                      measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
                                      metrics=metrics, **recorded)
        try:
            Path(os.path.realpath(self.path)).parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise BadInput(f"cannot write calibration file {self.path}: {err.strerror}") from None
        write_text_atomically(self.path, json.dumps(
            {k: v.model_dump(mode="json") for k, v in everything.items()}, indent=2) + "\n",
            "calibration file")
