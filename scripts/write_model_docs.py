#!/usr/bin/env python3
"""Write advisor/data/model-docs.json: the attribute docstrings of every class in the package files
that define a model, each file's beside the SHA-256 of its text, so that a start does not parse
the models' sources (see advisor/models/base.py). Run it after changing such a file; a test
fails until then.

    .venv/bin/python scripts/write_model_docs.py
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import advisor
from advisor.models.base import MODEL_DOCS, Documented, model_docs_text


def model_files() -> list[str]:
    """The files of the package (the TUI's aside: it defines no model, and would load Textual)
    that define a model taking its descriptions from docstrings."""
    for info in pkgutil.walk_packages(advisor.__path__, "advisor."):
        if not info.name.startswith("advisor.tui"):
            importlib.import_module(info.name)
    files: set[str] = set()
    stack = list(Documented.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        filename = getattr(sys.modules.get(cls.__module__), "__file__", None)
        if filename and cls.__module__.startswith("advisor."):
            files.add(filename)
    return sorted(files)


def main() -> None:
    Path(MODEL_DOCS).write_text(model_docs_text(model_files()), encoding="utf-8")
    print(f"wrote {MODEL_DOCS}")


if __name__ == "__main__":
    main()
