"""`xfs-advisor schema [NAME]`: the JSON Schemas of the contracts (workload, rule, output,
audit, fleet, observe, validate)."""

from __future__ import annotations

import argparse
import json
from typing import Any

SCHEMAS = ("workload", "rule", "output", "audit", "fleet", "observe", "validate")
#: Documents the tool writes (serialization schemas); the others are read (validation).
WRITTEN = ("output", "audit", "fleet", "observe", "validate")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("schema", parents=[common],
                       help="print the JSON Schema of the workload answers, a rule file, the "
                       "--json output, or the --json of audit, fleet, observe or validate")
    p.add_argument("name", nargs="?", choices=SCHEMAS,
                   help="which schema (default: all of them, keyed by name)")


def schema_of(name: str) -> dict[str, Any]:
    from pydantic import BaseModel

    from advisor.audit.models import AuditDocument
    from advisor.models.bench import ValidationReport
    from advisor.models.fleet import FleetDocument
    from advisor.models.observe import ObserveDocument
    from advisor.models.proposal import ProposalDocument
    from advisor.models.rule import Rule
    from advisor.models.workload import Workload

    models: dict[str, type[BaseModel]] = {"workload": Workload, "rule": Rule,
                                          "output": ProposalDocument, "audit": AuditDocument,
                                          "fleet": FleetDocument, "observe": ObserveDocument,
                                          "validate": ValidationReport}
    schema: dict[str, Any] = models[name].model_json_schema(
        mode="serialization" if name in WRITTEN else "validation")
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
