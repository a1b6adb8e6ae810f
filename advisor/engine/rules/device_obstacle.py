"""A warning about one kind of obstacle on the device itself (mounted, swap, held, partitions,
data, read-only, zoned, misaligned): the rule file names the kind, advisor.models.obstacles
judges it, in the words the guard and the device lists use too."""

from __future__ import annotations

from advisor.engine.context import Context, Outcome
from advisor.engine.registry import decider
from advisor.models.base import Model
from advisor.models.obstacles import ObstacleKind, obstacles


class ObstacleParams(Model):
    """Which obstacle the rule warns about."""

    kind: ObstacleKind
    """One kind of advisor.models.obstacles: mounted, swap, held, partitions, data, read-only,
    zoned or misaligned."""


@decider(ObstacleParams)
def device_obstacle(ctx: Context, params: ObstacleParams) -> Outcome:
    d = ctx.device
    return Outcome(warnings=[o.sentence(d.name) for o in obstacles(d) if o.kind == params.kind])
