"""`xfs-advisor propose` (also the default with --json/--device/--workload): an explained, checked
mkfs.xfs command and fstab line for one device and one workload."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from advisor.errors import BadInput


def add_options(p: argparse.ArgumentParser, *, suppress: bool = False,
                answers: bool = True) -> None:
    """Options of the proposal, valid with and without the `propose` subcommand. Under the
    subcommand their defaults are suppressed, so values given before it survive. Without
    `answers`, no flag per answer: those are made from the workload model (advisor.answers), and
    so need pydantic, which a command line naming none of them can do without."""
    default = argparse.SUPPRESS if suppress else None
    p.add_argument("--device", metavar="DEV", default=default,
                   help="the device to format (name or /dev path); with --device-file, which "
                   "device of that file")
    p.add_argument("--workload", metavar="FILE", default=default,
                   help="workload answers (TOML or JSON)")
    p.add_argument("--device-file", metavar="FILE", default=default,
                   help="device facts as JSON instead of inspecting this machine: what "
                   "`devices --json` or `devices DEV --json` prints (with --device naming the "
                   "device in it), or one of its devices")
    p.add_argument("--rules", metavar="DIR", default=default,
                   help="extra rules: files here add rules or replace built-in ones by id")
    if answers:
        from advisor.answers import add_workload_flags

        add_workload_flags(p, suppress=suppress)


def add_output_options(p: argparse.ArgumentParser, *, suppress: bool = False) -> None:
    """How the proposal is printed (not for the interactive advisor, which shows it on F4)."""
    p.add_argument("--brief", action="store_true",
                   default=argparse.SUPPRESS if suppress else False,
                   help="for people: the command, the fstab line, the warnings and the changes; "
                   "the settings kept at the default by name only")
    p.add_argument("--timings", action="store_true",
                   default=argparse.SUPPRESS if suppress else False,
                   help="with --json: add how long each phase took (extra.timings_ms), which "
                   "differs from run to run")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("propose", parents=[common],
                       help="propose mkfs.xfs options and an fstab line for a device")
    add_options(p, suppress=True)
    add_output_options(p, suppress=True)


def _load_device_file(path: str, name: str | None) -> Any:
    """The device described by FILE: one Device, or the inventory `devices --json` prints (all
    devices, or `devices DEV --json`'s one device and what is stacked on it), from which `name`
    (--device) picks one. Without `name` an inventory must describe one device tree."""
    import json

    from pydantic import ValidationError

    from advisor.models.device import Device, Inventory
    from advisor.system.files import read_text

    text = read_text(path, "device file")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as err:
        raise BadInput(f"{path}: not a JSON device file: {err}") from None
    model: type[Device] | type[Inventory]
    model = Inventory if isinstance(data, dict) and "devices" in data else Device
    try:
        parsed = model.model_validate_json(text)
    except ValidationError as err:
        e = err.errors()[0]
        key = ".".join(str(x) for x in e["loc"]) or "(top level)"
        raise BadInput(f"{path}: {key}: {e['msg']}") from None
    device = parsed if isinstance(parsed, Device) else _one_device(parsed, name, path)
    _check_numbers(device.model_dump(), path)
    return device


def _one_device(inv: Any, name: str | None, path: str) -> Any:
    names = ", ".join(d.display_name for d in inv.devices[:12]) + (
        ", ..." if len(inv.devices) > 12 else "")
    if name:
        device = inv.get(name)
        if device is None:
            raise BadInput(f"{path}: no device '{name}' in this inventory (it lists: "
                           f"{names or 'none'})")
        return device
    if not inv.devices:
        raise BadInput(f"{path}: the inventory lists no device")
    top = inv.devices[0]
    below = {d.name for d in inv.stacked(top, "children")}
    if all(d.name in below for d in inv.devices[1:]):
        return top
    raise BadInput(f"{path} lists {len(inv.devices)} devices ({names}): name one with --device, "
                   "or write one with `xfs-advisor devices DEV --json`")


def _check_numbers(value: Any, path: str, key: str = "") -> None:
    """Every number in a device file is a byte count or a count: beyond 8 EiB (or negative) it
    is a mistake that would overflow the C integers of truncate() and mkfs.xfs."""
    from advisor.models.units import MAX_BYTES

    if isinstance(value, dict):
        for k, v in value.items():
            _check_numbers(v, path, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_numbers(v, path, f"{key}.{i}")
    elif isinstance(value, int | float) and not isinstance(value, bool) \
            and not 0 <= value <= MAX_BYTES:
        raise BadInput(f"{path}: {key}: {value:g} is out of range (0 to 8EiB)")


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    from advisor.answers import workload_from_args
    from advisor.models.proposal import ProposalDocument
    from advisor.session import Session

    imported = time.perf_counter()
    workload = workload_from_args(args)
    session = Session(sysroot=getattr(args, "sysroot", None),
                      rules_dir=getattr(args, "rules", None))
    device_file = getattr(args, "device_file", None)
    device_name = getattr(args, "device", None)
    if device_name == "" or device_file == "":
        raise BadInput("--device (or --device-file) is empty: name a device")
    if device_file:
        device = _load_device_file(device_file, device_name)
    elif device_name:
        device = session.device(device_name)
    else:
        raise BadInput("which device? give --device DEV (or --device-file FILE)")
    inspected = time.perf_counter()
    phases: dict[str, float] = {}
    # The environment is read inside: after the dry run of the defaults is started, so that
    # `mkfs.xfs -V` runs beside it.
    proposal = session.propose(device, workload, timings=phases, of_this_host=not device_file)
    env = session.environment
    done = time.perf_counter()
    timings = {"imports": imported - started, "inspection": inspected - imported,
               "environment": done - inspected - sum(phases.values()), **phases,
               "total": done - started}
    # Run-specific figures only when asked: two proposals for the same input are then equal.
    extra = ({"timings_ms": {k: round(v * 1000, 1) for k, v in timings.items()}}
             if getattr(args, "timings", False) else {})
    doc = ProposalDocument(device=device, workload=workload, environment=env, proposal=proposal,
                           extra=extra)
    if getattr(args, "json", False):
        print(json.dumps(doc.model_dump(mode="json"), indent=2))
    else:
        from advisor.console import out
        from advisor.render.explain import proposal_text

        out(proposal_text(doc, brief=bool(getattr(args, "brief", False))))
    return 0
