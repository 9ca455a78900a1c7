"""`ProgressFn`: how a stage reports progress, and the callback that reports nothing."""

from __future__ import annotations

from collections.abc import Callable

# A stage reports progress through this callback: (step description, done, total or None).
# The CLI turns it into rich progress bars; library callers may pass None.
ProgressFn = Callable[[str, int, int | None], None]


def no_progress(description: str, done: int, total: int | None) -> None:
    """The progress callback that reports nothing."""
