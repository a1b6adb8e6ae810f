"""Where `validate --calibrate` keeps the noise floor it measured, per kind of device, so that
later runs never call a difference smaller than the noise a real A/A run showed.

Root: /var/lib/xfs-advisor/calibration.json; others: ~/.cache/xfs-advisor/calibration.json;
XFS_ADVISOR_CALIBRATION (or --calibration-file) overrides both."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from advisor.bench import stats
from advisor.errors import BadInput
from advisor.models.bench import Calibration, MetricNoise

ENV = "XFS_ADVISOR_CALIBRATION"


def default_path() -> Path:
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    if os.geteuid() == 0:
        return Path("/var/lib/xfs-advisor/calibration.json")
    return Path.home() / ".cache" / "xfs-advisor" / "calibration.json"


class CalibrationStore:
    """A JSON file: {device_key: Calibration}."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()

    def _load(self) -> dict[str, Calibration]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as err:
            raise BadInput(f"calibration file {self.path} is unreadable: {err}") from None
        try:
            return {k: Calibration.model_validate(v) for k, v in data.items()}
        except (ValidationError, AttributeError) as err:
            raise BadInput(f"calibration file {self.path} is malformed: {err}") from None

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
            metrics[name] = MetricNoise(floor=round(stats.noise_floor(a, b), 4),
                                        sd=round(summary.sd, 4), rounds=summary.n)
        everything = self._load()
        earlier = everything[key].metrics if key in everything else {}
        everything[key] = Calibration(device_key=key,
                                      measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
                                      metrics={**earlier, **metrics})
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({k: v.model_dump(mode="json") for k, v in everything.items()},
                                  indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)
