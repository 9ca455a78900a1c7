"""Contract of every probe kind (crsbench.probes.registry.PROBES): validated input, determinism,
probabilities of the declared shape, a fit that learns, complete metadata."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.core import CrsbenchError
from crsbench.ingest.types import Task
from crsbench.probes.registry import PROBES, ProbeEntry
from tests.contract.support import K, N, features, labels, multilabel, names, refused_naming, with_value

TRAINED = names(PROBES, lambda e: not e.zero_shot)
ZERO_SHOT = names(PROBES, lambda e: e.zero_shot)
X_EVAL = np.random.default_rng(7).normal(size=(10, 8))


def _predict(name: str, x: np.ndarray, y: np.ndarray, task: Task, seed: int = 0) -> np.ndarray:
    return np.asarray(PROBES.get(name).fit(x, y, task, K, seed)(X_EVAL))


@pytest.mark.parametrize("name", PROBES.names())
def test_metadata_is_complete(name):
    entry = PROBES.get(name)
    assert isinstance(entry, ProbeEntry) and entry.name == name
    assert isinstance(entry.description, str) and len(entry.description.split()) >= 3
    assert all(isinstance(flag, bool) for flag in (entry.seeded, entry.deferred, entry.zero_shot))
    assert callable(entry.fit)


BAD_INPUT = {
    # case: (x, y, task, what the message must name)
    "nan feature": (with_value(features(), 3, 2, float("nan")), labels(), Task.MULTICLASS, ("nan", "row 3")),
    "inf feature": (with_value(features(), 1, 0, float("inf")), labels(), Task.MULTICLASS, ("inf",)),
    "1-D features": (features()[:, 0], labels(), Task.MULTICLASS, ((N,),)),
    "no rows": (features()[:0], labels()[:0], Task.MULTICLASS, ((0, 8),)),
    "string features": (features().astype(str), labels(), Task.MULTICLASS, ("<U",)),
    "label out of range": (features(), with_value(labels(), 5, None, 7), Task.MULTICLASS, ("7", "row 5")),
    "negative label": (features(), with_value(labels(), 2, None, -1), Task.ORDINAL, ("-1",)),
    "fewer labels than rows": (features(), labels()[:30], Task.MULTICLASS, ((30,),)),
    "multilabel value 2": (features(), with_value(multilabel(), 4, 1, 2), Task.MULTILABEL, ("2", "row 4")),
    "multilabel as indices": (features(), labels(), Task.MULTILABEL, ((N,),)),
}


@pytest.mark.parametrize("case", BAD_INPUT)
@pytest.mark.parametrize("name", TRAINED)
def test_bad_training_input_is_refused_by_name(name, case):
    x, y, task, named = BAD_INPUT[case]
    with refused_naming(*named):
        PROBES.get(name).fit(x, y, task, K, 0)


@pytest.mark.parametrize("name", ZERO_SHOT)
def test_zero_shot_kinds_refuse_the_training_path(name):
    # A zero-shot kind predicts from text embeddings: the grid's fit path is a user error, said as one.
    with pytest.raises(CrsbenchError):
        PROBES.get(name).fit(features(), labels(), Task.MULTICLASS, K, 0)


@pytest.mark.parametrize("task", [Task.MULTICLASS, Task.MULTILABEL])
@pytest.mark.parametrize("name", TRAINED)
def test_same_data_and_seed_give_identical_bytes(name, task):
    y = multilabel() if task is Task.MULTILABEL else labels()
    first, second = _predict(name, features(), y, task, 3), _predict(name, features(), y.copy(), task, 3)
    assert first.tobytes() == second.tobytes()


@pytest.mark.parametrize("name", TRAINED)
def test_multiclass_probabilities_are_rows_on_the_simplex(name):
    p = _predict(name, features(), labels(), Task.MULTICLASS)
    assert p.shape == (len(X_EVAL), K) and p.dtype.kind == "f"
    assert np.all((p >= 0) & (p <= 1))
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-6)


@pytest.mark.parametrize("name", TRAINED)
def test_multilabel_probabilities_are_per_label(name):
    p = _predict(name, features(), multilabel(), Task.MULTILABEL)
    assert p.shape == (len(X_EVAL), K) and p.dtype.kind == "f"
    assert np.all((p >= 0) & (p <= 1))


@pytest.mark.parametrize("name", TRAINED)
def test_a_fit_learns_well_separated_classes(name):
    # Class k sits at +4 on feature k, every other class at 0: any probe must give the true
    # class most of the mass on fresh points drawn the same way.
    rng = np.random.default_rng(11)
    y = labels()
    x = rng.normal(scale=0.5, size=(N, 8))
    x[np.arange(N), y] += 4.0
    y_new = np.arange(12) % K
    x_new = rng.normal(scale=0.5, size=(12, 8))
    x_new[np.arange(12), y_new] += 4.0
    p = np.asarray(PROBES.get(name).fit(x, y, Task.MULTICLASS, K, 0)(x_new))
    assert np.mean(p.argmax(axis=1) == y_new) >= 0.9
