"""The image bootstrap's strata (ingest.strata): the rarest-class rule on a hand-worked example of
multi-class patients, pooling of small strata, and what a split cannot support."""

from __future__ import annotations

import numpy as np

from crsbench.ingest.strata import resample_strata, split_warning, units_by_label, unsupported

NAMES = ["a", "b", "c"]
# Eight patients (units) of a test split, images per class (a, b, c), worked by hand:
#   u0 a a      u1 a a c    u2 b b c    u3 b
#   u4 a        u5 b c c    u6 a        u7 b
# Units holding each class: a 4 (u0 u1 u4 u6), b 4 (u2 u3 u5 u7), c 3 (u1 u2 u5): c is the rarest.
# Most frequent class per unit: a a b b a c a b -> stratum c = {u5}, one unit: the old rule refused.
# Rarest class per unit:        a c c b a c a b -> a = {u0 u4 u6}, b = {u3 u7}, c = {u1 u2 u5}.
PER_UNIT = np.array(
    [[2, 0, 0], [2, 0, 1], [0, 2, 1], [0, 1, 0], [1, 0, 0], [0, 1, 2], [1, 0, 0], [0, 1, 0]],
)


def test_a_unit_counts_in_the_stratum_of_its_rarest_class():
    strata = resample_strata(PER_UNIT, NAMES, multilabel=False)
    assert [strata.names[s] for s in strata.stratum] == ["a", "c", "c", "b", "a", "c", "a", "b"]
    assert strata.pooled == [] and strata.joined is None
    assert unsupported(PER_UNIT, NAMES, multilabel=False) is None


def test_units_by_label_counts_images_per_patient():
    unit = np.array([0, 0, 1, 1, 1, 2])
    labels = np.array([0, 0, 0, 2, 2, 1])
    assert units_by_label(unit, np.eye(3, dtype=int)[labels]).tolist() == [[2, 0, 0], [1, 0, 2], [0, 1, 0]]


def test_single_class_units_keep_their_class_and_a_lone_small_stratum_joins_the_largest():
    # a and b are each held by 2 units and tie as rarest in u0, which goes to a (lower index);
    # b is left with u2 alone: pooled, and a pool of one joins the largest stratum (c, 3 units).
    per_unit = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 1], [0, 0, 1]])
    strata = resample_strata(per_unit, NAMES, multilabel=False)
    assert [strata.names[s] for s in strata.stratum] == ["a", "a", "c", "c", "c", "c"]
    assert strata.pooled == ["b"] and strata.joined == "c"


def test_two_small_strata_form_one_pooled_stratum():
    # Units per class: a 3 (u4 u5 u6), b 2 (u0 u1), c 2 (u0 u2), d 2 (u2 u3).
    # Rarest per unit (ties to the lower index): u0 {b, c} -> b; u2 {c, d} -> c.
    # Strata: a {u4 u5 u6}, b {u0 u1}, c {u2}, d {u3}: c and d have one unit each, pooled together.
    names = ["a", "b", "c", "d"]
    per_unit = np.array(
        [[0, 1, 1, 0], [0, 1, 0, 0], [0, 0, 1, 1], [0, 0, 0, 1], [1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]]
    )
    strata = resample_strata(per_unit, names, multilabel=False)
    pooled = "pooled small strata"
    assert [strata.names[s] for s in strata.stratum] == ["b", "b", pooled, pooled, "a", "a", "a"]
    assert strata.pooled == ["c", "d"] and strata.joined is None
    assert unsupported(per_unit, names, multilabel=False) is None  # every class in >= 2 groups


def test_multilabel_strata_are_the_lowest_positive_label_with_rare_ones_pooled():
    per_unit = np.array([[0, 1, 1], [0, 1, 0], [0, 0, 0], [0, 0, 0], [1, 0, 0], [0, 0, 1]])
    strata = resample_strata(per_unit, NAMES, multilabel=True)
    assert [strata.names[s] for s in strata.stratum] == ["b", "b", "no label", "no label", "rare labels", "rare labels"]
    assert unsupported(per_unit, NAMES, multilabel=True) is None


def test_a_class_held_by_one_group_cannot_be_supported():
    per_unit = np.array([[3, 0, 2], [1, 0, 0], [0, 2, 0], [0, 1, 0]])  # c: 2 images, both in u0
    assert unsupported(per_unit, NAMES, multilabel=False) == (
        "class 'c' is held by 1 test group(s) (2 image(s)), fewer than 2"
    )
    assert unsupported(np.array([[1, 1, 1]]), NAMES, multilabel=False).startswith("1 test image (group) in all")


def test_split_warning_names_dataset_split_class_and_counts():
    labels = np.array([0, 2, 2, 0, 1, 1, 0])
    groups = ["p1", "p1", "p1", "p2", "p3", "p4", "p5"]  # c: 2 images, one patient
    line = split_warning("derm", "test", labels, groups, NAMES, multilabel=False)
    assert line is not None and "\n" not in line
    assert line.startswith("dataset 'derm': the test split cannot support the image-level bootstrap: ")
    assert "class 'c' is held by 1 test group(s) (2 image(s))" in line
    assert split_warning("derm", "test", labels, [f"p{i}" for i in range(7)], NAMES, multilabel=False) is None
