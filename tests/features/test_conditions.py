"""Conditions from the perturbation registry: the protocol's 16 by default, and a plugin
perturbation installed as a package (a dist-info with a `crsbench.perturbations` entry point)
reaching extraction, the grid, `runs` and the robustness axis with no other change."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from crsbench.core import CONDITIONS, PERTURBATIONS, SEVERITIES, CrsbenchError
from crsbench.features.conditions import (
    check_conditions,
    perturbed_conditions,
    registered_conditions,
    stored_conditions,
)

# The whole plugin: one function pair and its registration (what a user's package would hold).
PLUGIN = '''
import numpy as np
import torch

from crsbench.features.perturbations import register_perturbation


@register_perturbation("invert", {1: 0.5, 2: 1.0})
class Invert:
    """x' = x + s (255 - 2x): s = 1 inverts the image, s = 0.5 greys it out."""

    @staticmethod
    def reference(img, s, key):
        x = img.astype(np.float32)
        return np.clip(np.rint(x + np.float32(s) * (np.float32(255) - 2 * x)), 0, 255).astype(np.uint8)

    @staticmethod
    def batched(imgs, s, keys):
        x = imgs.to(torch.float32)
        return torch.clamp(torch.round(x + s * (255 - 2 * x)), 0, 255).to(torch.uint8)
'''

# Runs in a fresh interpreter that sees the plugin only as an installed distribution.
SCRIPT = """
import json, sys
from crsbench.cli import main
from crsbench.features.conditions import registered_conditions
from crsbench.ingest import ingest, make_suite
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset

root, db = sys.argv[1], sys.argv[2]
paths = make_suite(root, scale=0.05, image_size=32)
with Warehouse.open(db) as wh:
    load_dataset(wh, ingest("aptos2019", paths["aptos2019"], "aptos"))
common = ["--db", db, "-e", "tiny-resnet18", "-d", "aptos"]
assert main(["extract", *common, "--threads", "2"]) == 0
assert main(["probe", *common, "--probe", "logreg", "--depth", "1.0", "--fraction", "1.0", "--seed", "0"]) == 0
with Warehouse.open(db, read_only=True) as wh:
    out = {
        "registered": list(registered_conditions()),
        "grid": sorted(wh.sql("select distinct condition from dataset_grid").condition),
        "feature_set": list(wh.sql("select conditions from feature_sets").conditions[0]),
        "runs": wh.sql("select condition, auroc from runs where eval_dataset_id = dataset_id").to_dict("records"),
        "axes": wh.sql("select robustness, n_perturbed from axes_cell").to_dict("records"),
        "cell": list(wh.sql("select conditions from cell_conditions").conditions[0]),
    }
print("RESULT " + json.dumps(out))
"""


def _install_plugin(site: Path) -> None:
    dist = site / "crsbench_invert-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: crsbench-invert\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[crsbench.perturbations]\ninvert = crsbench_invert\n")
    (site / "crsbench_invert.py").write_text(textwrap.dedent(PLUGIN))


def test_the_protocol_conditions_are_the_default_without_plugins():
    expected = ("clean", *(f"{p}-s{s}" for p in PERTURBATIONS for s in SEVERITIES))
    assert expected == CONDITIONS and len(expected) == 16
    assert ("clean", *perturbed_conditions()) == expected  # the registry's built-ins are the protocol's
    assert registered_conditions() == expected
    assert stored_conditions({}) == CONDITIONS  # a set written before conditions were recorded
    assert stored_conditions({"conditions": ["clean", "jpeg-s1"]}) == ("clean", "jpeg-s1")


def test_a_perturbation_registered_in_process_adds_its_conditions():
    from crsbench.features import perturbations

    class Same:
        reference = staticmethod(lambda img, level, key: img)
        batched = staticmethod(lambda imgs, level, keys: imgs)

    perturbations.register_perturbation("same", {1: 0.0, 3: 0.0})(Same)
    try:
        assert registered_conditions() == (*CONDITIONS, "same-s1", "same-s3")
        assert check_conditions(["clean", "same-s3"]) == ("clean", "same-s3")
    finally:
        perturbations.REGISTRY.remove("same")
    assert registered_conditions() == CONDITIONS


@pytest.mark.parametrize(
    "conditions,message",
    [(["clean", "jpeg-s4"], "unknown condition(s) 'jpeg-s4'"), (["jpeg-s1"], "'clean' is missing")],
)
def test_unknown_or_cleanless_conditions_are_one_line_errors(conditions, message):
    with pytest.raises(CrsbenchError, match=r"conditions: .*registered ones: clean, gaussian_blur-s1") as err:
        check_conditions(conditions)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_plugin_perturbation_reaches_runs_and_the_robustness_axis(tmp_path):
    site = tmp_path / "site"
    _install_plugin(site)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "suite"), str(tmp_path / "bench.duckdb")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "perturbation plugin 'invert' of crsbench-invert: importing crsbench_invert" in done.stderr
    out = json.loads(done.stdout.split("RESULT ", 1)[1])
    new = ["invert-s1", "invert-s2"]
    assert out["registered"] == [*CONDITIONS, *new]  # registration order: built-ins, then the plugin
    assert set(out["grid"]) - {"calib", "shift"} == {*CONDITIONS, *new}  # the grid declared at ingest
    assert out["feature_set"] == out["registered"]
    runs = {r["condition"]: r["auroc"] for r in out["runs"] if r["condition"] != "calib"}
    assert set(runs) == {*CONDITIONS, *new}
    # Robustness by hand (METHODS §6): drops over all 17 perturbed conditions, one seed.
    drops = [max(0.0, runs["clean"] - a) for c, a in runs.items() if c != "clean"]
    assert len(drops) == 17
    (axes,) = out["axes"]
    assert axes["n_perturbed"] == 17
    assert axes["robustness"] == pytest.approx(1 - (0.5 * sum(drops) / 17 + 0.5 * max(drops)), abs=1e-12)
    assert out["cell"] == sorted(c for c in runs if c != "clean")
