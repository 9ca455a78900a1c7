"""The probe registry: each probe is one decorated constructor (METHODS.md §3).

A probe is fitted on standardised training features and returns a predictor that maps
features to probabilities: (n, K) rows summing to one for multiclass/ordinal tasks,
(n, L) per-label probabilities of 1 for multilabel tasks.
"""

from __future__ import annotations

import dataclasses
import pkgutil
from collections.abc import Callable
from pathlib import Path

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
    # True for zero-shot classification (`probes.kinds.zeroshot`): no training rows, label fraction 0,
    # predictions from the text embeddings; never part of a dataset's declared grid.
    zero_shot: bool = False


def _entry(
    name: str, fit: FitFn, *, seeded: bool, description: str, deferred: bool = False, zero_shot: bool = False
) -> ProbeEntry:
    return ProbeEntry(
        name=name, fit=fit, seeded=seeded, description=description, deferred=deferred, zero_shot=zero_shot
    )


# The built-in kinds: every module of crsbench.probes.kinds (in name order), imported on first lookup.
KINDS_PACKAGE = "crsbench.probes.kinds"
PROBES: Registry[ProbeEntry] = Registry(
    "probe",
    make=_entry,
    builtins=tuple(f"{KINDS_PACKAGE}.{m.name}" for m in pkgutil.iter_modules([str(Path(__file__).parent / "kinds")])),
    entry_point_group="crsbench.probes",
)


def register_probe(
    name: str, *, seeded: bool, description: str, deferred: bool = False, zero_shot: bool = False
) -> Callable[[FitFn], FitFn]:
    """Decorator: `fit` becomes probe `name`."""
    return PROBES.register(name, seeded=seeded, description=description, deferred=deferred, zero_shot=zero_shot)


def get_probe(name: str) -> ProbeEntry:
    return PROBES.get(name)


def probe_names() -> tuple[str, ...]:
    """The trained probes (the grid's defaults); zero-shot is run on its own (`crsbench zeroshot`)."""
    return tuple(n for n in PROBES.names() if not PROBES.get(n).zero_shot)
