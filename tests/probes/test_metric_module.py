"""A metric is its registration: one registered from a module outside the source tree (a user's
file on the path, imported before the sweep) reaches the run record's column, the seed means of
view metrics_seed and the reporting card, with no other file edited."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# The whole module a user writes: the function and its registration.
MODULE = """
import numpy as np

from crsbench.probes.metrics import register_metric


@register_metric("top1_error", "Fraction of test images whose argmax is wrong; [0, 1], lower is better.")
def top1_error(y, p, task):
    return float(np.mean(p.argmax(axis=1) != y))
"""

# Runs in a fresh interpreter (the metric registry of this process stays as it is).
SCRIPT = """
import json, sys
import crsbench_top1_error  # the user's module: registers top1_error
from support.synthetic import make_dataset, write_features
from crsbench import Bench
from crsbench.bench import ProbeConfig
from crsbench.reads.card import card_for
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset, read_dataset

db = sys.argv[1]
with Warehouse.open(db) as wh:
    load_dataset(wh, make_dataset("derm", "multiclass", 90, 3, seed=1))
    ds = read_dataset(wh, "derm")
write_features(db + ".features.zarr", ds, "enc", 8, depths=(1.0,), chunk_rows=64)
Bench(db).probe(["enc"], config=ProbeConfig(probes=("logreg",), fractions=(1.0,), seeds=(0, 1), depths=(1.0,)))
with Warehouse.open(db, read_only=True) as wh:
    item = card_for(wh).item("metrics")
    out = {
        "runs": wh.sql("select seed, condition, accuracy, top1_error from runs").to_dict("records"),
        "seed": wh.sql(
            "select condition, accuracy_mean, top1_error_mean, top1_error_sd, top1_error_n from metrics_seed"
        ).to_dict("records"),
        "card": {"values": item.values, "statements": list(item.statements)},
    }
print("RESULT " + json.dumps(out))
"""


def test_a_metric_registered_in_a_user_module_reaches_runs_the_seed_view_and_the_card(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "crsbench_top1_error.py").write_text(textwrap.dedent(MODULE))
    tests_dir = Path(__file__).resolve().parents[1]  # for support.synthetic
    path = [str(site), str(tests_dir), os.environ.get("PYTHONPATH", "")]
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "bench.duckdb")],
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(path)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.split("RESULT ", 1)[1])
    runs = out["runs"]
    # runs: the column, filled for every run; an argmax is right or wrong, so it is 1 - accuracy
    assert len(runs) > 2 and {r["seed"] for r in runs} == {0, 1}
    for r in runs:
        assert r["top1_error"] == pytest.approx(1 - r["accuracy"], abs=1e-12)
    # metrics_seed: the mean, sd and n over the two seeds
    assert out["seed"] and {s["condition"] for s in out["seed"]} <= {r["condition"] for r in runs}
    for s in out["seed"]:
        values = [r["top1_error"] for r in runs if r["condition"] == s["condition"]]
        assert s["top1_error_n"] == len(values) == 2
        assert s["top1_error_mean"] == pytest.approx(sum(values) / 2, abs=1e-12)
        assert s["top1_error_mean"] == pytest.approx(1 - s["accuracy_mean"], abs=1e-12)
        assert s["top1_error_sd"] == pytest.approx(abs(values[0] - values[1]) / 2**0.5, abs=1e-12)
    # the card: listed after the built-ins, with the number of runs that recorded it
    card = out["card"]
    assert card["values"]["runs_with.top1_error"] == len(runs)
    assert card["values"]["runs_with.auroc"] == len(runs)
    assert ", ordinal_mae" not in card["statements"][0]  # NULL for a multiclass dataset: not listed
    assert card["statements"][0].startswith("per run: auroc, ece, ") and ", top1_error (" in card["statements"][0]
