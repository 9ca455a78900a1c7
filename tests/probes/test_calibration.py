"""Recalibration maps on constructed predictions with known (mis)calibration."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit, softmax
from sklearn.metrics import roc_auc_score

from crsbench.core import CrsbenchError
from crsbench.ingest.types import Task
from crsbench.probes import metrics
from crsbench.probes.calibration import CALIBRATORS, TemperatureScaling, VectorScaling, make_calibrator


def _multiclass(n: int, k: int, sharpen: float, seed: int = 0):
    """Labels drawn from softmax(z); the 'probe' reports softmax(sharpen * z)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=1.5, size=(n, k))
    truth = softmax(z, axis=1)
    y = (truth.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    return y, softmax(sharpen * z, axis=1)


def _multilabel(n: int, labels: int, sharpen: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=1.5, size=(n, labels))
    y = (rng.random((n, labels)) < expit(z)).astype(int)
    return y, expit(sharpen * z)


def test_temperature_repairs_overconfident_binary_probe_and_keeps_auroc():
    y, p = _multiclass(4000, 2, sharpen=3.0)
    cal = TemperatureScaling(Task.MULTICLASS).fit(p[:2000], y[:2000])
    q = cal.transform(p[2000:])
    yt, pt = y[2000:], p[2000:]
    before, after = metrics.ece(yt, pt, Task.MULTICLASS), metrics.ece(yt, q, Task.MULTICLASS)
    assert before > 0.08 and after < before / 3
    # Two classes: p_1 is a monotone function of the logit gap, so AUROC is exactly unchanged.
    assert roc_auc_score(yt, q[:, 1]) == pytest.approx(roc_auc_score(yt, pt[:, 1]), abs=1e-12)
    # The probe was sharpened 3x, so the fitted temperature is close to 3.
    assert cal.temperature[0] == pytest.approx(3.0, rel=0.15)


def test_temperature_matches_grid_search_of_nll():
    y, p = _multiclass(1500, 4, sharpen=2.0, seed=1)
    fitted = TemperatureScaling(Task.MULTICLASS).fit(p, y).temperature[0]
    grid = np.linspace(0.5, 5.0, 4501)
    nll = [metrics.nll(y, softmax(np.log(p) / t, axis=1), Task.MULTICLASS) for t in grid]
    assert fitted == pytest.approx(grid[int(np.argmin(nll))], abs=2e-3)


def test_temperature_keeps_top_label_and_within_row_order_multiclass():
    y, p = _multiclass(3000, 5, sharpen=2.5, seed=2)
    cal = TemperatureScaling(Task.MULTICLASS).fit(p[:1500], y[:1500])
    q = cal.transform(p[1500:])
    assert np.array_equal(np.argsort(q, axis=1, kind="stable"), np.argsort(p[1500:], axis=1, kind="stable"))
    assert metrics.accuracy(y[1500:], q, Task.MULTICLASS) == metrics.accuracy(y[1500:], p[1500:], Task.MULTICLASS)
    assert metrics.ece(y[1500:], q, Task.MULTICLASS) < metrics.ece(y[1500:], p[1500:], Task.MULTICLASS)
    # One-vs-rest AUROC may move slightly for K > 2 (other logits enter p_k), but barely.
    assert metrics.macro_auroc(y[1500:], q, Task.MULTICLASS) == pytest.approx(
        metrics.macro_auroc(y[1500:], p[1500:], Task.MULTICLASS), abs=0.01
    )


@pytest.mark.parametrize("cls", [TemperatureScaling, VectorScaling])
def test_binary_scaling_keeps_every_label_ranking_multilabel(cls):
    y, p = _multilabel(3000, 4, sharpen=3.0, seed=3)
    cal = cls(Task.MULTILABEL).fit(p[:1500], y[:1500])
    q = cal.transform(p[1500:])
    for j in range(4):
        assert np.array_equal(np.argsort(q[:, j], kind="stable"), np.argsort(p[1500:, j], kind="stable"))
        assert roc_auc_score(y[1500:, j], q[:, j]) == pytest.approx(roc_auc_score(y[1500:, j], p[1500:, j]), abs=1e-12)
    assert metrics.ece(y[1500:], q, Task.MULTILABEL) < metrics.ece(y[1500:], p[1500:], Task.MULTILABEL) / 2


def test_vector_scaling_fits_calib_at_least_as_well_as_temperature():
    # Vector scaling contains temperature scaling (all w equal, b = 0), so its calib NLL is no worse.
    y, p = _multiclass(2000, 4, sharpen=2.0, seed=4)
    p = p * np.array([2.0, 1.0, 1.0, 0.5])  # class bias too
    p /= p.sum(axis=1, keepdims=True)
    t = TemperatureScaling(Task.MULTICLASS).fit(p, y).transform(p)
    v = VectorScaling(Task.MULTICLASS).fit(p, y).transform(p)
    assert metrics.nll(y, v, Task.MULTICLASS) <= metrics.nll(y, t, Task.MULTICLASS) + 1e-9
    assert metrics.nll(y, v, Task.MULTICLASS) < metrics.nll(y, p, Task.MULTICLASS)


@pytest.mark.parametrize("task", [Task.MULTICLASS, Task.MULTILABEL])
def test_isotonic_on_calibrated_probabilities_changes_ece_only_slightly(task):
    if task is Task.MULTICLASS:
        y, p = _multiclass(6000, 3, sharpen=1.0, seed=5)
    else:
        y, p = _multilabel(6000, 3, sharpen=1.0, seed=5)
    q = make_calibrator("isotonic", task).fit(p[:3000], y[:3000]).transform(p[3000:])
    before, after = metrics.ece(y[3000:], p[3000:], task), metrics.ece(y[3000:], q, task)
    assert before < 0.03  # the input is calibrated by construction
    assert abs(after - before) < 0.02


@pytest.mark.parametrize("task", [Task.MULTICLASS, Task.MULTILABEL])
def test_dirichlet_repairs_overconfidence_and_is_near_identity_on_calibrated_input(task):
    make = _multiclass if task is Task.MULTICLASS else _multilabel
    y, p = make(6000, 3, sharpen=3.0, seed=6)
    q = make_calibrator("dirichlet", task).fit(p[:3000], y[:3000]).transform(p[3000:])
    assert metrics.ece(y[3000:], q, task) < metrics.ece(y[3000:], p[3000:], task) / 2
    y, p = make(6000, 3, sharpen=1.0, seed=7)
    q = make_calibrator("dirichlet", task).fit(p[:3000], y[:3000]).transform(p[3000:])
    assert np.mean(np.abs(q - p[3000:])) < 0.03


@pytest.mark.parametrize("method", sorted(CALIBRATORS))
@pytest.mark.parametrize("task", [Task.MULTICLASS, Task.ORDINAL, Task.MULTILABEL])
def test_every_method_returns_valid_probabilities(method, task):
    if task is Task.MULTILABEL:
        y, p = _multilabel(400, 3, sharpen=2.0, seed=8)
    else:
        y, p = _multiclass(400, 4, sharpen=2.0, seed=8)
    q = make_calibrator(method, task).fit(p[:200], y[:200]).transform(p[200:])
    assert q.shape == p[200:].shape and np.all((q >= 0) & (q <= 1))
    if task is not Task.MULTILABEL:
        np.testing.assert_allclose(q.sum(axis=1), 1.0, atol=1e-9)


def test_unknown_method_and_bad_shapes_are_user_errors():
    with pytest.raises(CrsbenchError, match="unknown recalibration method"):
        make_calibrator("platt", Task.MULTICLASS)
    with pytest.raises(CrsbenchError, match="labels have shape"):
        TemperatureScaling(Task.MULTICLASS).fit(np.full((3, 2), 0.5), np.array([0, 1]))
