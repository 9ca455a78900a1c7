"""The transferability-estimator registry (METHODS.md §21.2): each estimator is one decorated function.

An estimator takes `(x, y, n_classes)`: x (n, D) float64 standardised train features, y (n,) int class
indices in [0, n_classes), every class with at least two rows (`score.check_screen_inputs` has said
so), and returns one float, higher = the features promise better transfer. Multilabel tasks reach
it one label at a time, as a two-class problem (`score.score_cell`).
"""

from __future__ import annotations

import dataclasses
import pkgutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

from crsbench.core import Registry

EstimatorFn = Callable[[np.ndarray, np.ndarray, int], float]


@dataclasses.dataclass(frozen=True)
class Estimator:
    name: str
    fn: EstimatorFn
    description: str  # the formula and its constants in one sentence (METHODS.md §21.2 says more)
    # False when reordering the rows may change the score beyond rounding (a fit from a seeded
    # initialisation that depends on row order, as the Gaussian mixture's k-means++ start).
    row_order_invariant: bool = True


def _entry(name: str, fn: EstimatorFn, *, description: str, row_order_invariant: bool = True) -> Estimator:
    return Estimator(name=name, fn=fn, description=description, row_order_invariant=row_order_invariant)


# The built-ins: every module of crsbench.probes.screening.estimators (in name order), imported on first lookup.
ESTIMATORS_PACKAGE = "crsbench.probes.screening.estimators"
ESTIMATORS: Registry[Estimator] = Registry(
    "screen estimator",
    make=_entry,
    builtins=tuple(
        f"{ESTIMATORS_PACKAGE}.{m.name}" for m in pkgutil.iter_modules([str(Path(__file__).parent / "estimators")])
    ),
    entry_point_group="crsbench.screen_estimators",
)


def register_estimator(
    name: str, *, description: str, row_order_invariant: bool = True
) -> Callable[[EstimatorFn], EstimatorFn]:
    """Decorator: `fn(x, y, n_classes) -> float` becomes estimator `name`."""
    return ESTIMATORS.register(name, description=description, row_order_invariant=row_order_invariant)


def get_estimator(name: str) -> Estimator:
    return ESTIMATORS.get(name)


def estimator_names() -> tuple[str, ...]:
    """Every registered estimator, built-ins in module-name order, then plugins."""
    return tuple(ESTIMATORS.names())
