"""Chunk packing: batch bound for every probe, a work bound for deferred (k-NN) fits."""

from __future__ import annotations

import pandas as pd
import pytest

from crsbench.probes import chunking
from crsbench.probes.chunking import chunk_slices, pack, subset_rows
from tests.probes.test_grid import collect, comparable, make_setup, sweep


def test_pack_by_count_keeps_order():
    assert pack([1.0] * 7, 3) == [slice(0, 3), slice(3, 6), slice(6, 7)]
    assert pack([], 3) == []
    with pytest.raises(ValueError):
        pack([1.0], 0)


def test_pack_by_budget_hand_worked():
    # budget 10: [6, 3] = 9 fits; adding 5 would make 14; [5, 4] = 9; 12 alone exceeds, own chunk
    assert pack([6, 3, 5, 4, 12, 1], 25, budget=10) == [slice(0, 2), slice(2, 4), slice(4, 5), slice(5, 6)]
    # the count bound still holds under a generous budget
    assert pack([1, 1, 1], 2, budget=100) == [slice(0, 2), slice(2, 3)]


def test_paper_scale_knn_fits_are_chunks_of_their_own_and_demo_cells_are_not_split():
    fractions = [1.0] + [0.5] * 5 + [0.25] * 5 + [0.1] * 5 + [0.05] * 5
    # CheXpert frontal: 143,270 train rows; 16 x 202 test + 47,757 calib + 243,000 MIMIC eval rows
    n_eval = 16 * 202 + 47_757 + 243_000
    parts = chunk_slices(fractions, 143_270, n_eval, deferred=True, batch_size=25)
    work = [subset_rows(f, 143_270) * n_eval for f in fractions]
    assert all(sum(work[p]) <= chunking.DEFERRED_CHUNK_PAIRS or p.stop - p.start == 1 for p in parts)
    assert parts[0] == slice(0, 1)  # the full-fraction fit alone: 4.2e10 pairs
    assert [i for p in parts for i in range(p.start, p.stop)] == list(range(len(fractions)))
    # the demo's largest cell (hundreds of rows) stays one chunk, as logreg's always does
    assert chunk_slices(fractions, 600, 16 * 200 + 200, deferred=True, batch_size=25) == [slice(0, 21)]
    assert chunk_slices(fractions, 143_270, n_eval, deferred=False, batch_size=25) == [slice(0, 21)]


def test_split_knn_chunks_give_the_same_runs(tmp_path, monkeypatch):
    setup = make_setup(tmp_path)
    whole, sink = collect()
    one = sweep(setup, sink)
    monkeypatch.setattr(chunking, "DEFERRED_CHUNK_PAIRS", 1.0)  # every k-NN fit alone
    split, sink = collect()
    many = sweep(setup, sink)
    knn = [r for r, _ in split if (r.probe == "knn").any()]
    assert all(r.fit_id.nunique() == 1 for r in knn)
    n_knn_fits = pd.concat(knn).fit_id.nunique()
    assert many.batches == one.batches - 2 + n_knn_fits  # derm and cxr each had one knn chunk
    pd.testing.assert_frame_equal(
        comparable(pd.concat([r for r, _ in split])), comparable(pd.concat([r for r, _ in whole]))
    )
