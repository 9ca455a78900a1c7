"""What an ingested dataset is (Dataset.source, datasets.source): the adapter's dataset name, or
`--source`; unknown for generic layouts; a name outside the known ones is kept with a warning."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

from crsbench.cli import main
from crsbench.ingest import ADAPTERS, ingest
from crsbench.ingest.known_datasets import KNOWN_DATASETS
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset, read_dataset
from crsbench.warehouse.schema import SCHEMA_VERSION


def _class_folders(root: Path) -> Path:
    rng = np.random.default_rng(0)
    for label in ("a", "b"):
        for i in range(30):
            (root / label).mkdir(parents=True, exist_ok=True)
            Image.fromarray(rng.integers(0, 255, (16, 16), dtype=np.uint8)).save(root / label / f"{label}{i}.png")
    return root


def test_the_suite_datasets_are_what_their_adapters_name(suite_datasets):
    # the demo's toy datasets are read by the published datasets' adapters, so a toy "chexpert" is chexpert
    assert {name: ds.source for name, ds in suite_datasets.items()} == {
        "isic2019": "isic2019",
        "aptos2019": "aptos2019",
        "chexpert": "chexpert",
        "mimic-cxr": "mimic-cxr",
    }
    assert all(e.dataset in (None, *KNOWN_DATASETS) for e in ADAPTERS.values())
    assert ADAPTERS.get("folder").dataset is None and ADAPTERS.get("manifest").dataset is None


def test_a_generic_layout_is_unknown_unless_named(tmp_path):
    root = _class_folders(tmp_path / "cxr")
    assert ingest("folder", root, "mine").source is None
    named = ingest("folder", root, "mine", source="MIMIC-CXR")
    assert named.source == "mimic-cxr" and named.warnings == []


def test_an_unknown_source_is_kept_with_the_closest_known_names(tmp_path):
    ds = ingest("folder", _class_folders(tmp_path / "x"), "x", source="chexpret")
    assert ds.source == "chexpret"
    assert len(ds.warnings) == 1 and "'chexpret' (closest known: chexpert" in ds.warnings[0]


def test_the_source_is_stored_and_read_back_and_absent_reads_unknown(suite_datasets, tmp_path):
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        load_dataset(wh, suite_datasets["chexpert"])
        assert read_dataset(wh, "chexpert").source == "chexpert"
        wh.con.execute("update datasets set source = null")  # as a dataset ingested before schema v16
        assert read_dataset(wh, "chexpert").source is None


def test_ingest_source_option(tmp_path, capsys):
    root = _class_folders(tmp_path / "d")
    db = tmp_path / "w.duckdb"
    args = ["--json", "ingest", "folder", str(root), "--name", "d", "--source", "isic2019", "--db", str(db)]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["source"] == "isic2019"
    with Warehouse.open(db, read_only=True) as wh:
        assert wh.sql("select source from datasets")["source"].tolist() == ["isic2019"]


def test_a_schema_v15_warehouse_migrates_with_its_datasets_unknown(suite_datasets, tmp_path):
    db = tmp_path / "old.duckdb"
    with Warehouse.open(db) as wh:
        load_dataset(wh, suite_datasets["chexpert"])
        wh.con.execute("insert into encoders (encoder_id) values ('rad')")  # extracted before v16
        wh.con.execute("drop view if exists encoder_dataset_overlap")
        wh.con.execute("drop table encoder_pretraining")
        wh.con.execute("drop table dataset_overlap")
        wh.con.execute("alter table datasets drop column source")
        wh.con.execute("delete from schema_info where version >= 16")
    with Warehouse.open(db) as wh:
        assert wh.sql("select max(version) as v from schema_info")["v"][0] == SCHEMA_VERSION
        assert read_dataset(wh, "chexpert").source is None
        view = wh.sql("select encoder_id, dataset_id, declared, status from encoder_dataset_overlap")
    assert view.to_dict("records") == [
        {"encoder_id": "rad", "dataset_id": "chexpert", "declared": None, "status": "unknown"}
    ]
