"""score_cell: the ordering every estimator must recover, multilabel averaging, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

from crsbench.core import CrsbenchError, ScreenInputError
from crsbench.ingest.types import Task
from crsbench.probes.screening.registry import estimator_names
from crsbench.probes.screening.score import score_cell
from tests.probes.screening.support import labelled, standardise

NOISE_LEVELS = (0.5, 1.0, 2.0, 4.0)


def noisier_family(n: int = 600, d: int = 24, k: int = 4) -> tuple[list[np.ndarray], np.ndarray]:
    """One label signal, the same noise draw scaled up: the first set transfers best, the last worst."""
    rng = np.random.default_rng(0)
    y = rng.permutation(np.arange(n) % k)
    signal, noise = rng.normal(size=(k, d))[y], rng.normal(size=(n, d))
    return [standardise(signal + level * noise) for level in NOISE_LEVELS], y


def test_every_estimator_recovers_the_known_ordering():
    family, y = noisier_family()
    scores = [score_cell(x, y, Task.MULTICLASS, 4) for x in family]
    for name in estimator_names():
        series = [s[name] for s in scores]
        tau = kendalltau(series, [-level for level in NOISE_LEVELS]).statistic
        assert tau == pytest.approx(1.0), f"{name}: {series}"


def test_ordinal_is_scored_by_its_grades_as_classes():
    x, y = labelled(200, 10, 3, seed=1)
    assert score_cell(x, y, Task.ORDINAL, 3) == score_cell(x, y, Task.MULTICLASS, 3)


def test_multilabel_is_the_mean_over_labels_with_both_outcomes():
    x, _ = labelled(240, 10, 2, seed=2)
    rng = np.random.default_rng(3)
    y = (rng.random((240, 4)) < [0.2, 0.5, 0.0, 0.35]).astype(np.int64)  # label 2 never occurs: left out
    y[:, 1] = (x[:, 0] > 0).astype(np.int64)
    per_label = [score_cell(x, y[:, j], Task.MULTICLASS, 2) for j in (0, 1, 3)]
    got = score_cell(x, y, Task.MULTILABEL, 4)
    for name in estimator_names():
        assert got[name] == pytest.approx(np.mean([s[name] for s in per_label]), rel=1e-12, abs=1e-12), name


def test_names_choose_the_estimators():
    x, y = labelled(60, 5, 3, seed=4)
    assert list(score_cell(x, y, Task.MULTICLASS, 3, ["hscore", "logme"])) == ["hscore", "logme"]
    with pytest.raises(CrsbenchError, match="unknown screen estimator 'logmee'; did you mean 'logme'"):
        score_cell(x, y, Task.MULTICLASS, 3, ["logmee"])


def _with(x: np.ndarray, row: int, col: int, value: float) -> np.ndarray:
    out = x.copy()
    out[row, col] = value
    return out


X, Y = labelled(60, 5, 3, seed=5)
BAD = {
    "nan": (_with(X, 4, 2, np.nan), Y, Task.MULTICLASS, r"features must be finite, got nan at row 4, column 2"),
    "inf": (_with(X, 0, 1, np.inf), Y, Task.MULTICLASS, r"got inf at row 0, column 1"),
    "constant": (np.ones((60, 5)), Y, Task.MULTICLASS, r"^constant features: all 5 columns"),
    "one example": (X, np.where(np.arange(60) == 7, 2, Y % 2), Task.MULTICLASS, r"^class 2 has 1 train example"),
    "absent class": (X, Y % 2, Task.MULTICLASS, r"^class 2 has 0 train example"),
    "label with one positive": (
        X,
        np.stack([np.arange(60) % 2, (np.arange(60) == 3).astype(int)], axis=1),
        Task.MULTILABEL,
        r"^label 1 has 1 positive train example",
    ),
    "no label with both outcomes": (X, np.zeros((60, 2), dtype=int), Task.MULTILABEL, "no label has both outcomes"),
    "label out of range": (X, np.where(np.arange(60) == 9, 5, Y), Task.MULTICLASS, r"class indices in \[0, 3\)"),
    "1-D features": (X[:, 0], Y, Task.MULTICLASS, r"shape \(n, D\)"),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_one_clear_line(case):
    x, y, task, message = BAD[case]
    with pytest.raises(ScreenInputError, match=message) as caught:
        score_cell(x, y, task, 3 if task is Task.MULTICLASS else 2)
    assert "\n" not in str(caught.value)


def test_some_constant_columns_are_not_an_error():
    x = X.copy()
    x[:, 3] = 0.0  # standardisation leaves a constant column at 0
    scores = score_cell(x, Y, Task.MULTICLASS, 3)
    assert all(np.isfinite(v) for v in scores.values())


def test_more_dimensions_than_rows_is_scored_with_the_documented_fallbacks():
    x, y = labelled(24, 100, 3, signal=2.0, seed=6)
    scores = score_cell(x, y, Task.MULTICLASS, 3)
    assert set(scores) == set(estimator_names())
    assert all(np.isfinite(v) for v in scores.values())
    assert scores["hscore"] == pytest.approx(2.0, abs=1e-9)  # saturated at K - 1 (METHODS.md §21.3)


def test_memory_stays_far_below_an_n_by_n_matrix():
    import tracemalloc

    x, y = labelled(20_000, 16, 3, signal=0.5, seed=7)  # an N x N float64 matrix would be 3.2 GB
    tracemalloc.start()
    try:
        scores = score_cell(x, y, Task.MULTICLASS, 3)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert all(np.isfinite(v) for v in scores.values())
    assert peak < 200e6, f"numpy peak {peak / 1e6:.0f} MB"
