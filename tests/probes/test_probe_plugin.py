"""A probe kind defined in a module outside the source tree joins the grid with no other change:
it is among the default probes, the grid fits and evaluates it, and its runs land in the warehouse."""

from __future__ import annotations

import importlib
import sys
import textwrap

import numpy as np
import pytest
import torch
from support.synthetic import make_dataset, write_features

from crsbench.core import CONDITIONS, CrsbenchError
from crsbench.features.store import FeatureStore
from crsbench.probes.grid import GridContext, plan_fits, run_grid
from crsbench.probes.registry import PROBES, get_probe, probe_names
from crsbench.warehouse.connection import Warehouse

torch.set_num_threads(1)

# The whole plugin (what a user's module would hold): the label frequencies of the training subset,
# whatever the image.
PLUGIN = """
import numpy as np

from crsbench.ingest.types import Task
from crsbench.probes.registry import register_probe


@register_probe("prior", seeded=False, description="the training subset's label frequencies, for every image")
def prior(x, y, task, n_outputs, seed):
    freq = y.mean(axis=0) if task is Task.MULTILABEL else np.bincount(y, minlength=n_outputs) / len(y)
    return lambda x_eval: np.tile(freq, (len(x_eval), 1))
"""


@pytest.fixture
def prior_plugin(tmp_path, monkeypatch):
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "crsbench_prior_probe.py").write_text(textwrap.dedent(PLUGIN))
    monkeypatch.syspath_prepend(str(folder))
    assert "prior" not in probe_names()
    importlib.import_module("crsbench_prior_probe")
    yield
    PROBES.remove("prior")
    sys.modules.pop("crsbench_prior_probe", None)
    with pytest.raises(CrsbenchError, match="unknown probe 'prior'"):
        get_probe("prior")


def test_a_probe_kind_from_an_outside_module_runs_in_the_grid(prior_plugin, tmp_path):
    datasets = {
        "derm": make_dataset("derm", "multiclass", 160, 3, seed=1),
        "cxr": make_dataset("cxr", "multilabel", 160, 3, seed=2),
    }
    url = str(tmp_path / "features.zarr")
    for ds in datasets.values():
        write_features(url, ds, "enc", 8, depths=(1.0,), chunk_rows=64)
    store = FeatureStore(url)
    assert {"logreg", "mlp", "knn", "prior"} <= set(probe_names())
    fits = plan_fits(list(datasets), ["enc"], store, fractions=(0.25, 1.0), seeds=(0,), depths=(1.0,))
    assert {f.probe for f in fits} == set(probe_names())  # the new kind is among the default probes
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        summary = run_grid(
            [f for f in fits if f.probe in ("prior", "logreg")], GridContext(datasets, store, wh.append_runs)
        )
        runs = wh.sql("select run_id, dataset_id, probe, label_fraction, seed, condition, n_test from runs")
        preds = wh.sql("select run_id, probs from predictions")
    assert summary.fitted == 2 * 2 * 2  # datasets x fractions x (prior, logreg)
    prior_runs = runs[runs.probe == "prior"]
    assert len(prior_runs) == 2 * 2 * (len(CONDITIONS) + 1)  # datasets x fractions x (16 test conditions + calib)
    assert set(prior_runs.condition) == {*CONDITIONS, "calib"}
    probs = {rid: np.stack(group["probs"].to_list()) for rid, group in preds.groupby("run_id")}
    for run in prior_runs.itertuples():
        ds = datasets[run.dataset_id]
        labels = ds.labels[ds.fraction_rows(run.label_fraction, run.seed)]
        # independent: the label frequencies of the training subset, on every evaluated image
        freq = labels.mean(axis=0) if ds.task == "multilabel" else np.bincount(labels, minlength=3) / len(labels)
        assert probs[run.run_id].shape == (run.n_test, 3)
        np.testing.assert_allclose(probs[run.run_id], np.tile(freq, (run.n_test, 1)), rtol=0, atol=1e-7)
