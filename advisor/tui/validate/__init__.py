"""Step 4: the A/B validation: mkfs.xfs defaults against the proposal, on a loop device over a
temporary file or on a scratch device the guard accepts and the person confirms by typing its
name. The run is advisor.bench's, in a worker thread that only posts messages.

The screen (`screen`) is made of its parts: where to run and the guard (`targets`), the run
(`run`), its report (`report`) and the plot per metric (`plot`)."""

from advisor.tui.validate.plot import MAX_X_TICKS, SIDE_NAMES, MetricPlot, round_ticks
from advisor.tui.validate.report import METRIC_COLUMNS, interval_text, margin_text, next_steps
from advisor.tui.validate.screen import ValidateScreen
from advisor.tui.validate.targets import LOOP

__all__ = ["LOOP", "MAX_X_TICKS", "METRIC_COLUMNS", "SIDE_NAMES", "MetricPlot", "ValidateScreen",
           "interval_text", "margin_text", "next_steps", "round_ticks"]
