"""The default (images+seeds) bootstrap on grouped data whose patients hold images of several
classes: the stratum rule of ingest.strata lets it run where a patient's most frequent class
left a class with one group, and its intervals vary."""

from __future__ import annotations

import numpy as np
import pytest
from support.bootstrap_support import ENCODERS, PANEL, build_world, mixed_patients

from crsbench.analyses import run_analysis
from crsbench.analyses.uncertainty.resample import draw_images, eval_images
from crsbench.warehouse.connection import Warehouse

REPLICATES = 200


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_world(tmp_path_factory.mktemp("grouped"), datasets={"derm": mixed_patients()})


def test_the_rare_class_spread_over_mixed_patients_gets_its_own_resampled_stratum(world):
    ds = mixed_patients()
    test = ds.split_rows("test")
    labels, groups = ds.labels[test], ds.images["group_id"].to_numpy()[test]
    class3_groups = sorted(set(groups[labels == 3]))
    assert (labels == 3).sum() == 6 and class3_groups == ["p0", "p1", "p2", "p3", "p4"]
    majority = {g: np.bincount(labels[groups == g], minlength=4).argmax() for g in class3_groups}
    assert sum(v == 3 for v in majority.values()) == 1  # what the most-frequent-class rule left
    with Warehouse.open(world, read_only=True) as wh:
        images = eval_images(wh, "derm")
    assert images.unsupported is None and images.notes == ()
    own = images.stratum_names.index("class3")
    assert (images.stratum == own).sum() == 5  # every patient holding class 3
    weights = draw_images(images, REPLICATES, np.random.default_rng(0))
    class3 = weights[images.labels == 3, 1:].sum(axis=0)
    assert class3.min() >= 5 and class3.std() > 0  # present in every replicate, and resampled


def test_the_default_bootstrap_runs_and_its_intervals_vary(world):
    with Warehouse.open(world) as wh:
        result = run_analysis(wh, "bootstrap", {"replicates": REPLICATES, "seed": 1})
        rows = wh.sql(
            "select encoder_id, metric, estimate, lo, hi from bootstrap_intervals "
            "where panel = ? and resample = 'images+seeds' and dataset_id = 'derm' "
            "and metric in ('discrimination', 'calibration')",
            [PANEL],
        )
    assert set(rows["encoder_id"]) == set(ENCODERS) and len(rows) == 2 * len(ENCODERS)
    assert (rows["hi"] - rows["lo"] > 1e-3).all()
    assert ((rows["lo"] <= rows["estimate"]) & (rows["estimate"] <= rows["hi"])).all()
    encoders = result.tables["encoders"]
    assert (encoders["auroc_hi"] > encoders["auroc_lo"]).all()
