"""The probe registry: each probe is one decorated constructor (METHODS.md §3).

A probe is fitted on standardised training features and returns a predictor that maps
features to probabilities: (n, K) rows summing to one for multiclass/ordinal tasks,
(n, L) per-label probabilities of 1 for multilabel tasks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from crsbench.ingest.types import CrsbenchError, Task

Predictor = Callable[[np.ndarray], np.ndarray]
# (x_train (n, D) float, y_train (n,) int or (n, L) 0/1, task, n_outputs K or L, seed) -> predictor
FitFn = Callable[[np.ndarray, np.ndarray, Task, int, int], Predictor]


@dataclasses.dataclass(frozen=True)
class ProbeEntry:
    name: str
    fit: FitFn
    # False when the fit ignores the seed (a convex optimum, a neighbour vote): fits that
    # share a training set then share one fit (fraction 1.0 is the same for every seed).
    seeded: bool
    description: str


_PROBES: dict[str, ProbeEntry] = {}


def register_probe(name: str, *, seeded: bool, description: str) -> Callable[[FitFn], FitFn]:
    def wrap(fn: FitFn) -> FitFn:
        if name in _PROBES:
            raise ValueError(f"probe {name!r} registered twice")
        _PROBES[name] = ProbeEntry(name=name, fit=fn, seeded=seeded, description=description)
        return fn

    return wrap


def get_probe(name: str) -> ProbeEntry:
    _load_builtin()
    try:
        return _PROBES[name]
    except KeyError:
        known = ", ".join(sorted(_PROBES))
        raise CrsbenchError(f"unknown probe {name!r}; expected one of: {known}") from None


def probe_names() -> tuple[str, ...]:
    _load_builtin()
    return tuple(_PROBES)


def _load_builtin() -> None:
    from crsbench.probes import estimators  # noqa: F401  (registers logreg, mlp, knn)
