"""Datasets in the warehouse: exact round trip, one transaction, shift pairs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from crsbench.core import CrsbenchError
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import (
    declare_shift,
    list_datasets,
    load_dataset,
    read_dataset,
    shift_pairs,
    shift_sources,
    shift_targets,
)


def _same(a, b) -> None:
    assert (a.name, a.adapter, a.task, a.label_names, a.domain, a.options) == (
        b.name,
        b.adapter,
        b.task,
        b.label_names,
        b.domain,
        b.options,
    )
    assert a.root.resolve() == b.root.resolve()
    pd.testing.assert_frame_equal(a.images, b.images)
    assert a.labels.dtype == b.labels.dtype and np.array_equal(a.labels, b.labels)
    pd.testing.assert_frame_equal(a.fractions, b.fractions)
    assert a.image_digest() == b.image_digest()


@pytest.mark.parametrize("name", ["isic2019", "aptos2019", "chexpert", "mimic-cxr"])
def test_read_dataset_round_trips_exactly(name, ingested_db, suite_datasets):
    with Warehouse.open(ingested_db, read_only=True) as wh:
        _same(read_dataset(wh, name), suite_datasets[name])


def test_labels_are_long_one_hot_rows(ingested_db, suite_datasets):
    ds = suite_datasets["aptos2019"]
    with Warehouse.open(ingested_db, read_only=True) as wh:
        long = wh.sql("select image_id, label_idx, value from labels where dataset_id = 'aptos2019'")
    assert len(long) == ds.n_images * 5 and set(long["value"]) == {0, 1}
    assert (long.groupby("image_id")["value"].sum() == 1).all()
    hot = long[long["value"] == 1].set_index("image_id")["label_idx"]
    assert [hot[i] for i in ds.images["image_id"]] == ds.labels.tolist()


def test_list_and_shift_pairs(ingested_db):
    with Warehouse.open(ingested_db) as wh:
        assert list_datasets(wh) == ["aptos2019", "chexpert", "isic2019", "mimic-cxr"]
        assert shift_targets(wh, "chexpert") == ["mimic-cxr"]
        assert shift_sources(wh, "mimic-cxr") == ["chexpert"]
        declare_shift(wh, "chexpert", "mimic-cxr")  # idempotent
        declare_shift(wh, "mimic-cxr", "chexpert")
        assert shift_pairs(wh) == [("chexpert", "mimic-cxr"), ("mimic-cxr", "chexpert")]
        with pytest.raises(CrsbenchError, match="label names differ"):
            declare_shift(wh, "isic2019", "aptos2019")
        with pytest.raises(CrsbenchError, match="'nope' is not an ingested dataset"):
            declare_shift(wh, "chexpert", "nope")
        with pytest.raises(CrsbenchError, match="two different datasets"):
            declare_shift(wh, "chexpert", "chexpert")


def test_existing_name_is_an_error_and_replace_swaps_everything(ingested_db, suite_datasets):
    renamed = dataclasses.replace(suite_datasets["mimic-cxr"], name="chexpert")
    with Warehouse.open(ingested_db) as wh:
        before = wh.sql("select count(*) as n from images").iloc[0, 0]
        with pytest.raises(CrsbenchError, match="dataset 'chexpert' already exists"):
            load_dataset(wh, renamed)
        assert wh.sql("select count(*) as n from images").iloc[0, 0] == before
        load_dataset(wh, renamed, replace=True)
        _same(read_dataset(wh, "chexpert"), renamed)
        assert shift_targets(wh, "chexpert") == ["mimic-cxr"]  # same labels: the pair survives
        other = dataclasses.replace(suite_datasets["isic2019"], name="chexpert")
        load_dataset(wh, other, replace=True)
        assert shift_targets(wh, "chexpert") == []  # labels changed: the pair is dropped
        n_fractions = wh.sql("select count(*) from label_fractions where dataset_id = 'chexpert'").iloc[0, 0]
        assert n_fractions == len(other.fractions)


def test_failed_load_rolls_back(ingested_db, suite_datasets):
    ds = dataclasses.replace(suite_datasets["aptos2019"], name="fresh")
    with Warehouse.open(ingested_db) as wh:
        counts = {t: wh.sql(f"select count(*) from {t}").iloc[0, 0] for t in ("datasets", "images", "labels")}
        with pytest.raises(CrsbenchError, match="label names differ"):
            load_dataset(wh, ds, shift_targets=["mimic-cxr"])  # fails after the inserts
        assert {t: wh.sql(f"select count(*) from {t}").iloc[0, 0] for t in counts} == counts
        assert "fresh" not in list_datasets(wh)


def test_missing_dataset_is_a_clear_error(ingested_db):
    with (
        Warehouse.open(ingested_db, read_only=True) as wh,
        pytest.raises(CrsbenchError, match=r"no dataset 'nope'.*datasets: aptos2019, chexpert"),
    ):
        read_dataset(wh, "nope")
