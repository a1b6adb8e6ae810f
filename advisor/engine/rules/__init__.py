"""One module per rule function, named after the rule id (`dir-block-size` -> `dir_block_size`).

Importing this package imports every module in it, and each registers its decider in
advisor.engine.registry. There is no list to keep: a new module is found by its presence."""

from __future__ import annotations

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
