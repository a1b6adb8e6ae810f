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
from advisor.models.bench import MAX_STORED_FLOOR, MAX_STORED_SD, Calibration, MetricNoise
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

    def floors(self, key: str) -> dict[str, float]:
        """Metric name -> noise floor (fraction) for this kind of device; empty if never
        calibrated."""
        cal = self.get(key)
        return {name: n.floor for name, n in cal.metrics.items()} if cal else {}

    def save(self, key: str, samples: dict[str, tuple[Sequence[float], Sequence[float]]]) -> None:
        metrics = {}
        for name, (a, b) in samples.items():
            summary = stats.paired_log_ratios(a, b)
            metrics[name] = MetricNoise(floor=_stored(stats.noise_floor(a, b), MAX_STORED_FLOOR),
                                        sd=_stored(summary.sd, MAX_STORED_SD), rounds=summary.n)
        everything = self._load()
        earlier = everything[key].metrics if key in everything else {}
        everything[key] = Calibration(device_key=key,
                                      measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
                                      metrics={**earlier, **metrics})
        try:
            Path(os.path.realpath(self.path)).parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise BadInput(f"cannot write calibration file {self.path}: {err.strerror}") from None
        write_text_atomically(self.path, json.dumps(
            {k: v.model_dump(mode="json") for k, v in everything.items()}, indent=2) + "\n",
            "calibration file")
