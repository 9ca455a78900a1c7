"""Splits and label fractions: group-safe, stratified, deterministic, nested (METHODS.md §1)."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from crsbench.core import InputError
from crsbench.ingest.splits import (
    assign_splits,
    check_group_safe,
    label_fraction_subsets,
    one_hot,
    stratified_group_split,
)


def _toy(n_groups: int = 120, seed: int = 1):
    """Groups of 1-3 rows sharing one class; 4 classes with 50/25/15/10 % of groups."""
    rng = np.random.default_rng(seed)
    classes = rng.choice(4, size=n_groups, p=[0.5, 0.25, 0.15, 0.10])
    sizes = rng.integers(1, 4, size=n_groups)
    groups = np.repeat([f"g{i:03d}" for i in range(n_groups)], sizes)
    labels = np.repeat(classes, sizes)
    return labels, groups


def test_split_is_group_safe_and_stratified_within_tolerance():
    labels, groups = _toy()
    parts = stratified_group_split(one_hot(labels, 4), groups, (0.6, 0.2, 0.2))
    for g in np.unique(groups):
        assert len(set(parts[groups == g])) == 1
    # Stated tolerance: every class count in every part is within (largest group size + 1)
    # of ratio x class total; here groups have at most 3 rows.
    for k in range(4):
        total = (labels == k).sum()
        for p, r in enumerate((0.6, 0.2, 0.2)):
            assert abs(((parts == p) & (labels == k)).sum() - r * total) <= 4
    sizes = np.bincount(parts, minlength=3) / len(parts)
    assert np.allclose(sizes, (0.6, 0.2, 0.2), atol=0.05)


def test_split_is_deterministic_and_seed_dependent():
    labels, groups = _toy()
    y = one_hot(labels, 4)
    a = stratified_group_split(y, groups, (0.6, 0.2, 0.2))
    b = stratified_group_split(y.copy(), list(groups), (0.6, 0.2, 0.2))
    c = stratified_group_split(y, groups, (0.6, 0.2, 0.2), seed=7)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_rare_class_of_ten_singletons_splits_six_two_two():
    # 10 single-image members of a rare class next to 90 of a common one: 6/2/2 exactly.
    labels = np.array([1] * 10 + [0] * 90)
    parts = stratified_group_split(one_hot(labels, 2), [f"i{i}" for i in range(100)], (0.6, 0.2, 0.2))
    assert np.bincount(parts[labels == 1], minlength=3).tolist() == [6, 2, 2]


def test_multilabel_split_keeps_positives_in_every_part():
    rng = np.random.default_rng(3)
    y = (rng.random((300, 6)) < [0.4, 0.3, 0.2, 0.1, 0.06, 0.04]).astype(int)
    groups = [f"p{i // 2}" for i in range(300)]
    parts = stratified_group_split(y, groups, (0.6, 0.2, 0.2))
    for p in range(3):
        assert (y[parts == p].sum(axis=0) >= 2).all()


def test_assign_splits_keeps_official_rows_and_carves_the_rest():
    labels = np.array([0, 1] * 40)
    groups = np.array([f"p{i // 2}" for i in range(80)])
    fixed = ["test" if i < 20 else None for i in range(80)]
    fixed[21] = None
    out = assign_splits(one_hot(labels, 2), groups, fixed)
    assert (out[:20] == "test").all()
    rest = out[20:]
    assert set(rest) == {"train", "calib"}  # test is official, so nothing else lands there
    assert abs((rest == "calib").mean() - 0.25) < 0.05  # 0.2 / (0.6 + 0.2)
    check_group_safe(groups, out)


def test_assign_splits_pins_a_group_to_its_official_split():
    groups = ["a", "a", "b", "c", "d", "e"]
    out = assign_splits(one_hot(np.array([0, 0, 1, 0, 1, 0]), 2), groups, ["test", None, None, None, None, None])
    assert out[1] == "test"


def test_group_in_two_official_splits_is_an_error():
    with pytest.raises(InputError, match="group 'a' appears in both the train and the test split"):
        assign_splits(one_hot(np.array([0, 1]), 2), ["a", "a"], ["train", "test"])
    with pytest.raises(InputError, match="group 'x'"):
        check_group_safe(["x", "x"], ["train", "calib"])


def test_fractions_are_nested_sized_and_keep_a_positive_per_class():
    labels, _ = _toy(200)
    y = one_hot(labels, 4)
    ids = np.array([f"img{i:04d}" for i in range(len(y))])
    frame = label_fraction_subsets(y, ids)
    assert sorted(frame["seed"].unique()) == [0, 1, 2, 3, 4]
    for seed, per_seed in frame.groupby("seed"):
        subsets = {f: set(g["image_id"]) for f, g in per_seed.groupby("fraction")}
        fracs = sorted(subsets)
        assert fracs == [0.01, 0.05, 0.10, 0.25, 1.0]
        for small, large in pairwise(fracs):
            assert subsets[small] <= subsets[large]
        assert subsets[1.0] == set(ids)
        for f in fracs:
            rows = np.isin(ids, list(subsets[f]))
            assert (y[rows].sum(axis=0) >= 1).all(), (seed, f)
            assert rows.sum() == max(int(np.ceil(f * len(ids))), 4) or f == 1.0
    # a different seed draws a different 10 % subset
    s0 = set(frame[(frame.seed == 0) & (frame.fraction == 0.1)]["image_id"])
    s1 = set(frame[(frame.seed == 1) & (frame.fraction == 0.1)]["image_id"])
    assert s0 != s1


def test_fractions_are_stratified():
    labels = np.array([0] * 600 + [1] * 300 + [2] * 100)
    ids = np.array([f"i{i}" for i in range(1000)])
    frame = label_fraction_subsets(one_hot(labels, 3), ids, fractions=(0.1, 0.25), seeds=(0,))
    for f, g in frame.groupby("fraction"):
        counts = np.bincount(labels[np.isin(ids, g["image_id"])], minlength=3)
        expected = np.array([600, 300, 100]) * f
        assert np.all(np.abs(counts - expected) <= 2), (f, counts)


def test_multilabel_fractions_cover_every_label_and_are_deterministic():
    rng = np.random.default_rng(5)
    y = (rng.random((150, 8)) < np.linspace(0.02, 0.5, 8)).astype(int)
    y[0, 0] = 1  # the rarest label has at least one positive
    ids = [f"x{i:03d}" for i in range(150)]
    a = label_fraction_subsets(y, ids)
    b = label_fraction_subsets(y, ids)
    assert a.equals(b)
    for (_seed, _f), g in a.groupby(["seed", "fraction"]):
        rows = np.isin(ids, g["image_id"])
        present = y.sum(axis=0) > 0
        assert (y[rows][:, present].sum(axis=0) >= 1).all()
