"""The estimator registry: the built-ins, and an estimator from a module outside the source tree that
joins `estimator_names()` and `score_cell` with no other change."""

from __future__ import annotations

import importlib
import sys
import textwrap

import numpy as np
import pytest

from crsbench.core import CrsbenchError, Registry
from crsbench.ingest.types import Task
from crsbench.probes.screening.registry import ESTIMATORS, estimator_names, get_estimator
from crsbench.probes.screening.score import score_cell
from tests.probes.screening.support import labelled

# The whole plugin (what a user's module would hold): the share of the largest class, a floor any
# encoder should beat.
PLUGIN = """
import numpy as np

from crsbench.probes.screening.registry import register_estimator


@register_estimator("majority", description="share of the largest class among the train rows")
def majority(x, y, n_classes):
    return float(np.bincount(y, minlength=n_classes).max() / len(y))
"""


@pytest.fixture
def majority_plugin(tmp_path, monkeypatch):
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "crsbench_majority_estimator.py").write_text(textwrap.dedent(PLUGIN))
    monkeypatch.syspath_prepend(str(folder))
    assert "majority" not in estimator_names()
    importlib.import_module("crsbench_majority_estimator")
    yield
    ESTIMATORS.remove("majority")
    sys.modules.pop("crsbench_majority_estimator", None)
    with pytest.raises(CrsbenchError, match="unknown screen estimator 'majority'"):
        get_estimator("majority")


def test_the_builtins_are_one_module_each():
    assert isinstance(ESTIMATORS, Registry) and ESTIMATORS.kind == "screen estimator"
    assert {"logme", "hscore", "gbc", "transrate", "nleep", "knn_loo"} <= set(estimator_names())


def test_an_estimator_from_an_outside_module_is_scored(majority_plugin):
    assert "majority" in estimator_names()
    x, _ = labelled(50, 4, 2, seed=0)
    y = (np.arange(50) < 35).astype(np.int64)  # 35 of class 1, 15 of class 0
    scores = score_cell(x, y, Task.MULTICLASS, 2)
    assert set(scores) == set(estimator_names()) and scores["majority"] == pytest.approx(0.7)
    multilabel = np.stack([y, 1 - y, (np.arange(50) % 5 == 0).astype(np.int64)], axis=1)
    assert score_cell(x, multilabel, Task.MULTILABEL, 3, ["majority"])["majority"] == pytest.approx(
        (0.7 + 0.7 + 0.8) / 3
    )
