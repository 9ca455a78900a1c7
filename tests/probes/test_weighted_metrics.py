"""Run metrics under integer case weights equal the metrics of the repeated sample and
scikit-learn's weighted AUROC; weight 1 everywhere is the plain metric."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from crsbench.ingest.types import Task
from crsbench.probes.metrics import accuracy, brier, ece, macro_auroc
from crsbench.probes.weighted_metrics import RunScorer, weighted_accuracy, weighted_brier


def _case(task: str, rng: np.random.Generator, n: int = 240, k: int = 4):
    if task == "multilabel":
        y = (rng.random((n, k)) < 0.3).astype(int)
        p = np.clip(0.6 * y + rng.random((n, k)) * 0.5, 0, 1)
    else:
        y = rng.integers(0, k, n)
        p = rng.dirichlet(np.ones(k), n) + 0.8 * np.eye(k)[y]
        p /= p.sum(axis=1, keepdims=True)
    return y, np.round(p, 2)  # rounding makes ties, which count half


@pytest.mark.parametrize("task", ["multiclass", "ordinal", "multilabel"])
def test_weights_equal_the_repeated_sample_and_sklearn(task):
    rng = np.random.default_rng(5)
    y, p = _case(task, rng)
    scorer = RunScorer(y, p, task, ece=True)
    weights = np.column_stack([np.ones(len(y), int), rng.integers(0, 4, (len(y), 6))])
    auroc, cal = scorer.auroc(weights), scorer.ece(weights)
    assert auroc[0] == pytest.approx(macro_auroc(y, p, task), abs=1e-15)
    assert cal[0] == pytest.approx(ece(y, p, task), abs=1e-15)
    target = y if task == "multilabel" else np.eye(p.shape[1])[y]
    for r in range(1, weights.shape[1]):
        idx = np.repeat(np.arange(len(y)), weights[:, r])
        assert auroc[r] == pytest.approx(macro_auroc(y[idx], p[idx], task), abs=1e-12)
        assert cal[r] == pytest.approx(ece(y[idx], p[idx], task), abs=1e-12)
        sk = np.mean([roc_auc_score(target[:, j], p[:, j], sample_weight=weights[:, r]) for j in range(p.shape[1])])
        assert auroc[r] == pytest.approx(sk, abs=1e-12)


@pytest.mark.parametrize("task", ["multiclass", "ordinal", "multilabel"])
def test_weighted_brier_and_accuracy_equal_the_repeated_sample(task):
    rng = np.random.default_rng(7)
    y, p = _case(task, rng)
    weights = np.column_stack([np.ones(len(y), int), rng.integers(0, 4, (len(y), 6)), np.zeros(len(y), int)])
    got_brier, got_acc = weighted_brier(y, p, Task(task), weights), weighted_accuracy(y, p, Task(task), weights)
    for r in range(weights.shape[1] - 1):
        idx = np.repeat(np.arange(len(y)), weights[:, r])
        assert got_brier[r] == pytest.approx(brier(y[idx], p[idx], task), abs=1e-12)
        assert got_acc[r] == pytest.approx(accuracy(y[idx], p[idx], task), abs=1e-12)
    assert np.isnan(got_brier[-1]) and np.isnan(got_acc[-1])  # a replicate that drew no image


def test_a_class_without_positives_in_a_replicate_is_skipped_and_bad_weights_refused():
    y = np.array([0, 0, 1, 1, 2, 2])
    p = np.eye(3)[[0, 1, 1, 2, 2, 0]] * 0.7 + 0.1
    w = np.array([[1, 1, 1, 1, 0, 0]]).T  # class 2 absent: mean over classes 0 and 1
    want = np.mean([roc_auc_score(y[:4] == j, p[:4, j]) for j in (0, 1)])
    assert RunScorer(y, p, "multiclass").auroc(w)[0] == pytest.approx(want)
    with pytest.raises(ValueError, match="integers"):
        RunScorer(y, p, "multiclass").auroc(np.ones((6, 2)))
