"""Library ids as encoders without a source edit (timm:/hf:/open_clip:): extract and probe
through the CLI, the architecture check, and close-match suggestions for unknown ids."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import timm
import torch
from support.user_encoders_support import cli, isolate_registry, make_tiny_db, r18_weights, run_counts, stored_features

from crsbench.core import CrsbenchError
from crsbench.features.loaders import build_model
from crsbench.features.lookup import get_encoder
from crsbench.features.transforms import decode_image, model_input
from crsbench.warehouse.connection import Warehouse


@pytest.fixture(autouse=True)
def isolated_registry(monkeypatch, tmp_path):
    yield from isolate_registry(monkeypatch, tmp_path)


@pytest.fixture(scope="module")
def tiny_db(tmp_path_factory):
    """A warehouse holding one small generated dataset (aptos, 32 px)."""
    return make_tiny_db(tmp_path_factory)


def test_timm_id_extract_then_probe_matches_timm_forward(tiny_db, tmp_path, capsys):
    db = tmp_path / "bench.duckdb"
    db.write_bytes(tiny_db.read_bytes())
    weights = r18_weights(tmp_path / "r18.pth")
    assert (
        cli(
            "extract",
            "--db",
            str(db),
            "-e",
            "timm:resnet18",
            "--weights",
            str(weights),
            "-d",
            "aptos",
            "--dtype",
            "float32",
        )
        == 0
    )
    assert (
        cli(
            "probe",
            "--db",
            str(db),
            "-e",
            "timm:resnet18",
            "-d",
            "aptos",
            "--probe",
            "logreg",
            "--depth",
            "1.0",
            "--fraction",
            "1.0",
            "--seed",
            "0",
        )
        == 0
    )
    assert run_counts(db).get("timm:resnet18", 0) > 0

    # Independent: timm's own model, the published state dict, the documented transform.
    reference = timm.create_model("resnet18", pretrained=False, num_classes=0).eval()
    state = torch.load(weights, weights_only=True)
    reference.load_state_dict({k: v for k, v in state.items() if not k.startswith("fc.")})
    from crsbench.warehouse.datasets import read_dataset

    with Warehouse.open(db, read_only=True) as wh:
        ds = read_dataset(wh, "aptos")
        spec = wh.sql("select origin, spec, weights_hash, pretrained from encoders where encoder_id = 'timm:resnet18'")
    entry = get_encoder("timm:resnet18")
    images = torch.cat([torch.tensor(decode_image(ds.root, p))[None] for p in ds.images.rel_path[:6]])
    with torch.no_grad():
        want = reference(model_input(images, entry, torch.float32)).numpy()
    got = stored_features(db, "aptos", "timm:resnet18")[:6]
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()
    # The resolved spec is in the warehouse: timm's preprocessing, the hooked stages, pooling, hash.
    row = spec.iloc[0]
    resolved = json.loads(row["spec"])
    assert row["origin"] == "id" and bool(row["pretrained"]) and len(row["weights_hash"]) == 64
    assert resolved["input_size"] == 224 and resolved["mean"] == pytest.approx([0.485, 0.456, 0.406])
    assert resolved["depth_blocks"] == ["layer1", "layer2", "layer3", "layer4"]
    assert resolved["pooling"] == "projection"
    # A rescan of the store registers the entry that ran, from the store's own record.
    with Warehouse.open(db) as wh:
        wh.sql("delete from encoders")
        from crsbench.warehouse import catalog

        catalog.sync_catalog(wh, str(db) + ".features.zarr")
        again = wh.sql("select spec, weights_hash from encoders where encoder_id = 'timm:resnet18'")
    assert json.loads(again.iloc[0]["spec"]) == resolved and again.iloc[0]["weights_hash"] == row["weights_hash"]


def test_wrong_architecture_is_refused_naming_keys_and_writes_nothing(tiny_db, tmp_path, capsys):
    weights = r18_weights(tmp_path / "r34.pth", "resnet34")
    db = tmp_path / "bench.duckdb"
    db.write_bytes(tiny_db.read_bytes())
    assert cli("extract", "--db", str(db), "-e", "timm:resnet18", "--weights", str(weights), "-d", "aptos") == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "unexpected keys (layer1.2." in err and "timm:resnet18" in err
    assert not Path(str(db) + ".features.zarr").exists()


def test_unknown_id_suggests_close_matches():
    with pytest.raises(CrsbenchError, match=r"did you mean.*biomedclip"):
        get_encoder("biomedclp")
    with pytest.raises(CrsbenchError, match="timm has no model 'resnet1800'"):
        get_encoder("timm:resnet1800")


def test_hf_folder_id_reads_the_processor_config_and_blocks(tmp_path):
    import transformers as T

    from crsbench.features.hooks import DepthTap

    config = T.Dinov2Config(
        hidden_size=32, intermediate_size=64, num_hidden_layers=4, num_attention_heads=2, image_size=28, patch_size=14
    )
    torch.manual_seed(0)
    upstream = T.Dinov2Model(config).eval()
    folder = tmp_path / "my-dino"
    upstream.save_pretrained(folder)
    (folder / "preprocessor_config.json").write_text(
        json.dumps(
            {
                "do_center_crop": True,
                "crop_size": {"height": 28, "width": 28},
                "size": {"shortest_edge": 32},
                "image_mean": [0.1, 0.2, 0.3],
                "image_std": [0.4, 0.5, 0.6],
            }
        )
    )
    entry = get_encoder(f"hf:{folder}")
    assert (entry.input_size, entry.mean, entry.std) == (28, (0.1, 0.2, 0.3), (0.4, 0.5, 0.6))
    assert (entry.depth_blocks, entry.final_norm, entry.origin) == ("encoder.layer", "layernorm", "id")
    assert entry.id == "hf:my-dino"  # one store path segment
    x = torch.randn(2, 3, 28, 28, generator=torch.Generator().manual_seed(1))
    feats = DepthTap(build_model(entry), entry)(x)
    with torch.no_grad():
        out = upstream(pixel_values=x, output_hidden_states=True)
    torch.testing.assert_close(feats[1.0], out.pooler_output, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(feats[0.5], upstream.layernorm(out.hidden_states[2])[:, 0], rtol=1e-5, atol=1e-6)


def test_open_clip_arch_id_with_a_weights_file(tmp_path):
    import open_clip

    from crsbench.features.hooks import DepthTap

    cfg = open_clip.get_model_config("ViT-B-32")
    cfg["vision_cfg"].update({"width": 64, "layers": 4, "image_size": 64})
    cfg["text_cfg"].update({"width": 32, "layers": 1, "heads": 2, "context_length": 8})
    cfg["embed_dim"] = 16
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "crsbench-test-b32.json").write_text(json.dumps(cfg))
    open_clip.add_model_config(tmp_path / "cfg")
    torch.manual_seed(0)
    upstream = open_clip.create_model("crsbench-test-b32").eval()
    torch.save(upstream.state_dict(), tmp_path / "clip.pt")
    entry = get_encoder("open_clip:crsbench-test-b32")
    assert entry.input_size == 64 and entry.depth_blocks == "transformer.resblocks"
    x = torch.randn(2, 3, 64, 64, generator=torch.Generator().manual_seed(1))
    feats = DepthTap(build_model(entry, tmp_path / "clip.pt"), entry)(x)
    with torch.no_grad():
        torch.testing.assert_close(feats[1.0], upstream.encode_image(x), rtol=1e-5, atol=1e-6)
