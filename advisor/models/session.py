"""What the audit and the fleet report need of a session, as a Protocol: the devices, the
environment the proposals are for, a checked proposal, and the rule book's rules of one kind.
advisor.session.Session is one; the layers below it name this instead of importing it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from advisor.models.device import Device, Inventory
from advisor.models.environment import Environment
from advisor.models.proposal import Proposal
from advisor.models.rule import Rule
from advisor.models.workload import Workload


class RulesByKind(Protocol):
    """A rule book, as far as the audit reads it."""

    def of_kind(self, kind: str) -> list[Rule]:
        """The rules of one kind (`obsolete`, ...), sorted by id."""
        ...

    @property
    def rules(self) -> Mapping[str, Any]:
        """Every loaded rule by id (each with its validated `params`)."""
        ...


class Advising(Protocol):
    """One run of the advisor over a host (the live system or a capture)."""

    @property
    def live(self) -> bool:
        """True on the running system; False for a captured tree."""
        ...

    @property
    def environment(self) -> Environment:
        """The host the proposals are for."""
        ...

    @property
    def rulebook(self) -> RulesByKind:
        """The rules the proposals are made with."""
        ...

    def inventory(self) -> Inventory:
        """Every block device of the host."""
        ...

    def propose(self, device: Device, workload: Workload) -> Proposal:
        """The checked proposal for `device` and `workload`."""
        ...
