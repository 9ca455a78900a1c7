"""Shared pieces of the contract suite (tests/contract): every registry entry meets its kind's checks.

As scikit-learn's `check_estimator`, the checks are parametrised over `registry.names()` at
collection time, so a new entry (a built-in module, a plugin) is checked with no test edit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from crsbench.core import CrsbenchError, Registry

# The tiny data every check uses: 40 samples, 8 features, 3 classes (each class present).
N, D, K = 40, 8, 3


def names(registry: Registry, keep: Callable[[Any], bool] = lambda entry: True) -> list[str]:
    """The entries to parametrise over, read when the module is collected."""
    return [name for name, entry in registry.items() if keep(entry)]


@contextmanager
def refused_naming(*values: object) -> Iterator[None]:
    """The block raises crsbench's own error (not a bare numpy/torch one) whose message names
    every one of `values` (the offending value, shape or dtype)."""
    with pytest.raises(CrsbenchError) as caught:
        yield
    message = str(caught.value)
    for value in values:
        assert re.search(re.escape(str(value)), message), f"{message!r} does not name {value!r}"


def features(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(N, D))


def labels() -> np.ndarray:
    """Class indices 0, 1, 2, 0, 1, 2, ...: every class present."""
    return np.arange(N) % K


def multilabel(seed: int = 0) -> np.ndarray:
    """(N, K) 0/1 with both outcomes in every column."""
    y = (np.random.default_rng(seed).random((N, K)) < 0.5).astype(np.int64)
    y[0], y[1] = 0, 1
    return y


def probabilities(seed: int = 0) -> np.ndarray:
    """(N, K) rows on the simplex, strictly inside (0, 1)."""
    return np.random.default_rng(seed).dirichlet(np.ones(K), size=N)


def with_value(a: np.ndarray, row: int, col: int | None, value: object) -> np.ndarray:
    out = np.array(a, dtype=np.float64 if isinstance(value, float) else a.dtype, copy=True)
    out[(row, col) if col is not None else row] = value
    return out
