"""Retrieval's ranking and metrics (probes/retrieval, METHODS.md §24) against a brute force written
here from the definitions alone: direct float64 distances, a stable argsort, relevance by set
arithmetic on each pair, and each metric as a loop over the ranked list."""

from __future__ import annotations

import numpy as np
import pytest
from support.retrieval_support import brute_metrics

from crsbench.core import CrsbenchError
from crsbench.ingest.types import Task
from crsbench.probes.retrieval.relevance import RELEVANCE, relevances_for
from crsbench.probes.retrieval.score import query_metrics

KS = (1, 5, 10)


def _labels(task: Task, n: int, rng) -> np.ndarray:
    if task is Task.MULTILABEL:
        return (rng.random((n, 4)) < 0.3).astype(np.int64)
    return rng.integers(0, 5, size=n)


@pytest.mark.parametrize("task", list(Task))
def test_every_metric_equals_the_brute_force(task):
    rng = np.random.default_rng(7)
    gallery, queries = rng.normal(size=(300, 12)), rng.normal(size=(70, 12))
    g_labels, q_labels = _labels(task, 300, rng), _labels(task, 70, rng)
    gallery[:, 0] += 0.8 * (g_labels if g_labels.ndim == 1 else g_labels.sum(axis=1))  # some signal
    queries[:, 0] += 0.8 * (q_labels if q_labels.ndim == 1 else q_labels.sum(axis=1))
    relevances = relevances_for(task)
    got = query_metrics(queries, gallery, q_labels, g_labels, relevances, KS)
    assert set(got) == {r.name for r in relevances}
    for r in relevances:
        want = brute_metrics(queries, gallery, q_labels, g_labels, r.name, r.graded, KS)
        assert set(got[r.name]) - {"relevant"} == set(want)
        for metric, values in want.items():
            np.testing.assert_allclose(got[r.name][metric], values, rtol=0, atol=1e-12, err_msg=f"{r.name} {metric}")


def test_a_hand_worked_ranking():
    gallery = np.array([[0.0], [1.0], [2.0], [3.0], [4.0]])
    labels = np.array([0, 1, 0, 0, 1])
    got = query_metrics(np.array([[0.1]]), gallery, np.array([0]), labels, [RELEVANCE.get("same_label")], (1, 3))
    m = {k: float(v[0]) for k, v in got["same_label"].items()}
    # ranked gains 1, 0, 1, 1, 0; R = 3: AP@R = (1/3)(1 * 1/1 + 0 + 1 * 2/3) = 5/9
    assert m == pytest.approx(
        {"precision@1": 1.0, "precision@3": 2 / 3, "recall@1": 1.0, "recall@3": 1.0, "map@r": 5 / 9, "relevant": 3}
    )


def test_the_training_split_retrieving_itself_has_precision_at_one_of_one():
    rng = np.random.default_rng(3)
    train, labels = rng.normal(size=(200, 16)), rng.integers(0, 4, size=200)
    got = query_metrics(train, train, labels, labels, [RELEVANCE.get("same_label")], (1,))
    assert np.all(got["same_label"]["precision@1"] == 1.0)


def test_the_ideal_order_scores_one_under_jaccard():
    labels = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 1], [0, 0, 1]])
    gallery = np.arange(4, dtype=np.float64)[:, None]  # ranked 0, 1, 2, 3 from the query at -1
    got = query_metrics(np.array([[-1.0]]), gallery, labels[:1], labels, [RELEVANCE.get("jaccard")], (1,))
    # gains 1, 1/2, 1/4, 0: already descending, so the normalised AP@R is exactly 1
    assert got["jaccard"]["map@r"][0] == pytest.approx(1.0)
    assert got["jaccard"]["precision@1"][0] == 1.0


def test_a_query_without_relevant_cases_is_nan_and_k_beyond_the_gallery_is_one_line():
    gallery, labels = np.zeros((3, 2)), np.array([0, 0, 1])
    got = query_metrics(np.ones((1, 2)), gallery, np.array([2]), labels, [RELEVANCE.get("same_label")], (1,))
    assert np.isnan(got["same_label"]["map@r"][0]) and got["same_label"]["relevant"][0] == 0
    with pytest.raises(CrsbenchError, match=r"k = 5 is larger than the gallery \(3 train images\)"):
        query_metrics(np.ones((1, 2)), gallery, np.array([0]), labels, [RELEVANCE.get("same_label")], (1, 5))


def test_blocks_do_not_change_the_answer(monkeypatch):
    import crsbench.probes.retrieval.ranking as ranking

    rng = np.random.default_rng(5)
    gallery, queries = rng.normal(size=(120, 6)), rng.normal(size=(40, 6))
    g_labels, q_labels = rng.integers(0, 3, size=120), rng.integers(0, 3, size=40)
    whole = query_metrics(queries, gallery, q_labels, g_labels, relevances_for(Task.ORDINAL), KS)
    monkeypatch.setattr(ranking, "QUERY_BLOCK_BYTES", 8 * 120 * 7)  # 7 queries a block
    assert len(list(ranking.query_blocks(queries, gallery))) == 6
    blocked = query_metrics(queries, gallery, q_labels, g_labels, relevances_for(Task.ORDINAL), KS)
    for name, metrics in whole.items():
        for metric, values in metrics.items():
            np.testing.assert_array_equal(blocked[name][metric], values)


def test_equal_distances_are_ordered_by_gallery_index():
    import torch

    from crsbench.probes.retrieval.ranking import ordered_places

    rng = np.random.default_rng(2)
    # per row, 30 near cases at distances 0, 1 or 2 (many exact ties) among 70 far ones at 10..13
    rows = [rng.permutation(np.concatenate([rng.integers(0, 3, 30), rng.integers(10, 14, 70)])) for _ in range(20)]
    distances = np.array(rows, dtype=np.float64)
    stable = np.argsort(distances, axis=1, kind="stable")
    for depth in (30, 60):  # the top-30 selection (no tie across its edge), and the full sort path
        np.testing.assert_array_equal(ordered_places(torch.from_numpy(distances), depth).numpy(), stable[:, :depth])
