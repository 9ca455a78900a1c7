"""Imported by a benchmark before numpy and torch: `crsbench.core` sets canonical numerics
(docs/METHODS.md §4.3) as every crsbench entry point does, so a benchmark measures the library
modes crsbench runs with (`import _canonical` sorts before the third-party imports)."""

from __future__ import annotations

import crsbench.core  # noqa: F401
