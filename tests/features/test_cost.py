"""Cost measured at extraction (features.cost): torch's FLOP count against a hand count, the
attributes a fresh set carries, and an old set's "not measured"."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import zarr
from torch import nn

from crsbench.core import NOT_MEASURED
from crsbench.features import extract, extraction_sets, get_encoder
from crsbench.features.cost import COST_ATTR, count_flops, gflops, measure_compute, stored_bytes
from crsbench.features.extraction_result import StoredAttrs
from crsbench.features.hooks import DepthTap
from crsbench.features.loaders import build_model
from crsbench.features.store import FeatureSetRef, FeatureStore
from crsbench.ingest import ingest, make_suite

ENTRY = dataclasses.replace(get_encoder("tiny-convnext"), input_size=32)


def test_flop_count_of_linear_and_conv_stack_equals_hand_count():
    # FlopCounterMode counts a multiply-add as 2 FLOPs and ignores biases and activations.
    net = nn.Sequential(
        nn.Conv2d(3, 8, 3),  # 10x10 -> 8x8
        nn.ReLU(),
        nn.Conv2d(8, 4, 3, stride=2, padding=1),  # 8x8 -> 4x4
        nn.Flatten(),
        nn.Linear(4 * 4 * 4, 32),
        nn.Linear(32, 5),
    )
    conv1 = 2 * 3 * 8 * 3 * 3 * 8 * 8
    conv2 = 2 * 8 * 4 * 3 * 3 * 4 * 4
    linears = 2 * 64 * 32 + 2 * 32 * 5
    assert count_flops(net, torch.zeros(1, 3, 10, 10)) == conv1 + conv2 + linears
    # per row: a batch of 3 is three times one image
    assert count_flops(net, torch.zeros(3, 3, 10, 10)) == 3 * (conv1 + conv2 + linears)


def test_a_model_the_counter_cannot_follow_is_not_measured_rather_than_failed(monkeypatch):
    from crsbench.features import cost as cost_module

    def trips(forward, x):
        raise RuntimeError("no flop formula for this op")

    monkeypatch.setattr(cost_module, "count_flops", trips)
    net = nn.Sequential(nn.Flatten(), nn.Linear(3 * 4 * 4, 2))
    cost = measure_compute(net, net, 4, torch.float32, torch.device("cpu"), batch_size=2, widths={"100": 2})
    assert cost["flops_per_image"] is None and gflops(cost["flops_per_image"]) == NOT_MEASURED
    assert cost["flops_note"] == "not counted: RuntimeError: no flop formula for this op"
    assert cost["images_per_s"] > 0 and cost["params"] == 3 * 4 * 4 * 2 + 2  # the rest is still measured


@pytest.fixture(scope="module")
def extracted(tmp_path_factory):
    suite = make_suite(tmp_path_factory.mktemp("suite"), scale=0.05, image_size=32)
    ds = ingest("aptos2019", suite["aptos2019"], "aptos")
    store = FeatureStore(str(tmp_path_factory.mktemp("store") / "f.zarr"))
    result = extract(ds, ENTRY, store, chunk_rows=16, batch_size=24, threads=1)
    return store, FeatureSetRef("aptos", ENTRY.id, "frozen"), result


def test_a_fresh_set_carries_its_cost(extracted):
    store, ref, result = extracted
    cost = result.stored.cost
    assert cost is not None
    model = build_model(ENTRY).eval()
    assert cost["params"] == sum(p.numel() for p in model.parameters())
    tap = DepthTap(model, ENTRY)
    assert cost["flops_per_image"] == count_flops(tap, torch.zeros(1, 3, 32, 32)) > 0
    tap.close()
    assert cost["images_per_s"] > 0
    assert cost["peak_memory_bytes"] is None and cost["peak_memory_note"] == "not measured on cpu"
    assert (cost["device"], cost["dtype"]) == ("cpu", "float32")
    assert cost["widths"] == store.attrs(ref)["dims"]
    group = store.root()[ref.path]
    assert isinstance(group, zarr.Group)
    assert cost["stored_bytes_per_image"] == pytest.approx(stored_bytes(group) / result.stored.n_images)


def test_a_set_made_before_cost_reads_not_measured(extracted):
    store, ref, _ = extracted
    old = {k: v for k, v in store.attrs(ref).items() if k != COST_ATTR}
    stored = StoredAttrs.from_attrs(old, "old set")
    assert stored.cost is None
    assert gflops(None) == NOT_MEASURED
    assert gflops(2.5e9) == "2.5"


def test_measuring_draws_nothing_from_the_seeds():
    # Dropout in train mode draws from torch's generator at every forward: measuring must not move it.
    torch.manual_seed(3)
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.Dropout(0.5)).train()
    before = torch.random.get_rng_state()
    cost = measure_compute(net, net, 8, torch.float32, torch.device("cpu"), 4, {"d100": 144})
    assert torch.equal(torch.random.get_rng_state(), before)
    assert cost["flops_per_image"] == 2 * 3 * 4 * 3 * 3 * 6 * 6 and cost["timed_batch"] == 4


def test_feature_arrays_are_bit_identical_without_the_measurement(extracted, tmp_path, monkeypatch):
    store, ref, _ = extracted
    ds = ingest("aptos2019", make_suite(tmp_path / "suite", scale=0.05, image_size=32)["aptos2019"], "aptos")
    monkeypatch.setattr(extraction_sets, "measure_compute", lambda *args: {})  # as before cost existed
    bare = FeatureStore(str(tmp_path / "bare.zarr"))
    extract(ds, ENTRY, bare, chunk_rows=16, batch_size=24, threads=1)
    group, other = store.root()[ref.path], bare.root()[ref.path]
    assert isinstance(group, zarr.Group) and isinstance(other, zarr.Group)
    names = sorted(name for name, node in group.members(max_depth=None) if isinstance(node, zarr.Array))
    assert names == sorted(n for n, node in other.members(max_depth=None) if isinstance(node, zarr.Array))
    assert len(names) > 1
    for name in names:
        a, b = group[name], other[name]
        assert isinstance(a, zarr.Array) and isinstance(b, zarr.Array)
        assert np.asarray(a[...]).tobytes() == np.asarray(b[...]).tobytes(), name


def test_a_chunked_extraction_measures_once(tmp_path, monkeypatch):
    ds = ingest("aptos2019", make_suite(tmp_path / "suite", scale=0.05, image_size=32)["aptos2019"], "aptos")
    calls = []
    measure = extraction_sets.measure_compute
    monkeypatch.setattr(extraction_sets, "measure_compute", lambda *a: calls.append(1) or measure(*a))
    store = FeatureStore(str(tmp_path / "f.zarr"))
    result = extract(ds, ENTRY, store, chunk_rows=8, batch_size=4, threads=1)
    assert ds.n_images > 8 and len(calls) == 1  # several chunks, one measurement
    extract(ds, ENTRY, store, chunk_rows=8, batch_size=4, threads=1)  # complete: nothing re-measured
    assert len(calls) == 1 and result.stored.cost is not None and result.stored.cost["timed_batch"] == 4
