"""Contract of every transferability estimator (crsbench.probes.screening.registry.ESTIMATORS): complete
metadata, a finite float on a small well-posed problem, the same value twice, and the same value
for reordered rows where the entry says that holds."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.probes.screening.registry import ESTIMATORS, Estimator
from crsbench.probes.screening.score import score_cell
from tests.contract.support import K, N, features, labels, names


def _problem() -> tuple[np.ndarray, np.ndarray]:
    x = features() + 0.8 * np.eye(K)[labels()] @ np.random.default_rng(1).normal(size=(K, 8))
    return (x - x.mean(axis=0)) / x.std(axis=0), labels()


@pytest.mark.parametrize("name", ESTIMATORS.names())
def test_metadata_is_complete(name):
    entry = ESTIMATORS.get(name)
    assert isinstance(entry, Estimator) and entry.name == name
    assert isinstance(entry.description, str) and len(entry.description.split()) >= 3
    assert isinstance(entry.row_order_invariant, bool) and callable(entry.fn)


@pytest.mark.parametrize("name", ESTIMATORS.names())
def test_a_well_posed_problem_gives_one_finite_float_twice(name):
    x, y = _problem()
    first, second = ESTIMATORS.get(name).fn(x, y, K), ESTIMATORS.get(name).fn(x.copy(), y.copy(), K)
    assert isinstance(first, float) and np.isfinite(first)
    assert first == second
    in_cell = score_cell(x, y, "multiclass", K, [name])
    # Inside a cell the centred Gram is the sum of the class Grams (METHODS.md §21.1): the same float64
    # sums in another order, so the value agrees to rounding, not bit for bit.
    assert list(in_cell) == [name] and in_cell[name] == pytest.approx(first, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("name", names(ESTIMATORS, lambda e: e.row_order_invariant))
def test_reordering_the_rows_keeps_the_score(name):
    x, y = _problem()
    order = np.random.default_rng(2).permutation(N)
    assert ESTIMATORS.get(name).fn(x[order], y[order], K) == pytest.approx(ESTIMATORS.get(name).fn(x, y, K), rel=1e-9)
