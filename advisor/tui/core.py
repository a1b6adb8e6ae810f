"""The TUI's doors into the core: reading devices, proposing, validating. The TUI decides nothing
itself; these functions only call the core and say plainly when a part of it is not installed."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from advisor.errors import AdvisorError
from advisor.models.device import Device, Inventory
from advisor.models.workload import Workload
from advisor.system.sysroot import SysRoot

if TYPE_CHECKING:
    from advisor.bench.resources import Recovery
    from advisor.bench.run import Plan
    from advisor.engine.rulebook import RuleBook
    from advisor.models.bench import SideConfig, ValidationReport
    from advisor.models.environment import Environment
    from advisor.models.profile import Profile
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
    _require("advisor.advice", "the proposal engine")
    from advisor.advice import propose as engine_propose

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


# ---- validation: an A/B run of advisor.bench, cancellable from the screen ----

class Cancelled(AdvisorError):
    """The person cancelled the validation run (everything it made was removed)."""

    kind = "cancelled"


def recover_leftovers(*, loop: bool) -> Recovery:
    """What dead runs left, removed first, before the guard looks at a device (a killed run's
    own mount would make it refuse), as `xfs-advisor validate` does: after the host check, so
    that without root the message is that, not the state folder's owner."""
    _require("advisor.bench.run", "the A/B validation")
    from advisor.bench.resources import recover_leftovers as recover
    from advisor.bench.run import check_host

    check_host(need_loop=loop)
    return recover()


def scratch_refusals(inventory: Inventory, device: Device,
                     left: dict[str, str] | None = None) -> list[str]:
    """The scratch-device guard's reasons not to format `device` (empty: it may be used).
    `left`: test filesystems dead runs left (Recovery.test_filesystems), not counted as data."""
    _require("advisor.bench.guard", "the scratch-device guard")
    from advisor.bench.guard import refusals
    from advisor.bench.resources import without_test_filesystem
    from advisor.bench.run import MIN_DEVICE_BYTES

    return refusals(inventory, without_test_filesystem(device, left or {}), MIN_DEVICE_BYTES)


def proposal_side(proposal: Proposal) -> SideConfig:
    """Side B of the A/B run: the proposal's mkfs and mount options."""
    from advisor.models.bench import SideConfig

    return SideConfig(label="B", mkfs_options=list(proposal.mkfs_options),
                      mount_options=list(proposal.mount_options), source="proposal")


def validation_plan(workload: Workload, target: Device | None, b: Proposal | None,
                    device_bytes: int | None = None, budget_seconds: float | None = None) -> Plan:
    """A (defaults) against B, on the scratch device `target` (B: its proposal `b`), or on a
    loop device (target None), where B is the proposal for the loop device itself, made once it
    exists (see loop_side), as `xfs-advisor validate` does."""
    _require("advisor.bench.run", "the A/B validation")
    from advisor.bench.run import DEFAULT_BUDGET, DEFAULT_LOOP_SIZE
    from advisor.bench.run import Plan as BenchPlan
    from advisor.models.bench import SideConfig

    side_b = proposal_side(b) if b is not None else SideConfig(label="B", source="proposal")
    size = device_bytes or DEFAULT_LOOP_SIZE
    if target is not None and target.size_bytes.value:
        size = target.size_bytes.value
    return BenchPlan(a=SideConfig(label="A"), b=side_b, workload=workload,
                     device=target.path if target else None, device_bytes=size,
                     budget_seconds=budget_seconds or DEFAULT_BUDGET)


def loop_side(workload: Workload, rules_dir: str | None) -> Callable[[str], SideConfig]:
    """For a loop run: B decided from the loop device's own facts, once it is attached."""

    def resolve(path: str) -> SideConfig:
        from advisor.inspect.devices import find_device, inspect_devices

        device = find_device(inspect_devices(SysRoot(), probe=False), path)
        return proposal_side(propose(device, workload, None, rules_dir))

    return resolve


def _stop_running_fio() -> None:
    """End the fio runs this process started, so a cancel need not wait for the round to end;
    the run then fails, and its own clean-up unmounts and detaches."""
    proc = SysRoot()
    me = str(os.getpid())
    for pid in proc.listdir("proc"):
        if not pid.isdigit():
            continue
        stat = proc.read(f"proc/{pid}/stat") or ""
        # Fields after the command name (which may hold spaces): state, ppid, ...
        name, _, rest = stat.partition(" (")[2].rpartition(") ")
        fields = rest.split()
        if name == "fio" and len(fields) > 1 and fields[1] == me:
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)  # the runner takes SIGKILL as an exit


def run_validation(plan: Plan, progress: Callable[[int, int, str], None],
                   cancel: threading.Event,
                   resolve_b: Callable[[str], SideConfig] | None = None,
                   on_sample: Callable[[str, int, dict[str, float]], None] | None = None,
                   recovered: Recovery | None = None) -> ValidationReport:
    """Run the plan (in a worker thread). Setting `cancel` stops it at the next step, or at
    once by ending fio; what the run made is removed either way, then Cancelled is raised.
    `on_sample(side, round_index, values)` gets each side's values as they are measured;
    `recovered`: what recover_leftovers() found before the guard."""
    _require("advisor.bench.run", "the A/B validation")
    from advisor.bench.calibration import CalibrationStore
    from advisor.bench.run import execute

    def step(done: int, total: int, what: str) -> None:
        if cancel.is_set():
            raise Cancelled("validation cancelled")
        progress(done, total, what)

    def watch() -> None:
        cancel.wait()
        if not finished.is_set():
            _stop_running_fio()

    said: list[str] = []
    finished = threading.Event()
    threading.Thread(target=watch, name="cancel-watch", daemon=True).start()
    try:
        # The same calibration store as `xfs-advisor validate`: its noise floors set the margins.
        return execute(plan, progress=step, store=CalibrationStore(), resolve_b=resolve_b,
                       on_sample=on_sample, recovered=recovered, say=said.append)
    except AdvisorError:
        if cancel.is_set():
            # What clean-up said: only what it could not remove (the next run will).
            raise Cancelled("validation cancelled; " + ("; ".join(said) or
                            "everything it made was removed")) from None
        raise
    finally:
        finished.set()
        cancel.set()  # lets the watcher end


def profile_tree(path: str, progress: Callable[[int, float], None] | None = None) -> Profile:
    """Measure a directory tree as `xfs-advisor profile` does (answers it can support)."""
    _require("advisor.profile.walker", "the directory scan")
    from advisor.profile.walker import Walker

    return Walker(progress=progress).walk(path)
