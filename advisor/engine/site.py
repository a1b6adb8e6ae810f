"""Deciders that sites use in their own rule files (`--rules DIR`), beside the rule book's.

`keep_default`: "never change this setting here" as a rule. With `keep_wins = true` and a
priority above the rules that would change the setting, the default stays and the decision names
the site rule and what it overrode."""

from __future__ import annotations

from pydantic import Field

from advisor.engine.context import Context, Outcome
from advisor.engine.registry import decider
from advisor.models.base import Model


class KeepParams(Model):
    """Why the site keeps the default (shown as the decision's reason)."""

    reason: str = Field(min_length=3)


@decider(KeepParams)
def keep_default(ctx: Context, params: KeepParams) -> Outcome:
    return Outcome(keep_reason=params.reason)
