"""`xfs-advisor explain ID`: one rule in full; for obsolete advice (`explain nobarrier`), why;
for an option's text (`explain "-l size=128m"`, `explain logbsize=256k`, `explain agcount`),
the rules that decide it."""

from __future__ import annotations

import argparse
import json
from typing import Any

from advisor.errors import BadInput


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("explain", parents=[common],
                       help="explain a rule, or why a piece of old advice is obsolete")
    p.add_argument("id", metavar="ID", help="a rule id (see `xfs-advisor rules`) or an obsolete "
                   "option such as nobarrier or crc=0")
    p.add_argument("--rules", metavar="DIR", default=None,
                   help="extra rules: files here add rules or replace built-in ones by id")


def run(args: argparse.Namespace) -> int:
    from advisor.engine.rulebook import load_rulebook
    from advisor.render.explain import rule_text

    book = load_rulebook(args.rules)
    wanted = args.id.strip()
    rule = book.get(wanted)
    if rule is None:
        for candidate in book.of_kind("obsolete"):
            assert candidate.obsolete is not None
            if wanted in candidate.obsolete.matches:
                rule = candidate
                break
    rules = [rule] if rule is not None else book.for_option(wanted)
    if not rules:
        ids = ", ".join(r.id for r in book.all())
        raise BadInput(f"unknown rule {wanted!r} (known: {ids}; or an option such as "
                       "\"-l size=128m\", logbsize=256k, agcount)")
    if getattr(args, "json", False):
        print(json.dumps([r.model_dump(mode="json") for r in rules] if rule is None
                         else rules[0].model_dump(mode="json"), indent=2))
    else:
        from advisor.console import out

        out("\n".join(rule_text(r) for r in rules))
    return 0
