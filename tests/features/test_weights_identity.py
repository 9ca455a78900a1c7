"""Weights are part of a feature set's identity: a complete set is skipped only for the weights it
was made with; other weights are refused naming both hashes, and `--force` replaces the set and
retires the probe fits trained on it, so `probe` refits under new fit ids."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import timm
import torch
import zarr
from support.user_encoders_support import cli, isolate_registry, make_tiny_db, stored_features

from crsbench.features.loaders import build_model, state_dict_hash
from crsbench.features.lookup import get_encoder
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.parts import parts_dir_for

ENC = "tiny-resnet18"


@pytest.fixture(autouse=True)
def isolated_registry(monkeypatch, tmp_path):
    yield from isolate_registry(monkeypatch, tmp_path)


@pytest.fixture(scope="module")
def tiny_db(tmp_path_factory):
    return make_tiny_db(tmp_path_factory)


@pytest.fixture
def db(tmp_path, tiny_db):
    path = tmp_path / "bench.duckdb"
    shutil.copyfile(tiny_db, path)
    if parts_dir_for(tiny_db).exists():
        shutil.copytree(parts_dir_for(tiny_db), parts_dir_for(path))
    return path


def _weights(tmp_path, name: str, seed: int | None):
    """The tiny entry's own random init (seed None) or other weights, as timm publishes them."""
    if seed is None:
        state = build_model(get_encoder(ENC)).state_dict()
    else:
        torch.manual_seed(seed)
        state = timm.create_model("resnet18", pretrained=False).state_dict()  # classifier included
    torch.save(state, tmp_path / name)
    return tmp_path / name


def _extract(db, *extra: str) -> int:
    return cli("extract", "--db", str(db), "-e", ENC, "-d", "aptos", "--batch-size", "16", "--threads", "1", *extra)


def _attrs(db) -> dict:
    return dict(zarr.open_group(str(db) + ".features.zarr", mode="r")[f"aptos/{ENC}"].attrs)


def _fit_ids(db, view: str = "runs") -> set[str]:
    with Warehouse.open(db, read_only=True) as wh:
        frame = wh.sql(f"select distinct fit_id from {view} where encoder_id = '{ENC}'")
    return set(frame.fit_id)


def _last_json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


def test_other_weights_are_refused_and_the_same_weights_skipped(db, tmp_path, capsys):
    assert _extract(db) == 0
    capsys.readouterr()
    before = stored_features(db, "aptos", ENC)
    made_with = _attrs(db)["weights_hash"]
    assert made_with == state_dict_hash(build_model(get_encoder(ENC)))

    # The same weights in a file: read (the files differ), hashed equal, skipped.
    same = _weights(tmp_path, "same.pth", None)
    assert _extract(db, "--weights", str(same)) == 0
    assert _last_json(capsys)["feature_sets"][0]["status"] == "skipped (complete)"
    assert _attrs(db)["weights_source"][0][0] == str(same.resolve())  # remembered: the next check is cheap

    # Other weights: one line naming both hashes and both ways out; nothing written.
    other = _weights(tmp_path, "other.pth", 7)
    new_hash = state_dict_hash(build_model(get_encoder(ENC), other))
    assert new_hash != made_with
    assert _extract(db, "--weights", str(other)) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert made_with[:16] in err and new_hash[:16] in err
    assert "--force" in err and "new encoder id" in err and str(other) in err
    np.testing.assert_array_equal(stored_features(db, "aptos", ENC), before)
    assert _attrs(db)["weights_hash"] == made_with

    # --weights is read even when the set is complete: a broken file is named.
    broken = tmp_path / "broken.pth"
    broken.write_bytes(b"not a checkpoint at all")
    assert _extract(db, "--weights", str(broken)) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "neither a safetensors file nor a torch checkpoint" in err


def test_force_with_other_weights_retires_the_fits_and_probe_refits(db, tmp_path, capsys):
    probe = (
        "probe",
        "--db",
        str(db),
        "-e",
        ENC,
        "-d",
        "aptos",
        "-p",
        "logreg",
        "--fraction",
        "1.0",
        "--seed",
        "0",
        "--depth",
        "1.0",
    )
    assert _extract(db) == 0
    assert cli(*probe) == 0
    first = _fit_ids(db)
    assert len(first) == 1

    # Other weights, as a DataParallel training script saves them: found, loaded, recorded.
    plain = torch.load(_weights(tmp_path, "plain.pth", 7))
    other = tmp_path / "other.pth"
    torch.save({"state_dict": {f"module.{k}": v for k, v in plain.items()}, "epoch": 3}, other)
    capsys.readouterr()
    assert _extract(db, "--weights", str(other), "--force") == 0
    row = _last_json(capsys)["feature_sets"][0]
    assert row["status"] == "extracted" and row["retired_fits"] == 1
    taken = "'state_dict' without its DataParallel 'module.' prefix"
    assert row["weights"] == f"{taken} of other.pth"
    assert _attrs(db)["weights_loaded"] == [{"file": str(other), "state": taken}]
    assert _attrs(db)["weights_hash"] == state_dict_hash(build_model(get_encoder(ENC), other))
    assert _fit_ids(db) == set() and _fit_ids(db, "retired_runs") == first
    with Warehouse.open(db, read_only=True) as wh:
        reasons = wh.sql("select distinct reason, data_digest from retired_fits")
        retired_sets = wh.sql(f"select weights_hash from feature_sets where encoder_id = '{ENC}'")
    assert list(reasons.reason) == ["weights replaced"]
    assert retired_sets.weights_hash.tolist() == [_attrs(db)["weights_hash"]]

    assert cli(*probe) == 0
    second = _fit_ids(db)
    assert len(second) == 1 and not (second & first)

    # Back to the first weights: their fits come back, the second ones are retired.
    same = _weights(tmp_path, "same.pth", None)
    assert _extract(db, "--weights", str(same), "--force") == 0
    assert _fit_ids(db) == first and _fit_ids(db, "retired_runs") == second
    capsys.readouterr()
    assert cli(*probe) == 0
    summary = _last_json(capsys)
    assert (summary["fitted"], summary["skipped"]) == (0, 1)  # nothing to refit


def test_a_training_checkpoint_extracts_only_with_trust_pickle(db, tmp_path, capsys):
    import argparse

    state = torch.load(_weights(tmp_path, "plain.pth", 7))
    checkpoint = tmp_path / "checkpoint-99.pth"
    torch.save({"model": state, "epoch": 99, "args": argparse.Namespace(lr=1e-3)}, checkpoint)
    capsys.readouterr()
    assert _extract(db, "--weights", str(checkpoint)) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pickled Python objects (argparse.Namespace)" in err, err
    assert "crsbench weights convert" in err and not Path(str(db) + ".features.zarr").exists()

    assert _extract(db, "--weights", str(checkpoint), "--trust-pickle") == 0
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [
        f"warning: loading {checkpoint} with weights_only=False (--trust-pickle): it holds pickled Python "
        "objects (argparse.Namespace)"
    ]
    assert json.loads(captured.out)["feature_sets"][0]["weights"] == "'model' of checkpoint-99.pth"
