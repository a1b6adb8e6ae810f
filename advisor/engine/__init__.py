"""The rule engine: turns device facts, workload answers, the host's environment and what its
mkfs.xfs makes by default into a draft proposal. Pure: advisor.advice gives it its inputs and
gates its draft with a real `mkfs.xfs -N`."""

from __future__ import annotations

from advisor.engine.decide import Draft, draft

__all__ = ["Draft", "draft"]
