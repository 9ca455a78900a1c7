"""crsbench: feature store and analysis warehouse for choosing medical image encoders.

The library API is `crsbench.Bench` (see docs/API.md); the command line is a thin layer over it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from crsbench.core import __version__

__all__ = [
    "AdaptConfig",
    "Bench",
    "ExtractConfig",
    "ExtractOptions",
    "IngestConfig",
    "ProbeConfig",
    "Warehouse",
    "__version__",
]

if TYPE_CHECKING:
    from crsbench.bench import AdaptConfig, Bench, ExtractConfig, ExtractOptions, IngestConfig, ProbeConfig
    from crsbench.warehouse.connection import Warehouse

# Lazy, so `import crsbench` stays cheap (no duckdb/pandas) for the CLI and the stages.
_LAZY = {
    "Warehouse": "crsbench.warehouse.connection",
    "Bench": "crsbench.bench",
    "AdaptConfig": "crsbench.bench",
    "ExtractConfig": "crsbench.bench",
    "ExtractOptions": "crsbench.bench",
    "IngestConfig": "crsbench.bench",
    "ProbeConfig": "crsbench.bench",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'crsbench' has no attribute {name!r}")
