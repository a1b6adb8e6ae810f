#!/usr/bin/env python3
"""Write advisor/data/parsed-rules.json: the built-in rule files as parsed, each beside the
SHA-256 of its text, so that loading the rule book parses only files changed since (see
advisor/engine/rulebook.py). Run it after changing a file in rules/; a test fails until then.

    .venv/bin/python scripts/write_parsed_rules.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.engine.rulebook import PARSED_RULES, parsed_rules_text


def main() -> None:
    PARSED_RULES.write_text(parsed_rules_text(), encoding="utf-8")
    print(f"wrote {PARSED_RULES}")


if __name__ == "__main__":
    main()
