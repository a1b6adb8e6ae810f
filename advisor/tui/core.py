"""The TUI's doors into the core: reading devices, proposing, validating. The TUI decides nothing
itself; these functions only call the core and say plainly when a part of it is not installed."""

from __future__ import annotations

import functools
import importlib.util
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from advisor.errors import AdvisorError
from advisor.models.device import Device, Inventory
from advisor.models.workload import Workload
from advisor.system.sysroot import SysRoot

if TYPE_CHECKING:
    from advisor.engine.rulebook import RuleBook
    from advisor.models.environment import Environment
    from advisor.models.proposal import Proposal


class MissingPart(AdvisorError):
    """A part of the core this screen needs is not in this build."""

    kind = "missing"


def _require(module: str, what: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise MissingPart(f"{what} ({module}) is not in this build")


def read_inventory(sysroot: str | None) -> Inventory:
    """Every block device of the live system or of a captured tree."""
    _require("advisor.inspect.devices", "device inspection")
    from advisor.inspect.devices import inspect_devices

    root = SysRoot.open(sysroot)
    # As `xfs-advisor propose` does: libblkid live as root, or the probe file of a capture.
    return inspect_devices(root, probe=not root.live or os.geteuid() == 0)


def is_live(sysroot: str | None) -> bool:
    """True when the TUI reads the running system (hotplug can then be followed)."""
    return SysRoot.open(sysroot).live


@functools.cache
def _environment(sysroot: str | None) -> Environment:
    from advisor.system.versions import read_environment

    return read_environment(SysRoot.open(sysroot))


@functools.cache
def _rulebook(rules_dir: str | None) -> RuleBook:
    from advisor.engine.rulebook import load_rulebook

    return load_rulebook(rules_dir)


def propose(device: Device, workload: Workload, sysroot: str | None = None,
            rules_dir: str | None = None) -> Proposal:
    """The engine's proposal, as `xfs-advisor --json` gives it for the same device and answers.
    The tool versions and the rule book are read once per session."""
    _require("advisor.engine.propose", "the proposal engine")
    from advisor.engine.propose import propose as engine_propose

    return engine_propose(device, workload, env=_environment(sysroot),
                          rulebook=_rulebook(rules_dir))


@dataclass(frozen=True)
class ObsoleteAdvice:
    """Advice found all over the web that the advisor never gives, and why."""

    rule: str
    advice: str
    since: str
    today: str


def obsolete_advice(rules_dir: str | None = None) -> list[ObsoleteAdvice]:
    """The rule book's obsolete advice, for the proposal's "why not" section."""
    _require("advisor.engine.rulebook", "the rule book")
    found = []
    for rule in _rulebook(rules_dir).of_kind("obsolete"):
        if rule.obsolete is not None:
            found.append(ObsoleteAdvice(rule.id, ", ".join(rule.obsolete.matches),
                                        rule.obsolete.since, rule.obsolete.today))
    return found
