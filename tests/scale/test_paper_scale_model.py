"""The probe cost model of benchmarks/paper_scale.py and real_size.py, against hand-worked values."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from paper_scale_model import IterativeCost, PowerLaw
from paper_scale_support import ClientCost, EvalCost, PaperDataset, encoder_chunks


def test_setup_is_paid_once_and_iterations_scale_only_the_rest():
    per_iter, setup = PowerLaw(1e-6, 1.0, 1.0), PowerLaw(1e-7, 1.0, 2.0)
    sizes = [(1000, 64), (2000, 64), (1000, 128), (2000, 128)]
    its = [(n, d, 50.0) for n, d in sizes]
    times = [(n, d, setup(n, d) + 50.0 * per_iter(n, d)) for n, d in sizes]
    model = IterativeCost.fit(times, its, [(n, d, setup(n, d)) for n, d in sizes])
    assert model.per_iteration.alpha == pytest.approx(1.0) and model.per_iteration.beta == pytest.approx(1.0)
    # 500 iterations measured elsewhere (real features): setup 1e-7*1000*64^2 + 500 * 1e-6*1000*64
    real = model.with_iterations([(n, d, 500.0) for n, d in sizes])
    assert real(1000, 64) == pytest.approx(0.4096 + 32.0)
    # folding the setup into the iterations would have charged it 10 times over
    folded = IterativeCost.fit(times, its).with_iterations([(n, d, 500.0) for n, d in sizes])
    assert folded(1000, 64) == pytest.approx(10 * 0.4096 + 32.0)


def test_iterations_extend_a_measured_rise_and_hold_a_fall():
    rising = IterativeCost(PowerLaw(1.0, 0.0, 0.0), ((1000, 64, 100.0), (2000, 64, 200.0)))
    assert rising.iterations_at(4000, 64) == pytest.approx(200.0)  # held
    assert rising.with_iterations(rising.iterations, extend=True).iterations_at(4000, 64) == pytest.approx(300.0)
    assert rising.iterations_at(1414, 64) == pytest.approx(100.0 + 100.0 * math.log(1.414) / math.log(2.0))
    falling = IterativeCost(PowerLaw(1.0, 0.0, 0.0), ((1000, 64, 300.0), (2000, 64, 200.0)), extend=True)
    assert falling.iterations_at(8000, 64) == pytest.approx(200.0)


def test_eval_cost_reads_once_per_chunk_and_pays_metrics_per_fit_and_set():
    cost = EvalCost(read=1e-9, row=1e-6, row_dim=1e-9, per_set=1e-3)
    # read 1e-9*1000*100 = 1e-4; per fit 1000*(1e-6 + 1e-7) + 17e-3 = 0.0181
    assert cost(2, 1000, 17, 100) == pytest.approx(1e-4 + 2 * 0.0181)
    points = [(f, r, 17, d, cost(f, r, 17, d)) for f in (1, 6) for r in (5100, 13600) for d in (192, 768)]
    fitted = EvalCost.fit(points)
    for field in ("read", "row", "row_dim", "per_set"):
        assert getattr(fitted, field) == pytest.approx(getattr(cost, field), rel=1e-6)
    assert ClientCost(0.01, 1e-6)(3, 10_000) == pytest.approx(0.03 + 0.01)


def test_chunks_count_every_seed_share_the_unseeded_fit_and_search_at_each_evaluation():
    one = PowerLaw(1.0, 0.0, 0.0)  # 1 s per fit, 1 s per k-NN query, whatever N and D
    models = {"logreg_mc": one, "mlp": one, "knn": one}
    free = EvalCost(0.0, 0.0, 0.0, 0.0)
    job = PaperDataset("tiny", 1000, 10, 10, 0, "mc", 8, False)
    chunks = encoder_chunks(models, {"mc": free, "mlp": free}, (32, 32, 32, 64), [job], 25)
    eval_rows = 16 * 10 + 10
    assert [c[0] for c in chunks] == ["tiny logreg D=32"] * 3 + ["tiny logreg D=64", "tiny mlp D=64", "tiny knn D=64"]
    assert all(c[3] == 25 * eval_rows for c in chunks)  # 5 fractions x 5 seeds, each evaluated
    seconds = [c[1] for c in chunks]
    assert seconds[:4] == [21.0] * 4  # logreg: fraction 1.0 fitted once for its 5 seeds
    assert seconds[4] == 25.0  # mlp is seeded: 25 fits
    assert seconds[5] == 25.0 * eval_rows  # k-NN searches at every evaluation, shared fit too
    # one fit per chunk: the fraction-1.0 fit is no longer shared, and each chunk reads once
    single = encoder_chunks(models, {"mc": EvalCost(1.0, 0.0, 0.0, 0.0), "mlp": free}, (32,) * 4, [job], 1)
    logreg = [c[1] for c in single if "logreg" in c[0]]
    assert len(logreg) == 4 * 25 and logreg == [1.0 + eval_rows * 32] * 100
