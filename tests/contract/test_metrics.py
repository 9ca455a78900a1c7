"""Contract of every run-record metric (crsbench.probes.metrics.METRICS): validated input,
determinism, a finite float within its declared bounds, complete metadata."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crsbench.core.schema import Column
from crsbench.ingest.types import Task
from crsbench.probes.metrics import METRICS, Metric
from tests.contract.support import K, N, labels, multilabel, names, probabilities, refused_naming, with_value

METRIC_NAMES = names(METRICS)


def _valid(task: Task) -> tuple[np.ndarray, np.ndarray]:
    if task is Task.MULTILABEL:
        return multilabel(), np.random.default_rng(2).random((N, K))
    return labels(), probabilities()


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_metadata_is_complete(name):
    metric = METRICS.get(name)
    assert isinstance(metric, Metric) and metric.name == name
    assert isinstance(metric.column, Column) and metric.column.type == "DOUBLE"
    assert len(metric.column.doc.split()) >= 5  # what it is, its range, which way is better
    low, high = metric.bounds
    assert low < high


BAD_INPUT = {
    # case: (y, p, task, what the message must name)
    "nan probability": (labels(), with_value(probabilities(), 3, 1, float("nan")), Task.MULTICLASS, ("nan", "row 3")),
    "probability above 1": (labels(), with_value(probabilities(), 6, 0, 1.5), Task.MULTICLASS, ("1.5", "row 6")),
    "negative probability": (labels(), with_value(probabilities(), 0, 2, -0.25), Task.ORDINAL, ("-0.25",)),
    "1-D probabilities": (labels(), probabilities()[:, 0], Task.MULTICLASS, ((N,),)),
    "no rows": (labels()[:0], probabilities()[:0], Task.MULTICLASS, ((0, K),)),
    "label out of range": (with_value(labels(), 5, None, 9), probabilities(), Task.MULTICLASS, ("9",)),
    "fractional label": (with_value(labels(), 8, None, 0.5), probabilities(), Task.MULTICLASS, ("0.5",)),
    "string labels": (labels().astype(str), probabilities(), Task.MULTICLASS, ("<U",)),
    "fewer labels than rows": (labels()[:30], probabilities(), Task.MULTICLASS, ((30,),)),
    "multilabel value 3": (with_value(multilabel(), 2, 1, 3), np.full((N, K), 0.5), Task.MULTILABEL, ("3",)),
}


@pytest.mark.parametrize("case", BAD_INPUT)
@pytest.mark.parametrize("name", METRIC_NAMES)
def test_bad_input_is_refused_by_name(name, case):
    y, p, task, named = BAD_INPUT[case]
    with refused_naming(*named):
        METRICS.get(name).fn(y, p, task)


@pytest.mark.parametrize("task", list(Task))
@pytest.mark.parametrize("name", METRIC_NAMES)
def test_value_is_a_float_within_the_declared_bounds(name, task):
    metric = METRICS.get(name)
    y, p = _valid(task)
    value = metric.fn(y, p, task)
    assert type(value) is float
    # Ordinal tasks give every metric a defined value; a metric may be NaN where its doc says it
    # is undefined for the task (qwk, ordinal_mae), never infinite.
    assert not math.isinf(value)
    if task is Task.ORDINAL:
        assert math.isfinite(value)
    if not math.isnan(value):
        assert metric.bounds[0] <= value <= metric.bounds[1]


@pytest.mark.parametrize("task", list(Task))
@pytest.mark.parametrize("name", METRIC_NAMES)
def test_same_input_same_bits_and_row_order_does_not_matter(name, task):
    fn = METRICS.get(name).fn
    y, p = _valid(task)
    first = fn(y, p, task)
    assert np.float64(first).tobytes() == np.float64(fn(y.copy(), p.copy(), task)).tobytes()
    # A metric is a statistic of the (y, p) pairs, not of their order.
    order = np.random.default_rng(5).permutation(N)
    assert fn(y[order], p[order], task) == pytest.approx(first, rel=1e-12, abs=1e-15, nan_ok=True)


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_perfect_predictions_stay_within_the_bounds(name):
    # One-hot, correct predictions: every declared bound still holds at the extreme.
    metric = METRICS.get(name)
    y = labels()
    p = np.eye(K)[y]
    value = metric.fn(y, p, Task.ORDINAL)
    assert metric.bounds[0] <= value <= metric.bounds[1]


@pytest.mark.parametrize("name", METRIC_NAMES)
def test_labels_from_a_dataframe_column_are_read_as_numbers(name):
    # An object column of ints (pandas) holds the same labels as the int array.
    fn = METRICS.get(name).fn
    y, p = _valid(Task.ORDINAL)
    assert fn(y.astype(object), p, Task.ORDINAL) == fn(y, p, Task.ORDINAL)
