"""Offline weights of user and library encoders: absent files are named with where they were
looked for, downloads happen only when allowed, and `check-weights` agrees with loading."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from support.user_encoders_support import cli, isolate_registry, make_tiny_db, r18_weights

from crsbench.core import CrsbenchError
from crsbench.features.loaders import build_model
from crsbench.features.lookup import get_encoder
from crsbench.features.weights import download_policy, resolve_weights, weights_status


@pytest.fixture(autouse=True)
def isolated_registry(monkeypatch, tmp_path):
    yield from isolate_registry(monkeypatch, tmp_path)


@pytest.fixture(scope="module")
def tiny_db(tmp_path_factory):
    """A warehouse holding one small generated dataset (aptos, 32 px)."""
    return make_tiny_db(tmp_path_factory)


def test_absent_weights_name_every_file_and_where(tmp_path, capsys, tiny_db):
    db = tmp_path / "bench.duckdb"
    db.write_bytes(tiny_db.read_bytes())
    assert cli("extract", "--db", str(db), "-e", "timm:resnet18", "-d", "aptos") == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "model.safetensors" in err and str(tmp_path / "no-weights" / "timm:resnet18") in err
    assert "--allow-download" in err and "timm/resnet18.a1_in1k" in err
    assert not Path(str(db) + ".features.zarr").exists()


def test_downloads_only_when_allowed(tmp_path, monkeypatch):
    import huggingface_hub

    calls = []

    def fake_download(repo, filename, **kwargs):
        calls.append((repo, filename))
        target = tmp_path / "dl" / filename
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(b"x")
        return str(target)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)
    entry = get_encoder("resnet50")
    with pytest.raises(CrsbenchError, match="never downloads weights unless asked"):
        resolve_weights(entry)
    assert calls == []
    with download_policy(True):
        assert resolve_weights(entry) == tmp_path / "dl" / "model.safetensors"
    monkeypatch.setenv("CRSBENCH_ALLOW_DOWNLOAD", "1")
    resolve_weights(entry)
    assert calls == [("timm/resnet50.a1_in1k", "model.safetensors")] * 2


def test_check_weights_and_offline_biomedclip_extraction_agree(tmp_path, monkeypatch):
    from open_clip.model import _build_vision_tower

    entry = get_encoder("biomedclip")
    assert weights_status(entry) == "missing"
    with pytest.raises(CrsbenchError, match=re.escape("open_clip_config.json, open_clip_pytorch_model.bin")):
        build_model(entry)
    folder = tmp_path / "w" / "biomedclip"
    folder.mkdir(parents=True)
    monkeypatch.setenv("CRSBENCH_WEIGHTS", str(tmp_path / "w"))
    cfg = {
        "embed_dim": 16,
        "vision_cfg": {
            "timm_model_name": "vit_tiny_patch16_224",
            "timm_pool": "",
            "timm_proj": "linear",
            "image_size": 224,
        },
        "text_cfg": {"hf_model_name": "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract"},
    }
    (folder / "open_clip_config.json").write_text(json.dumps({"model_cfg": cfg}))
    assert weights_status(entry) == "missing"  # config without weights: both say so
    with pytest.raises(
        CrsbenchError, match=re.escape("lacks open_clip_pytorch_model.bin or open_clip_model.safetensors")
    ):
        build_model(entry)
    visual = _build_vision_tower(16, {**cfg["vision_cfg"], "timm_model_pretrained": False})
    torch.save({f"visual.{k}": v for k, v in visual.state_dict().items()}, folder / "open_clip_pytorch_model.bin")
    assert weights_status(entry) == "local"  # the text tower's repo is not needed, and not cached
    assert build_model(entry)(torch.zeros(1, 3, 224, 224)).shape == (1, 16)


def test_a_second_repo_is_checked_by_check_weights_and_by_loading(tmp_path, monkeypatch):
    import dataclasses

    from huggingface_hub import constants

    weights = r18_weights(tmp_path / "r18.pth")
    entry = dataclasses.replace(
        get_encoder("timm:resnet18"), extra_repos=("org/text-tower",), weights_path=str(weights)
    )
    assert weights_status(entry) == "missing"
    with pytest.raises(CrsbenchError, match=r"also needs the hub repo.* org/text-tower"):
        build_model(entry)
    snap = Path(constants.HF_HUB_CACHE) / "models--org--text-tower" / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (snap.parent.parent / "refs").mkdir()
    (snap.parent.parent / "refs" / "main").write_text("0" * 40)
    assert weights_status(entry) == "local"
    assert build_model(entry) is not None
