"""One module per rule function, named after the rule id (`dir-block-size` -> `dir_block_size`).

Importing this package imports every module in it, and each registers its decider in
advisor.engine.registry. There is no list to keep: a new module is found by its presence."""

from __future__ import annotations

import importlib
from pathlib import Path

# The folder's .py files in name order, as pkgutil.iter_modules gives them (importing pkgutil
# and its walk cost a proposal's start more than the listing).
for _file in sorted(p.name for p in Path(__file__).parent.iterdir()):
    if _file.endswith(".py") and _file != "__init__.py":
        importlib.import_module(f"{__name__}.{_file[:-3]}")
