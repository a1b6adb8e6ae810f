"""What a command writes for its user: its result on stdout (`out`) and a line that is not an
error on stderr (`notice`), both escaped for a terminal, or JSON under `--json`.
"""

from __future__ import annotations

import json
import sys

from advisor import SCHEMA_VERSION
from advisor.render.inert import json_text, terminal, terminal_lines


def out(text: str, *, as_json: bool = False) -> None:
    """Write a command's result to stdout: a page for people with every untrusted character
    escaped (advisor.render.inert), or a JSON document with hidden characters as `\\u` escapes."""
    sys.stdout.write(json_text(text) if as_json else terminal_lines(text))


def notice(message: str, as_json: bool) -> None:
    """A line for people on stderr that is not an error (what a recovery removed, which file was
    written): under --json a JSON document of its own, so that stderr stays machine-readable."""
    if as_json:
        doc = {"schema_version": SCHEMA_VERSION, "notice": {"message": message}}
        print(json.dumps(doc), file=sys.stderr, flush=True)
    else:
        print(f"xfs-advisor: {terminal(message)}", file=sys.stderr, flush=True)
