"""The rule engine: loads rules/ and turns device facts and workload answers into a proposal."""

from __future__ import annotations

from advisor.engine.propose import propose

__all__ = ["propose"]
