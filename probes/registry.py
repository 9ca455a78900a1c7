"""The probe registry: each probe is one decorated constructor (METHODS.md §3).

A probe is fitted on standardised training features and returns a predictor that maps
features to probabilities: (n, K) rows summing to one for multiclass/ordinal tasks,
(n, L) per-label probabilities of 1 for multilabel tasks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from crsbench.core import Registry
from crsbench.ingest.types import Task

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
    # True when fitting only prepares the training rows (k-NN): the sweep then fits again at
    # each evaluation and drops the fit, so a chunk never holds every subset's copy at once.
    deferred: bool = False


def _entry(name: str, fit: FitFn, *, seeded: bool, description: str, deferred: bool = False) -> ProbeEntry:
    return ProbeEntry(name=name, fit=fit, seeded=seeded, description=description, deferred=deferred)


# crsbench.probes.estimators registers logreg, mlp and knn on first lookup.
PROBES: Registry[ProbeEntry] = Registry(
    "probe", make=_entry, builtins=("crsbench.probes.estimators",), entry_point_group="crsbench.probes"
)


def register_probe(name: str, *, seeded: bool, description: str, deferred: bool = False) -> Callable[[FitFn], FitFn]:
    """Decorator: `fit` becomes probe `name`."""
    return PROBES.register(name, seeded=seeded, description=description, deferred=deferred)


def get_probe(name: str) -> ProbeEntry:
    return PROBES.get(name)


def probe_names() -> tuple[str, ...]:
    return tuple(PROBES.names())
