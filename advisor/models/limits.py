"""The bounds and defaults of a validation run that the command line's help names too, written
once. Plain
constants in a module of their own: the parser imports it while it is built, where the report's
models (advisor.models.bench, pydantic) would cost tens of milliseconds."""

from __future__ import annotations

#: Most pairs a run may have: beyond this no verdict changes (a metric that needs more is "more
#: than MAX_PAIRS pairs"), and the plan, the samples and the time would grow without purpose.
MAX_PAIRS = 200
#: Fewest pairs before the first look (two ABBA blocks): the confidence sequences are valid at
#: any number of pairs; a primary count with 1-3% noise and a several-fold change is decided at
#: 3 or 4 pairs (a figure B does none of, by an exact rank test, at 4).
MIN_PAIRS = 4
#: Pairs before the first look unless --rounds says otherwise.
DEFAULT_PAIRS = 4
#: The loop device's size unless --loop-size says otherwise (or --for needs a larger one).
DEFAULT_LOOP_SIZE = 4 << 30
#: Default wall-time budget of a run, seconds, set-up and clean-up included: a cap (no ABBA block
#: is started that would likely overrun it), not the run's length: the adaptive rounds stop as
#: soon as every primary metric (each changed option's mechanism) is decided. The workload is
#: scaled so that the minimum pairs take about half of it.
DEFAULT_BUDGET = 80.0
