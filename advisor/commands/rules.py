"""`xfs-advisor rules`: the rule book, as a table, JSON, or the generated Markdown reference."""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("rules", parents=[common], help="list the rules the advisor applies")
    p.add_argument("--rules", metavar="DIR", default=None,
                   help="extra rules: files here add rules or replace built-in ones by id")
    p.add_argument("--markdown", action="store_true",
                   help="print the rule reference (rules/RULES.md) generated from the files")


def run(args: argparse.Namespace) -> int:
    from advisor.console import out
    from advisor.engine.docs import rules_markdown
    from advisor.engine.rulebook import load_rulebook

    book = load_rulebook(args.rules)
    if args.markdown:
        out(rules_markdown(book))
    elif getattr(args, "json", False):
        print(json.dumps([r.model_dump(mode="json") for r in book.all()], indent=2))
    else:
        rules = book.all()
        width = max(len(r.id) for r in rules)
        for r in rules:
            what = r.setting or ("never emitted" if r.kind == "obsolete" else "")
            out(f"{r.id:<{width}}  {r.kind:<8}  {what:<22}  {r.source:<28}  {r.title}\n")
    return 0
