"""Contract of every recalibration method (crsbench.probes.calibration.CALIBRATORS): validated
input, determinism, probabilities of the input's shape, complete metadata."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.ingest.types import Task
from crsbench.probes.calibration import CALIBRATORS
from tests.contract.support import K, N, labels, multilabel, names, probabilities, refused_naming, with_value

METHODS = names(CALIBRATORS)


def _valid(task: Task) -> tuple[np.ndarray, np.ndarray]:
    if task is Task.MULTILABEL:
        return np.random.default_rng(2).uniform(0.02, 0.98, size=(N, K)), multilabel()
    return probabilities(), labels()


@pytest.mark.parametrize("name", METHODS)
def test_metadata_is_complete(name):
    factory = CALIBRATORS.get(name)
    doc = (factory.__doc__ or "").strip()
    assert len(doc.split()) >= 3, f"{name}: say what the map does (its docstring)"
    calibrator = factory(Task.MULTICLASS)
    assert callable(calibrator.fit) and callable(calibrator.transform)


BAD_INPUT = {
    # case: (p, y, task, what the message must name)
    "nan probability": (with_value(probabilities(), 4, 1, float("nan")), labels(), Task.MULTICLASS, ("nan", "row 4")),
    "inf probability": (with_value(probabilities(), 0, 0, float("inf")), labels(), Task.MULTICLASS, ("inf",)),
    "1-D probabilities": (probabilities()[:, 0], labels(), Task.MULTICLASS, ((N,),)),
    "no rows": (probabilities()[:0], labels()[:0], Task.MULTICLASS, ((0, K),)),
    "string probabilities": (probabilities().astype(str), labels(), Task.MULTICLASS, ("<U",)),
    "label out of range": (probabilities(), with_value(labels(), 5, None, 7), Task.MULTICLASS, ("7", "row 5")),
    "string labels": (probabilities(), labels().astype(str), Task.ORDINAL, ("<U",)),
    "fewer labels than rows": (probabilities(), labels()[:30], Task.MULTICLASS, ((30,),)),
    "multilabel value 2": (np.full((N, K), 0.5), with_value(multilabel(), 1, 2, 2), Task.MULTILABEL, ("2", "row 1")),
}


@pytest.mark.parametrize("case", BAD_INPUT)
@pytest.mark.parametrize("name", METHODS)
def test_bad_input_is_refused_by_name(name, case):
    p, y, task, named = BAD_INPUT[case]
    with refused_naming(*named):
        CALIBRATORS.get(name)(task).fit(p, y)


@pytest.mark.parametrize("name", METHODS)
def test_bad_input_to_a_fitted_map_is_refused_by_name(name):
    p, y = _valid(Task.MULTICLASS)
    fitted = CALIBRATORS.get(name)(Task.MULTICLASS).fit(p, y)
    with refused_naming("nan"):
        fitted.transform(with_value(p, 2, 0, float("nan")))


@pytest.mark.parametrize("task", list(Task))
@pytest.mark.parametrize("name", METHODS)
def test_probabilities_keep_the_shape_and_are_deterministic(name, task):
    p, y = _valid(task)
    out = CALIBRATORS.get(name)(task).fit(p, y).transform(p)
    again = CALIBRATORS.get(name)(task).fit(p.copy(), y.copy()).transform(p.copy())
    assert out.tobytes() == again.tobytes()
    assert out.shape == p.shape and out.dtype.kind == "f"
    assert np.all((out >= 0) & (out <= 1))
    if task is not Task.MULTILABEL:
        np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-9)
