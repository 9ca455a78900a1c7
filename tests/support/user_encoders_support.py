"""Shared helpers of the user-encoder tests (tests/features/test_user_*.py): an isolated encoder
registry, a small ingested warehouse, the CLI in JSON mode, and reading back what a run stored."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import timm
import torch

from crsbench.cli import main
from crsbench.cli.output import console
from crsbench.features import lookup, registry, user
from crsbench.ingest import ingest, make_suite
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset

torch.set_num_threads(1)


def isolate_registry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Each test sees only the built-in entries plus what it registers itself (the autouse fixture)."""
    lookup.list_encoders()
    saved = (set(registry.ENCODERS.names()), dict(user._files), dict(user._loaded_files), set(user._loaded_plugins))
    monkeypatch.delenv("CRSBENCH_ENCODERS", raising=False)
    monkeypatch.delenv("CRSBENCH_ALLOW_CODE", raising=False)
    monkeypatch.setattr(user, "_env_trust", user.GIVEN)
    monkeypatch.delenv("CRSBENCH_ALLOW_DOWNLOAD", raising=False)
    monkeypatch.setenv("CRSBENCH_WEIGHTS", str(tmp_path / "no-weights"))
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    yield
    for name in registry.ENCODERS.names():
        if name not in saved[0]:
            registry.ENCODERS.remove(name)
    user._files.clear()
    user._files.update(saved[1])
    user._loaded_files.clear()
    user._loaded_files.update(saved[2])
    user._loaded_plugins.clear()
    user._loaded_plugins.update(saved[3])
    user._scanned_path = ()


def make_tiny_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse holding one small generated dataset (aptos, 32 px)."""
    root = tmp_path_factory.mktemp("suite")
    paths = make_suite(root, scale=0.05, image_size=32)
    db = tmp_path_factory.mktemp("wh") / "bench.duckdb"
    with Warehouse.open(db) as wh:
        load_dataset(wh, ingest("aptos2019", paths["aptos2019"], "aptos"))
    return db


def cli(*args: str) -> int:
    console.configure(json_mode=True)
    try:
        return main(["--json", *args])
    finally:
        console.configure()


def r18_weights(path: Path, arch: str = "resnet18") -> Path:
    torch.manual_seed(7)
    model = timm.create_model(arch, pretrained=False)  # with its classifier, as timm publishes
    torch.save(model.state_dict(), path)
    return path


def stored_features(db: Path, dataset: str, encoder: str) -> np.ndarray:
    import zarr

    group = zarr.open_group(str(db) + ".features.zarr", mode="r")[f"{dataset}/{encoder}"]
    return np.asarray(group["d100/clean"][:], dtype=np.float32)


def run_counts(db: Path) -> dict[str, int]:
    with Warehouse.open(db, read_only=True) as wh:
        frame = wh.sql("select encoder_id, count(*) n from runs group by encoder_id")
    return dict(zip(frame.encoder_id, frame.n, strict=True))
