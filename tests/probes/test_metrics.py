"""The run-record metrics against scikit-learn, torchmetrics and hand-worked examples."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics import brier_score_loss, cohen_kappa_score, log_loss, roc_auc_score
from torchmetrics.functional.classification import binary_calibration_error, multiclass_calibration_error

from crsbench.core import CrsbenchError
from crsbench.ingest.types import Task
from crsbench.probes import metrics as M


def _multiclass(rng, n=300, k=5, ties=True):
    logits = rng.normal(size=(n, k)) * 2
    if ties:  # coarse values: many tied scores across samples
        logits = np.round(logits, 1)
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = rng.integers(0, k, n)
    return y, p


def _multilabel(rng, n=300, labels=4):
    p = np.round(rng.random((n, labels)), 2)  # ties
    y = (rng.random((n, labels)) < p).astype(int)
    return y, p


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auroc_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    y, p = _multiclass(rng)
    expected = np.mean([roc_auc_score(y == k, p[:, k]) for k in range(p.shape[1])])
    assert M.macro_auroc(y, p, Task.MULTICLASS) == pytest.approx(expected, abs=1e-12)
    assert M.macro_auroc(y, p, "multiclass") == pytest.approx(
        roc_auc_score(y, p, multi_class="ovr", average="macro"), abs=1e-12
    )
    yl, pl = _multilabel(rng)
    assert M.macro_auroc(yl, pl, Task.MULTILABEL) == pytest.approx(roc_auc_score(yl, pl, average="macro"), abs=1e-12)


def test_auroc_skips_single_class_labels_and_is_nan_when_none_defined():
    rng = np.random.default_rng(3)
    y, p = _multilabel(rng)
    y[:, 1] = 1  # label 1: positives only -> no AUROC, skipped
    expected = np.mean([roc_auc_score(y[:, j], p[:, j]) for j in (0, 2, 3)])
    assert M.macro_auroc(y, p, Task.MULTILABEL) == pytest.approx(expected, abs=1e-12)
    assert np.isnan(M.macro_auroc(np.ones((5, 2), int), np.full((5, 2), 0.3), Task.MULTILABEL))
    # multiclass: class 2 never occurs in y -> skipped from the macro mean
    yc, pc = _multiclass(rng, k=3)
    yc[yc == 2] = 0
    expected = np.mean([roc_auc_score(yc == k, pc[:, k]) for k in (0, 1)])
    assert M.macro_auroc(yc, pc, Task.MULTICLASS) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_ece_matches_torchmetrics(seed):
    rng = np.random.default_rng(seed)
    y, p = _multiclass(rng, ties=False)
    ref = multiclass_calibration_error(torch.tensor(p), torch.tensor(y), num_classes=p.shape[1], n_bins=15, norm="l1")
    assert M.ece(y, p, Task.MULTICLASS) == pytest.approx(float(ref), abs=1e-6)  # torchmetrics bins in float32
    yl, pl = _multilabel(rng)
    pl = np.clip(pl + rng.normal(0, 1e-4, pl.shape), 1e-3, 1 - 1e-3)  # off the bin edges
    refs = [
        float(binary_calibration_error(torch.tensor(pl[:, j]), torch.tensor(yl[:, j]), n_bins=15, norm="l1"))
        for j in range(pl.shape[1])
    ]
    assert M.ece(yl, pl, Task.MULTILABEL) == pytest.approx(np.mean(refs), abs=1e-6)


def test_ece_hand_worked_and_probability_one_in_last_bin():
    p = np.array([[0.9, 0.1], [0.6, 0.4], [0.2, 0.8]])
    y = np.array([0, 1, 1])
    assert M.ece(y, p, Task.MULTICLASS) == pytest.approx((0.1 + 0.6 + 0.2) / 3)
    # confidence exactly 1.0 shares the last bin [14/15, 1] with 0.95
    p = np.array([[1.0, 0.0], [0.95, 0.05]])
    y = np.array([0, 1])
    assert M.ece(y, p, Task.MULTICLASS) == pytest.approx(abs(0.5 - 0.975))
    # binary reliability of p(label=1) for multilabel: one bin of 0.0 (two negatives, one positive)
    yl = np.array([[0], [0], [1]])
    pl = np.zeros((3, 1))
    assert M.ece(yl, pl, Task.MULTILABEL) == pytest.approx(1 / 3)


def test_adaptive_ece_equal_mass_bins():
    rng = np.random.default_rng(5)
    y, p = _multiclass(rng, n=150, ties=False)
    conf, hit = p.max(axis=1), (p.argmax(axis=1) == y).astype(float)
    order = np.argsort(conf)
    expected = sum(
        abs(hit[order[i : i + 10]].mean() - conf[order[i : i + 10]].mean()) * 10 / 150 for i in range(0, 150, 10)
    )
    assert M.adaptive_ece(y, p, Task.MULTICLASS) == pytest.approx(expected, abs=1e-12)


def test_brier_nll_against_sklearn():
    rng = np.random.default_rng(7)
    y, p = _multiclass(rng)
    onehot = np.eye(p.shape[1])[y]
    assert M.brier(y, p, Task.MULTICLASS) == pytest.approx(np.mean(((p - onehot) ** 2).sum(1)))
    assert M.nll(y, p, Task.MULTICLASS) == pytest.approx(log_loss(y, p, labels=range(p.shape[1])))
    yl, pl = _multilabel(rng)
    assert M.brier(yl, pl, Task.MULTILABEL) == pytest.approx(
        np.mean([brier_score_loss(yl[:, j], pl[:, j]) for j in range(pl.shape[1])])
    )
    assert M.nll(yl, pl, Task.MULTILABEL) == pytest.approx(
        np.mean([log_loss(yl[:, j], pl[:, j], labels=[0, 1]) for j in range(pl.shape[1])])
    )


def test_probabilities_at_zero_and_one_are_finite():
    y = np.array([0, 1])
    p = np.array([[0.0, 1.0], [0.0, 1.0]])  # first sample: p(true) = 0
    eps = np.finfo(np.float64).eps
    assert M.nll(y, p, Task.MULTICLASS) == pytest.approx(-np.log(eps) / 2 - np.log(1 - eps) / 2)
    assert M.nll(y, p, Task.MULTICLASS) == pytest.approx(log_loss(y, p))
    assert M.brier(y, p, Task.MULTICLASS) == pytest.approx(1.0)
    yl = np.array([[1, 0], [0, 1]])
    pl = np.array([[1.0, 0.0], [1.0, 1.0]])
    assert np.isfinite(M.nll(yl, pl, Task.MULTILABEL))
    assert M.accuracy(yl, pl, Task.MULTILABEL) == pytest.approx(0.75)
    assert M.mean_confidence(yl, pl, Task.MULTILABEL) == pytest.approx(1.0)


def test_accuracy_confidence_and_ordinal_metrics():
    rng = np.random.default_rng(11)
    y, p = _multiclass(rng, k=5)
    pred = p.argmax(axis=1)
    assert M.accuracy(y, p, Task.ORDINAL) == pytest.approx(np.mean(pred == y))
    assert M.mean_confidence(y, p, Task.ORDINAL) == pytest.approx(p.max(1).mean())
    assert M.qwk(y, p, Task.ORDINAL) == pytest.approx(
        cohen_kappa_score(y, pred, weights="quadratic", labels=range(5)), abs=1e-12
    )
    assert M.ordinal_mae(y, p, Task.ORDINAL) == pytest.approx(np.abs(pred - y).mean())
    assert np.isnan(M.qwk(y, p, Task.MULTICLASS)) and np.isnan(M.ordinal_mae(y, p, Task.MULTICLASS))


def test_all_metrics_has_every_run_column_and_validator_rejects_bad_input():
    rng = np.random.default_rng(0)
    y, p = _multiclass(rng)
    values = M.all_metrics(y, p, Task.ORDINAL)
    # every registered metric, keyed by its run-record column, in registration order; the built-ins among them
    assert list(values) == M.METRICS.names() == [c.name for c in M.metric_columns()]
    assert {"auroc", "ece", "ece_adaptive", "brier", "nll", "accuracy", "mean_confidence", "qwk", "ordinal_mae"} <= set(
        values
    )
    assert values["brier"] == M.brier(y, p, Task.ORDINAL) and values["ordinal_mae"] == M.ordinal_mae(y, p, Task.ORDINAL)
    with pytest.raises(CrsbenchError, match="out of range"):
        M.ece(np.array([0, 7]), np.full((2, 3), 1 / 3), Task.MULTICLASS)
    with pytest.raises(CrsbenchError, match="shape"):
        M.brier(np.zeros((2, 3), int), np.full((2, 2), 0.5), Task.MULTILABEL)
    with pytest.raises(CrsbenchError, match="within"):
        M.nll(np.array([0]), np.array([[1.2, -0.2]]), Task.MULTICLASS)
