"""The work the estimators share inside one cell (probes.screening.shared), against direct numpy:
per-class Grams summed into the centred Gram, the remainder class, and narrower PCA projections."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.ingest.types import Task
from crsbench.probes.screening.estimators.transrate import transrate
from crsbench.probes.screening.score import score_cell
from crsbench.probes.screening.shared import centred_gram, class_grams, principal_scores, shared_work
from tests.probes.screening.support import labelled
from tests.probes.screening.test_transrate import literal_transrate


def direct_class_grams(x: np.ndarray, y: np.ndarray, k: int) -> list[np.ndarray]:
    z = x - x.mean(axis=0)
    return [z[y == c].T @ z[y == c] for c in range(k)]


@pytest.mark.parametrize("primed", [True, False])
def test_class_grams_equal_direct_ones_and_sum_to_the_centred_gram(primed):
    x, y = labelled(500, 16, 4, seed=3)
    with shared_work(labels=(y, 4) if primed else None):
        mean, total = centred_gram(x)  # primed: summed from the class Grams, else one pass
        grams = class_grams(x, y, 4)  # primed: handed over; else the largest class is the remainder
    expected = direct_class_grams(x, y, 4)
    for got, want in zip(grams, expected, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(total, sum(expected), rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(mean, x.mean(axis=0), rtol=1e-12)


def test_class_grams_outside_a_cell_are_computed_afresh():
    x, y = labelled(300, 8, 3, seed=4)
    for got, want in zip(class_grams(x, y, 3), direct_class_grams(x, y, 3), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("task", [Task.MULTICLASS, Task.MULTILABEL])
def test_transrate_in_a_cell_equals_the_literal_formula(task):
    x, y = labelled(600, 10, 3, seed=5)
    if task is Task.MULTILABEL:
        labels = np.stack([y == 0, y != 1], axis=1).astype(np.int64)
        want = np.mean([literal_transrate(x, labels[:, j], 2) for j in range(2)])
        got = score_cell(x, labels, task, 2, ["gbc", "hscore", "transrate"])["transrate"]
    else:
        want = literal_transrate(x, y, 3)
        got = score_cell(x, y, task, 3, ["gbc", "hscore", "transrate"])["transrate"]
    assert got == pytest.approx(want, rel=1e-9)
    assert transrate(x, y, 3) == pytest.approx(literal_transrate(x, y, 3), rel=1e-9)  # outside a cell


def test_a_narrower_projection_is_the_wider_ones_first_columns():
    x, _ = labelled(400, 20, 2, seed=6)
    z = x - x.mean(axis=0)
    axes = np.linalg.eigh(z.T @ z)[1][:, ::-1]
    with shared_work():
        wide, narrow = principal_scores(x, 12), principal_scores(x, 5)
        wider = principal_scores(x, 15)
    for got, k in [(wide, 12), (narrow, 5), (wider, 15)]:
        want = z @ axes[:, :k]
        np.testing.assert_allclose(np.abs(got), np.abs(want), rtol=1e-8, atol=1e-9)  # axes' signs are free
        assert got.shape == (400, k) and got.flags.c_contiguous
