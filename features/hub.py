"""Calling the model libraries (huggingface_hub, transformers, timm, open_clip) on crsbench's terms.

Within `library_calls()`:
* the Hugging Face Hub is offline (`huggingface_hub.constants.HF_HUB_OFFLINE`, which every one of
  these libraries consults before a request) unless downloads are allowed (`--allow-download`,
  `CRSBENCH_ALLOW_DOWNLOAD=1`; see `features.weights`), so nothing opens a socket unasked;
* the libraries' own output (transformers' load reports and progress bars, timm's and
  open_clip's log lines, their Python warnings) is kept, not printed: a refusal is crsbench's
  one line. Warnings crsbench itself raises (`CrsbenchWarning`) still come through, and so do
  the hub's download progress bars when downloads are allowed. `CRSBENCH_DEBUG=1` shows
  everything.
Remote code is never run: every transformers call passes `trust_remote_code=False` (an entry may
say otherwise), so transformers never asks on the terminal either.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from crsbench.features.weights import downloads_allowed

DEBUG_ENV = "CRSBENCH_DEBUG"
LIBRARY_LOGGERS = ("transformers", "timm", "open_clip", "huggingface_hub", "safetensors", "torch.hub")


class CrsbenchWarning(UserWarning):
    """A warning of crsbench's own (shown as one line by the CLI, never swallowed)."""


# The stderr in force when the innermost capture began: where crsbench's own lines go meanwhile.
_terminal: list[TextIO] = []


def say(line: str) -> None:
    """Print one line of crsbench's own to stderr, also from inside `library_calls()`."""
    print(line, file=_terminal[-1] if _terminal else sys.stderr)


def debugging() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip() not in ("", "0")


@contextmanager
def library_calls() -> Iterator[None]:
    """Offline unless downloads are allowed; the libraries' output captured unless debugging."""
    from huggingface_hub import constants

    saved = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = not downloads_allowed()
    try:
        if debugging():
            yield
        else:
            with _captured(downloads=not constants.HF_HUB_OFFLINE):
                yield
    finally:
        constants.HF_HUB_OFFLINE = saved


@contextmanager
def _captured(downloads: bool = False) -> Iterator[None]:
    """Log records, warnings and prints kept from the terminal; with `downloads`, the hub's
    download progress bars still show (a multi-gigabyte fetch should say how far it is)."""
    loggers = [logging.getLogger(name) for name in LIBRARY_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    restore_bars = _progress_bars_off(keep_hub=downloads)
    sink = io.StringIO()
    streams = (
        contextlib.nullcontext() if downloads else contextlib.redirect_stdout(sink),
        contextlib.nullcontext() if downloads else contextlib.redirect_stderr(sink),
    )
    _terminal.append(sys.stderr)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with streams[0], streams[1]:
                yield
    finally:
        _terminal.pop()
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
            # A library imported inside the block bound its log handler to the sink: rebind it.
            for handler in logger.handlers:
                if isinstance(handler, logging.StreamHandler) and handler.stream is sink:
                    handler.setStream(sys.stderr)
        restore_bars()
    for w in caught:
        if issubclass(w.category, CrsbenchWarning):
            warnings.warn(w.message, w.category, stacklevel=3)


def _progress_bars_off(keep_hub: bool = False) -> Callable[[], None]:
    """Turn the hub's (unless `keep_hub`) and transformers' progress bars off; returns what turns
    them back on."""
    undo: list[Callable[[], None]] = []
    # huggingface_hub.utils imports these from its `tqdm` module without listing them in __all__.
    from huggingface_hub.utils import (  # type: ignore[attr-defined]
        are_progress_bars_disabled,
        disable_progress_bars,
        enable_progress_bars,
    )

    if not keep_hub and not are_progress_bars_disabled():
        disable_progress_bars()
        undo.append(enable_progress_bars)
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        if hf_logging.is_progress_bar_enabled():
            hf_logging.disable_progress_bar()
            undo.append(hf_logging.enable_progress_bar)

    def restore() -> None:
        for fn in undo:
            fn()

    return restore
