"""crsbench: feature store and analysis warehouse for choosing medical image encoders."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Warehouse", "__version__"]

if TYPE_CHECKING:
    from crsbench.warehouse.connection import Warehouse


def __getattr__(name: str) -> Any:
    # Lazy, so `import crsbench` stays cheap (no duckdb/pandas) for the CLI and the stages.
    if name == "Warehouse":
        from crsbench.warehouse.connection import Warehouse

        return Warehouse
    raise AttributeError(f"module 'crsbench' has no attribute {name!r}")
