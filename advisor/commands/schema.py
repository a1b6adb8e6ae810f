"""`xfs-advisor schema [NAME]`: the JSON Schemas of the contracts: the workload answers and a rule
file (what the advisor reads) and every `--json` document it prints."""

from __future__ import annotations

import argparse
import json
from typing import Any

SCHEMAS = ("workload", "rule", "output", "audit", "fleet", "devices", "profile", "capture",
           "observe", "validate")
#: The schemas of what the advisor reads (validation mode); the others describe what it prints.
_INPUTS = ("workload", "rule")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("schema", parents=[common],
                       help="print the JSON Schema of the workload answers, a rule file, or a "
                       "--json output: output (a proposal), audit, fleet, devices, profile, "
                       "capture, observe, validate")
    p.add_argument("name", nargs="?", choices=SCHEMAS, metavar="NAME",
                   help=f"which schema: {', '.join(SCHEMAS)} (default: all of them, keyed by "
                   "name)")


def schema_of(name: str) -> dict[str, Any]:
    from pydantic import BaseModel

    from advisor.models.audit import AuditDocument
    from advisor.models.bench import ValidationReport
    from advisor.models.capture import CaptureDocument
    from advisor.models.device import Inventory
    from advisor.models.fleet import FleetDocument
    from advisor.models.observe import ObserveDocument
    from advisor.models.profile import Profile
    from advisor.models.proposal import ProposalDocument
    from advisor.models.rule import Rule
    from advisor.models.workload import Workload

    models: dict[str, type[BaseModel]] = {"workload": Workload, "rule": Rule,
                                          "output": ProposalDocument, "audit": AuditDocument,
                                          "fleet": FleetDocument, "devices": Inventory,
                                          "profile": Profile, "capture": CaptureDocument,
                                          "observe": ObserveDocument, "validate": ValidationReport}
    schema: dict[str, Any] = models[name].model_json_schema(
        mode="validation" if name in _INPUTS else "serialization")
    return schema


def schema_text(name: str) -> str:
    """The schema as the committed copy holds it (advisor/data/schemas/NAME.json)."""
    return json.dumps(schema_of(name), indent=2, sort_keys=True) + "\n"


def run(args: argparse.Namespace) -> int:
    if args.name:
        print(schema_text(args.name), end="")
    else:
        print(json.dumps({n: schema_of(n) for n in SCHEMAS}, indent=2, sort_keys=True))
    return 0
