"""`crsbench adapt` end to end: LoRA variant -> same store -> same probe grid -> same views (METHODS.md §13)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from crsbench.cli import main
from crsbench.cli.commands.adapt import parse_seeds
from crsbench.cli.output import console
from crsbench.core import CrsbenchError
from crsbench.features.adapt import ADAPTER_FILE, adapter_dir
from crsbench.features.store import FeatureSetRef, FeatureStore
from crsbench.pipeline.stores import default_adapter_root
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel

torch.set_num_threads(1)
DATASET = "isic2019"
# tiny-resnet18 is not adapted here: timm zero-initialises the last BN of each random-init block,
# so adapters inside its residual branches get no gradient (see adapt.AdaptResult.adapter_norm).
FROZEN = ("tiny-convnext", "tiny-efficientnet")
ADAPTED = "tiny-convnext"


def _cli(*args: str) -> int:
    console.configure(json_mode=True)
    try:
        return main(["--json", *args])
    finally:
        console.configure(json_mode=False)


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory, _ingested_db_template):
    import shutil

    from crsbench.warehouse.parts import parts_dir_for

    tmp = tmp_path_factory.mktemp("adapt")
    db = tmp / "w.duckdb"
    shutil.copyfile(_ingested_db_template, db)
    shutil.copytree(parts_dir_for(_ingested_db_template), parts_dir_for(db))
    store = str(tmp / "w.duckdb.features.zarr")
    for enc in FROZEN:
        assert _cli("extract", "--db", str(db), "--store", store, "-e", enc, "-d", DATASET) == 0
    assert (
        _cli(
            "adapt",
            "--db",
            str(db),
            "--store",
            store,
            "-e",
            ADAPTED,
            "-d",
            DATASET,
            "--seeds",
            "0",
            "--epochs",
            "1",
            "--batch-size",
            "34",
        )
        == 0
    )
    # the whole primary grid (every declared fraction x seed), declared as this study's grid: only
    # cells complete against their declared grid reach the axes
    grid = ["--probe", "logreg", "--depth", "1.0"]
    assert _cli("grid", "restrict", "--db", str(db), "-d", DATASET, *grid) == 0
    assert _cli("probe", "--db", str(db), "--store", store, "-d", DATASET, *grid) == 0
    with Warehouse.open(db) as wh:
        freeze_panel(wh, "p", list(FROZEN), allow_small=True)
    return db, store


@pytest.mark.slow
def test_variant_is_extracted_into_the_same_store(pipeline):
    db, store = pipeline
    fs = FeatureStore(store)
    ref = FeatureSetRef(DATASET, ADAPTED, "lora-s0")
    assert fs.is_complete(ref) and fs.attrs(ref)["regime"] == "lora-s0"
    frozen = FeatureSetRef(DATASET, ADAPTED)
    assert fs.attrs(ref)["weights_hash"] != fs.attrs(frozen)["weights_hash"]
    a = np.asarray(fs.array(ref, 1.0, "clean")[:], dtype=np.float32)
    b = np.asarray(fs.array(frozen, 1.0, "clean")[:], dtype=np.float32)
    assert a.shape == b.shape and not np.allclose(a, b)
    folder = adapter_dir(default_adapter_root(store), ADAPTED, DATASET, 0)
    assert (folder / ADAPTER_FILE).exists()
    with Warehouse.open(db, read_only=True) as wh:
        cat = wh.sql("select encoder_id, regime, complete from feature_sets where dataset_id = ?", [DATASET])
    assert {(r.encoder_id, r.regime) for r in cat.itertuples() if r.complete} == {
        ("tiny-convnext", "frozen"),
        ("tiny-efficientnet", "frozen"),
        ("tiny-convnext", "lora-s0"),
    }


@pytest.mark.slow
def test_variant_flows_through_probes_and_views(pipeline):
    db, _ = pipeline
    with Warehouse.open(db, read_only=True) as wh:
        runs = wh.sql(
            "select regime, count(*) as n from runs where encoder_id = ? group by regime", [ADAPTED]
        ).set_index("regime")["n"]
        cells = wh.sql("select regime, complete from axes_cell where encoder_id = ?", [ADAPTED])
        crs = wh.sql(
            "select regime, candidate_key, crs, in_panel from ("
            " select *, encoder_id || case when regime = 'frozen' then '' else '@' || regime end"
            " as candidate_key from crs_encoder where panel = 'p')"
        )
        agree = wh.sql("select * from rank_agreement_regime where panel = 'p'")
    # the same grid, the same number of run records for both regimes
    assert set(runs.index) == {"frozen", "lora-s0"} and runs["frozen"] == runs["lora-s0"]
    assert set(cells.regime) == {"frozen", "lora-s0"} and cells.complete.all()
    variant = crs.set_index("candidate_key").loc[f"{ADAPTED}@lora-s0"]
    assert not variant.in_panel and np.isfinite(variant.crs)
    assert set(agree.regime) == {"lora-s0", "lora"} and set(agree.metric) == {"crs", "auroc"}
    assert (agree.n == 1).all()  # one adapted encoder: nothing to rank against yet


@pytest.mark.slow
def test_rerun_reuses_adapter_and_features(pipeline):
    db, store = pipeline
    folder = adapter_dir(default_adapter_root(store), ADAPTED, DATASET, 0)
    stamp = (folder / ADAPTER_FILE).stat().st_mtime_ns
    assert (
        _cli("adapt", "--db", str(db), "--store", store, "-e", ADAPTED, "-d", DATASET, "--seeds", "0", "--epochs", "1")
        == 0
    )
    assert (folder / ADAPTER_FILE).stat().st_mtime_ns == stamp


def test_seed_parsing_and_bad_input(ingested_db, tmp_path, capsys):
    assert parse_seeds("0,1, 2,1") == (0, 1, 2)
    for bad in ("", "a,b", "-1"):
        with pytest.raises(CrsbenchError):
            parse_seeds(bad)
    code = _cli(
        "adapt",
        "--db",
        str(ingested_db),
        "--store",
        str(tmp_path / "s.zarr"),
        "-e",
        "tiny-vit",
        "-d",
        "nope",
        "--seeds",
        "0",
    )
    assert code == 1
    with pytest.raises(CrsbenchError):
        default_adapter_root("s3://bucket/features.zarr")
