"""The feature-set catalog in the warehouse, and the `crsbench extract / encoders / feature-sets` CLI."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
import torch

from crsbench.cli import main
from crsbench.features import FeatureSetRef, FeatureStore, extract, get_encoder, list_encoders
from crsbench.ingest import ingest, make_suite
from crsbench.warehouse import catalog
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset
from crsbench.warehouse.schema import SCHEMA_VERSION

torch.set_num_threads(1)
ENTRY = dataclasses.replace(get_encoder("tiny-convnext"), input_size=32)


@pytest.fixture(scope="module")
def aptos(tmp_path_factory):
    paths = make_suite(tmp_path_factory.mktemp("suite"), scale=0.05, image_size=32)
    return ingest("aptos2019", paths["aptos2019"], "aptos")


def test_record_sync_and_list(aptos, tmp_path):
    url = str(tmp_path / "f.zarr")
    attrs = extract(aptos, ENTRY, url, chunk_rows=16, conditions=("clean", "jpeg-s1"))
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        catalog.upsert_encoder(wh, ENTRY)
        catalog.upsert_encoder(wh, ENTRY)  # an upsert, not a duplicate
        catalog.record_feature_set(wh, url, FeatureSetRef("aptos", ENTRY.id), attrs.stored)
        catalog.record_feature_set(wh, url, FeatureSetRef("aptos", ENTRY.id), attrs.stored)
        rows = catalog.feature_sets(wh)
        assert len(rows) == 1
        row = rows.iloc[0]
        # the store lies in the warehouse's directory: recorded relative to it, so both can move together
        assert (row.dataset_id, row.encoder_id, row.regime, row.store_url) == ("aptos", ENTRY.id, "frozen", "f.zarr")
        assert catalog.resolve_url(wh, row.store_url) == url
        prov = wh.sql("select * from provenance where kind = 'feature set'").iloc[0]
        assert prov.id == f"aptos/{ENTRY.id}/frozen" and prov.device == "cpu" and prov.threads >= 1
        assert bool(row.complete) and not bool(row.pretrained)
        assert row.dim == 320 and row.n_images == aptos.n_images and row.image_digest == aptos.image_digest()
        assert list(row.conditions) == ["clean", "jpeg-s1"] and list(row.depths) == ["d025", "d050", "d075", "d100"]
        assert wh.sql("select count(*) n from encoders where encoder_id = ?", [ENTRY.id]).n[0] == 1

        # A second, incomplete set appears through a rescan of the store.
        other = dataclasses.replace(ENTRY, id="tiny-convnext-b")
        import crsbench.features.extraction as ex

        original = ex.finish_feature_set
        ex.finish_feature_set = lambda *a, **k: None
        try:
            extract(aptos, other, url, chunk_rows=16, conditions=("clean",))
        finally:
            ex.finish_feature_set = original
        assert catalog.sync_catalog(wh, FeatureStore(url)) == 2
        rows = catalog.feature_sets(wh).set_index("encoder_id")
        assert bool(rows.loc[ENTRY.id, "complete"]) and not bool(rows.loc["tiny-convnext-b", "complete"])


def test_cli_extract_records_the_catalog(aptos, tmp_path, capsys):
    db = tmp_path / "bench.duckdb"
    with Warehouse.open(db) as wh:
        load_dataset(wh, aptos)
    args = ["--db", str(db), "--batch-size", "32", "--chunk-rows", "32"]
    assert main(["extract", "-e", "tiny-resnet18", "-d", "all", *args]) == 0
    store = FeatureStore(str(db.with_name("bench.duckdb.features.zarr")))
    assert store.is_complete(FeatureSetRef("aptos", "tiny-resnet18"))
    capsys.readouterr()
    assert main(["--json", "extract", "-e", "tiny-resnet18", "-d", "aptos", *args]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["feature_sets"][0]["status"] == "skipped (complete)"
    ref = FeatureSetRef("aptos", "tiny-resnet18")
    before = store.array(ref, 0.5, "jpeg-s3")[:]
    assert main(["extract", "-e", "tiny-resnet18", "-d", "aptos", "--force", "--threads", "2", *args]) == 0
    assert json.loads(store.attrs(ref)["provenance"])["threads"] == 2  # two forward streams
    assert np.array_equal(store.array(ref, 0.5, "jpeg-s3")[:], before, equal_nan=True)
    capsys.readouterr()
    assert main(["--json", "feature-sets", "--db", str(db)]) == 0
    rows = json.loads(capsys.readouterr().out)["feature_sets"]
    assert [(r["dataset_id"], r["encoder_id"], r["complete"]) for r in rows] == [("aptos", "tiny-resnet18", True)]
    assert main(["extract", "-e", "biovil", "-d", "aptos", *args]) == 1  # chest-only
    assert "chest-only" in capsys.readouterr().err
    assert main(["extract", "-e", "resnet50", "-d", "aptos", *args]) == 1  # no local weights
    assert "never downloads" in capsys.readouterr().err


def test_cli_encoders_lists_the_registry(capsys):
    assert main(["--json", "encoders"]) == 0
    rows = json.loads(capsys.readouterr().out)["encoders"]
    assert [r["id"] for r in rows] == [e.id for e in list_encoders()]
    assert sum(r["pretrained"] for r in rows) == 15


def test_cost_columns_and_encoder_cost_view(aptos, tmp_path):
    url = str(tmp_path / "f.zarr")
    result = extract(aptos, ENTRY, url, chunk_rows=16, conditions=("clean",))
    cost = result.stored.cost
    assert cost is not None
    old = {k: v for k, v in FeatureStore(url).attrs(FeatureSetRef("aptos", ENTRY.id)).items() if k != "cost"}
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        catalog.record_feature_set(wh, url, FeatureSetRef("aptos", ENTRY.id), result.stored)
        catalog.record_attrs(wh, url, FeatureSetRef("aptos", "old-encoder"), old)  # a set made before cost
        rows = catalog.feature_sets(wh).set_index("encoder_id")
        new = rows.loc[ENTRY.id]
        assert (new.params, new.flops_per_image) == (cost["params"], cost["flops_per_image"])
        assert new.images_per_s == cost["images_per_s"] and new.stored_bytes_per_image > 0
        assert json.loads(new.widths) == cost["widths"] and (new.cost_device, new.cost_dtype) == ("cpu", "float32")
        assert pd.isna(new.peak_memory_bytes) and new.peak_memory_note == "not measured on cpu"
        # not measured: NULL, never zero
        assert rows.loc["old-encoder", ["params", "flops_per_image", "images_per_s", "cost_device"]].isna().all()
        view = wh.sql("select * from encoder_cost order by encoder_id").set_index("encoder_id")
        assert view.loc[ENTRY.id, "gflops_per_image"] == pytest.approx(cost["flops_per_image"] / 1e9)
        assert view.loc[ENTRY.id, "n_sets"] == 1
        assert view.loc["old-encoder", ["params", "flops_per_image", "images_per_s"]].isna().all()


def test_a_schema_v16_warehouse_migrates_with_its_sets_not_measured(aptos, tmp_path):
    url = str(tmp_path / "f.zarr")
    result = extract(aptos, ENTRY, url, chunk_rows=16, conditions=("clean",))
    db = tmp_path / "old.duckdb"
    with Warehouse.open(db) as wh:
        catalog.record_feature_set(wh, url, FeatureSetRef("aptos", ENTRY.id), result.stored)
        for view in ("crs_cost", "encoder_cost"):
            wh.con.execute(f"drop view {view}")
        for column in (*catalog.COST_COLUMNS, "screened"):  # as a warehouse written before schema v17
            wh.con.execute(f"alter table feature_sets drop column {column}")
        wh.con.execute("delete from schema_info where version >= 17")
    with Warehouse.open(db) as wh:
        assert wh.sql("select max(version) as v from schema_info")["v"][0] == SCHEMA_VERSION
        row = wh.sql("select * from encoder_cost")
        assert len(row) == 1 and row.loc[0, "n_sets"] == 1
        assert row.loc[0, ["params", "flops_per_image", "images_per_s", "stored_bytes_per_image"]].isna().all()


def test_a_schema_v17_warehouse_migrates_with_complete_sets_screened(aptos, tmp_path):
    url = str(tmp_path / "f.zarr")
    result = extract(aptos, ENTRY, url, chunk_rows=16, conditions=("clean",))
    db = tmp_path / "old.duckdb"
    with Warehouse.open(db) as wh:
        catalog.record_feature_set(wh, url, FeatureSetRef("aptos", ENTRY.id), result.stored)
        old = dataclasses.replace(result.stored, complete=False, screened=False)
        catalog.record_feature_set(wh, url, FeatureSetRef("aptos", "tiny-convnext-b"), old)
        wh.con.execute("alter table feature_sets drop column screened")  # as written before schema v18
        wh.con.execute("delete from schema_info where version >= 18")
    with Warehouse.open(db) as wh:
        assert wh.sql("select max(version) as v from schema_info")["v"][0] == SCHEMA_VERSION == 20
        rows = catalog.feature_sets(wh).set_index("encoder_id")["screened"].to_dict()
        assert rows == {ENTRY.id: True, "tiny-convnext-b": False}  # the clean part exists exactly when complete
        assert catalog.screened_sets(wh, "aptos")["encoder_id"].tolist() == [ENTRY.id]
