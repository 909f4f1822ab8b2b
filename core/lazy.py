"""Packages whose names are imported on first use: `import core.train.config` (the CLI's parser) or
`core.runs.lifecycle` must not pay for torch and transformers, which the package's other modules load."""

from __future__ import annotations

import importlib
from collections.abc import Callable


def exports(package: str, table: dict[str, str]) -> Callable[[str], object]:
    """The package's `__getattr__`: each name in `table` (name → the module that defines it) is imported from
    its module when first read; a name mapped to its own submodule (`"charts": "core.compare.charts"`) is that
    module."""
    def getattr_(name: str) -> object:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(table[name])
        return module if table[name] == f"{package}.{name}" else getattr(module, name)
    return getattr_
