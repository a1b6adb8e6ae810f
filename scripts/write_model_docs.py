#!/usr/bin/env python3
"""Write advisor/data/model-docs.json: the attribute docstrings of every class in the package's
files, each file's beside the SHA-256 of its text, so that a start does not parse the models'
sources (see advisor/models/base.py). Run it after changing a file under advisor/ that defines a
class with documented attributes; a test fails until then.

    .venv/bin/python scripts/write_model_docs.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.models.base import MODEL_DOCS, model_docs_text


def main() -> None:
    Path(MODEL_DOCS).write_text(model_docs_text(), encoding="utf-8")
    print(f"wrote {MODEL_DOCS}")


if __name__ == "__main__":
    main()
