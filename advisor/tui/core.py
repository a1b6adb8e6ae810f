"""The TUI's doors into the core: reading devices, proposing, validating. The TUI decides nothing
itself; these functions only call the core and say plainly when a part of it is not installed."""

from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Any

from advisor.errors import AdvisorError
from advisor.models.device import Device, Inventory
from advisor.models.workload import Workload
from advisor.system.sysroot import SysRoot


class MissingPart(AdvisorError):
    """A part of the core this screen needs is not in this build."""

    kind = "missing"


def read_inventory(sysroot: str | None) -> Inventory:
    """Every block device of the live system or of a captured tree."""
    if importlib.util.find_spec("advisor.inspect.devices") is None:
        raise MissingPart("device inspection (advisor.inspect.devices) is not in this build")
    from advisor.inspect.devices import inspect_devices

    root = SysRoot.open(sysroot)
    return inspect_devices(root, probe=root.live and os.geteuid() == 0)


def is_live(sysroot: str | None) -> bool:
    """True when the TUI reads the running system (hotplug can then be followed)."""
    return SysRoot.open(sysroot).live


def propose(device: Device, workload: Workload) -> dict[str, Any]:
    """The proposal for the device and answers, in the shape of `--json`'s `proposal` (a
    contract: the TUI shows exactly what the JSON says)."""
    if importlib.util.find_spec("advisor.engine") is None or not hasattr(
        importlib.import_module("advisor.engine"), "propose"
    ):
        raise MissingPart("the proposal engine (advisor.engine.propose) is not in this build")
    from advisor.engine import propose as engine_propose  # type: ignore[attr-defined,unused-ignore]

    proposal = engine_propose(device, workload)
    data: dict[str, Any] = proposal.model_dump(mode="json")
    return data
