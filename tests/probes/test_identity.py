"""Fit identity: what `identify` fills into planned fits, so a changed dataset, weights file or
repaired depth gives new fit ids, and what each leaves alone."""

from __future__ import annotations

import dataclasses

import pytest
import zarr
from support.synthetic import make_dataset, write_features

from crsbench.features.store import FeatureStore
from crsbench.probes.grid import plan_fits
from crsbench.probes.identity import identify, read_depth

SMALL = dict(probes=("logreg",), fractions=(1.0,), seeds=(0,), depths=(0.5, 1.0))


@pytest.fixture
def world(tmp_path):
    datasets = {"derm": make_dataset("derm", "multiclass", 80, 3, seed=1)}
    url = str(tmp_path / "features.zarr")
    write_features(url, datasets["derm"], "enc", 8, depths=(0.5, 1.0), chunk_rows=64)
    root = zarr.open_group(url, mode="a")
    root["derm/enc"].attrs["weights_hash"] = "w" * 64
    return datasets, FeatureStore(url)


def test_identify_fills_the_data_digest_and_the_weights_hash_of_the_set_read(world):
    datasets, store = world
    fits = identify(plan_fits(["derm"], ["enc"], store, **SMALL), datasets, {}, store)
    assert {f.weights_hash for f in fits} == {"w" * 64}
    assert {f.data_digest for f in fits} != {""} and len({f.data_digest for f in fits}) == 1
    assert all(f.depth == read_depth(f, store) for f in fits)  # not zero-shot: each reads its own depth
    again = identify(plan_fits(["derm"], ["enc"], store, **SMALL), datasets, {}, store)
    assert [f.fit_id for f in again] == [f.fit_id for f in fits]  # the same inputs: the same ids


def test_other_weights_or_other_labels_give_new_fit_ids(world):
    datasets, store = world
    before = {f.depth: f.fit_id for f in identify(plan_fits(["derm"], ["enc"], store, **SMALL), datasets, {}, store)}
    zarr.open_group(store.url, mode="a")["derm/enc"].attrs["weights_hash"] = "v" * 64
    other_weights = {
        f.depth: f.fit_id for f in identify(plan_fits(["derm"], ["enc"], store, **SMALL), datasets, {}, store)
    }
    relabelled = dataclasses.replace(datasets["derm"], labels=(datasets["derm"].labels + 1) % 3)
    other_labels = {
        f.depth: f.fit_id
        for f in identify(plan_fits(["derm"], ["enc"], store, **SMALL), {"derm": relabelled}, {}, store)
    }
    assert set(before.values()).isdisjoint(other_weights.values())
    assert set(before.values()).isdisjoint(other_labels.values())


def test_a_repaired_depth_renames_only_its_own_fits(world):
    datasets, store = world
    before = {f.depth: f for f in identify(plan_fits(["derm"], ["enc"], store, **SMALL), datasets, {}, store)}
    zarr.open_group(store.url, mode="a")["derm/enc"].attrs["repairs"] = {"d100": 2}
    after = {f.depth: f for f in identify(plan_fits(["derm"], ["enc"], store, **SMALL), datasets, {}, store)}
    assert after[0.5].fit_id == before[0.5].fit_id
    assert after[1.0].weights_hash == "w" * 64 + "+repairs[2]" and after[1.0].fit_id != before[1.0].fit_id


def test_a_missing_feature_set_is_left_to_the_input_checks(world):
    datasets, store = world
    (fit,) = identify(plan_fits(["derm"], ["enc"], store, **{**SMALL, "depths": (1.0,)}), datasets, {}, store)
    ghost = dataclasses.replace(fit, encoder_id="ghost")
    (named,) = identify([ghost], datasets, {}, store)
    assert named.weights_hash == ""
