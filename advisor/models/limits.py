"""The bounds of a validation run that the command line's help names too, written once. Plain
constants in a module of their own: the parser imports it while it is built, where the report's
models (advisor.models.bench, pydantic) would cost tens of milliseconds."""

from __future__ import annotations

#: Most pairs a run may have: beyond this no verdict changes (a metric that needs more is "more
#: than MAX_PAIRS pairs"), and the plan, the samples and the time would grow without purpose.
MAX_PAIRS = 200
