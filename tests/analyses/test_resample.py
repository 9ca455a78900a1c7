"""Image draws: stratified by class, grouped by patient, identity first; too-small strata refused."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.analyses.uncertainty.resample import EvalImages, draw_images, draw_seeds
from crsbench.core import CrsbenchError
from crsbench.ingest.types import Task


def _images(labels, groups, task=Task.MULTICLASS, names=("a", "b", "c")):
    unit = np.unique(groups, return_inverse=True)[1]
    per_unit = np.zeros((unit.max() + 1, len(names)), int)
    np.add.at(per_unit, unit, np.eye(len(names), dtype=int)[labels])
    return EvalImages(
        "ds", task, np.arange(len(labels)), np.asarray(labels), unit, per_unit.argmax(axis=1), list(names)
    )


def test_class_counts_are_kept_and_groups_move_together():
    labels = np.repeat([0, 1, 2], [30, 20, 10])
    singles = _images(labels, np.arange(60))
    w = draw_images(singles, 200, np.random.default_rng(0))
    assert w.shape == (60, 201) and (w[:, 0] == 1).all()
    for c, n in ((0, 30), (1, 20), (2, 10)):
        assert (w[labels == c].sum(axis=0) == n).all()  # stratified: each class keeps its size
    assert w[:, 1:].std() > 0.5
    groups = np.arange(60) // 2  # patients with two images each, same class
    paired = draw_images(_images(labels, groups), 200, np.random.default_rng(0))
    assert (paired[0::2] == paired[1::2]).all()


def test_a_stratum_with_one_unit_is_refused_in_one_line():
    labels = np.array([0, 0, 0, 1, 1, 2])
    with pytest.raises(
        CrsbenchError, match=r"^dataset ds: stratum 'c' has 1 test image \(group\);.*\(use --resample seeds\)$"
    ):
        draw_images(_images(labels, np.arange(6)), 100, np.random.default_rng(0))


def test_seed_draws_pair_datasets_and_version_images():
    seeds = {"a": [0, 1, 2, 3, 4], "b": [0, 1]}
    only = draw_seeds(seeds, 300, np.random.default_rng(1))
    assert (only.combos["version"] == 0).all() and only.combos["combo"].nunique() <= 126 + 3
    joint = draw_seeds(seeds, 300, np.random.default_rng(1), resample_images=True)
    first = joint.combos[joint.combos["replicate"] == 0]
    for combo in first["combo"]:
        assert sorted(joint.draws.loc[joint.draws["combo"] == combo, "seed"]) in ([0, 1, 2, 3, 4], [0, 1])
    assert (joint.combos["version"] == joint.combos["replicate"]).all()
    fixed = draw_seeds(seeds, 10, np.random.default_rng(1), resample_seeds=False, resample_images=True)
    assert fixed.draws.groupby("combo")["seed"].apply(sorted).map(len).isin([5, 2]).all()
    assert fixed.draws.groupby("combo")["seed"].nunique().isin([5, 2]).all()
