"""Encoders without a source edit: timm:/hf:/open_clip: ids, TOML tables, entry-point plugins,
offline weights, and the bad-input errors (one line, exit 1, nothing written)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
import timm
import torch

from crsbench.cli import main
from crsbench.features import registry, user
from crsbench.features.registry import get_encoder
from crsbench.features.transforms import decode_image, model_input
from crsbench.features.weights import download_policy, resolve_weights, weights_status
from crsbench.ingest import ingest, make_suite
from crsbench.ingest.types import CrsbenchError
from crsbench.output import console
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def isolated_registry(monkeypatch, tmp_path):
    """Each test sees only the built-in entries plus what it registers itself."""
    registry.list_encoders()
    saved = (set(registry.ENCODERS.names()), list(user._files), dict(user._loaded_files), set(user._loaded_plugins))
    monkeypatch.delenv("CRSBENCH_ENCODERS", raising=False)
    monkeypatch.delenv("CRSBENCH_ALLOW_DOWNLOAD", raising=False)
    monkeypatch.setenv("CRSBENCH_WEIGHTS", str(tmp_path / "no-weights"))
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    yield
    for name in registry.ENCODERS.names():
        if name not in saved[0]:
            registry.ENCODERS.remove(name)
    user._files[:] = saved[1]
    user._loaded_files.clear()
    user._loaded_files.update(saved[2])
    user._loaded_plugins.clear()
    user._loaded_plugins.update(saved[3])
    user._scanned_path = ()


@pytest.fixture(scope="module")
def tiny_db(tmp_path_factory):
    """A warehouse holding one small generated dataset (aptos, 32 px)."""
    root = tmp_path_factory.mktemp("suite")
    paths = make_suite(root, scale=0.05, image_size=32)
    db = tmp_path_factory.mktemp("wh") / "bench.duckdb"
    with Warehouse.open(db) as wh:
        load_dataset(wh, ingest("aptos2019", paths["aptos2019"], "aptos"))
    return db


def _cli(*args: str) -> int:
    console.configure(json_mode=True)
    try:
        return main(["--json", *args])
    finally:
        console.configure()


def _r18_weights(path: Path, arch: str = "resnet18") -> Path:
    torch.manual_seed(7)
    model = timm.create_model(arch, pretrained=False)  # with its classifier, as timm publishes
    torch.save(model.state_dict(), path)
    return path


def _stored(db: Path, dataset: str, encoder: str) -> np.ndarray:
    import zarr

    group = zarr.open_group(str(db) + ".features.zarr", mode="r")[f"{dataset}/{encoder}"]
    return np.asarray(group["d100/clean"][:], dtype=np.float32)


def _runs(db: Path) -> dict[str, int]:
    with Warehouse.open(db, read_only=True) as wh:
        frame = wh.sql("select encoder_id, count(*) n from runs group by encoder_id")
    return dict(zip(frame.encoder_id, frame.n))


def test_timm_id_extract_then_probe_matches_timm_forward(tiny_db, tmp_path, capsys):
    db = tmp_path / "bench.duckdb"
    db.write_bytes(tiny_db.read_bytes())
    weights = _r18_weights(tmp_path / "r18.pth")
    assert (
        _cli(
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
        _cli(
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
    assert _runs(db).get("timm:resnet18", 0) > 0

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
    got = _stored(db, "aptos", "timm:resnet18")[:6]
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
    weights = _r18_weights(tmp_path / "r34.pth", "resnet34")
    db = tmp_path / "bench.duckdb"
    db.write_bytes(tiny_db.read_bytes())
    assert _cli("extract", "--db", str(db), "-e", "timm:resnet18", "--weights", str(weights), "-d", "aptos") == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "unexpected keys (layer1.2." in err and "timm:resnet18" in err
    assert not Path(str(db) + ".features.zarr").exists()


def _plugin(tmp_path: Path, monkeypatch) -> None:
    """A pip-installed plugin, as importlib.metadata sees one: a dist-info with an entry point."""
    site = tmp_path / "site"
    (site / "crsbench_test_plugin-0.1.dist-info").mkdir(parents=True)
    (site / "crsbench_test_plugin-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: crsbench-test-plugin\nVersion: 0.1\n"
    )
    (site / "crsbench_test_plugin-0.1.dist-info" / "entry_points.txt").write_text(
        "[crsbench.encoders]\nderm = crsbench_test_plugin:encoders\n"
    )
    (site / "crsbench_test_plugin.py").write_text(
        textwrap.dedent("""
        import timm
        from crsbench.features.by_id import entry_from_id

        def encoders():
            return [entry_from_id("timm:convnext_atto", id="plugin-convnext", pretrained=False,
                                  input_size=32, scope="specialty", domain="derm")]
    """)
    )
    monkeypatch.syspath_prepend(str(site))


def test_toml_and_plugin_encoders_run_through_extract_and_probe(tiny_db, tmp_path, monkeypatch, capsys):
    db = tmp_path / "bench.duckdb"
    db.write_bytes(tiny_db.read_bytes())
    _r18_weights(tmp_path / "mine.pth")
    toml = tmp_path / "encoders.toml"
    toml.write_text(
        textwrap.dedent("""
        [encoder.my-r18]
        source = "timm"
        model = "resnet18"
        weights = "mine.pth"
        scope = "specialty"
        domain = "eye"
        [encoder.my-r18.overrides]
        input_size = 32
    """)
    )
    _plugin(tmp_path, monkeypatch)
    assert _cli("encoders", "--db", str(db), "--encoders", str(toml)) == 0
    listed = {r["id"]: r["origin"] for r in json.loads(capsys.readouterr().out)["encoders"]}
    assert listed["my-r18"] == f"toml:{toml.resolve()}"
    assert listed["plugin-convnext"] == "plugin:crsbench-test-plugin"
    assert listed["resnet50"] == "built-in"
    assert (
        _cli(
            "extract", "--db", str(db), "--encoders", str(toml), "-e", "my-r18", "-e", "plugin-convnext", "-d", "aptos"
        )
        == 0
    )
    assert (
        _cli(
            "probe",
            "--db",
            str(db),
            "-e",
            "my-r18",
            "-e",
            "plugin-convnext",
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
    runs = _runs(db)
    assert runs.get("my-r18", 0) > 0 and runs.get("plugin-convnext", 0) > 0
    with Warehouse.open(db, read_only=True) as wh:
        rows = wh.sql("select encoder_id, scope, domain, pretrained from encoders order by encoder_id")
    assert rows.values.tolist() == [
        ["my-r18", "specialty", "eye", True],
        ["plugin-convnext", "specialty", "derm", False],
    ]


@pytest.mark.parametrize(
    "body,expected",
    [
        ('[encoder.x]\nsource = "timm"\nmodel = "resnet18"\ncolour = "red"\n', "[encoder.x] unknown field 'colour'"),
        (
            '[encoder.x]\nsource = "timm"\nmodel = "resnet18"\npretrained = "yes"\n',
            "[encoder.x] field 'pretrained' must be true or false",
        ),
        (
            '[encoder.x]\nsource = "timm"\nmodel = "resnet18"\n[encoder.x.overrides]\ninput_size = "big"\n',
            "[encoder.x.overrides] field 'input_size' must be of type int",
        ),
        ('[encoder.x]\nsource = "keras"\nmodel = "m"\n', "field 'source' must be one of"),
    ],
)
def test_bad_toml_names_file_table_and_field(tmp_path, capsys, body, expected):
    toml = tmp_path / "bad.toml"
    toml.write_text(body)
    assert _cli("encoders", "--db", str(tmp_path / "w.duckdb"), "--encoders", str(toml)) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(toml) in err and expected in err


def test_python_source_must_return_a_module(tmp_path, monkeypatch, tiny_db, capsys):
    (tmp_path / "notamodel.py").write_text("def build():\n    return 'a string'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    toml = tmp_path / "py.toml"
    toml.write_text(
        textwrap.dedent("""
        [encoder.py-enc]
        source = "python"
        model = "notamodel:build"
        [encoder.py-enc.overrides]
        input_size = 32
        mean = [0.5, 0.5, 0.5]
        std = [0.5, 0.5, 0.5]
        depth_blocks = "blocks"
    """)
    )
    db = tmp_path / "bench.duckdb"
    db.write_bytes(tiny_db.read_bytes())
    assert _cli("extract", "--db", str(db), "--encoders", str(toml), "-e", "py-enc", "-d", "aptos") == 1
    err = capsys.readouterr().err.strip()
    assert "notamodel:build returned str, not a torch nn.Module" in err and len(err.splitlines()) == 1
    assert not Path(str(db) + ".features.zarr").exists()


def test_unknown_id_suggests_close_matches():
    with pytest.raises(CrsbenchError, match="did you mean.*biomedclip"):
        get_encoder("biomedclp")
    with pytest.raises(CrsbenchError, match="timm has no model 'resnet1800'"):
        get_encoder("timm:resnet1800")


def test_absent_weights_name_every_file_and_where(tmp_path, capsys, tiny_db):
    db = tmp_path / "bench.duckdb"
    db.write_bytes(tiny_db.read_bytes())
    assert _cli("extract", "--db", str(db), "-e", "timm:resnet18", "-d", "aptos") == 1
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
    with pytest.raises(CrsbenchError, match="open_clip_config.json, open_clip_pytorch_model.bin"):
        entry.build()
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
    with pytest.raises(CrsbenchError, match="lacks open_clip_pytorch_model.bin or open_clip_model.safetensors"):
        entry.build()
    visual = _build_vision_tower(16, {**cfg["vision_cfg"], "timm_model_pretrained": False})
    torch.save({f"visual.{k}": v for k, v in visual.state_dict().items()}, folder / "open_clip_pytorch_model.bin")
    assert weights_status(entry) == "local"  # the text tower's repo is not needed, and not cached
    assert entry.build()(torch.zeros(1, 3, 224, 224)).shape == (1, 16)


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
    feats = DepthTap(entry.build(), entry)(x)
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
    feats = DepthTap(entry.build(tmp_path / "clip.pt"), entry)(x)
    with torch.no_grad():
        torch.testing.assert_close(feats[1.0], upstream.encode_image(x), rtol=1e-5, atol=1e-6)


def test_toml_found_beside_the_warehouse_and_through_the_environment(tmp_path, monkeypatch, capsys):
    table = '[encoder.{}]\nsource = "timm"\nmodel = "resnet18"\npretrained = false\n'
    (tmp_path / "crsbench.toml").write_text(table.format("beside"))
    (tmp_path / "env.toml").write_text(table.format("from-env"))
    monkeypatch.setenv("CRSBENCH_ENCODERS", str(tmp_path / "env.toml"))
    assert _cli("encoders", "--db", str(tmp_path / "bench.duckdb")) == 0
    listed = {r["id"]: r["origin"] for r in json.loads(capsys.readouterr().out)["encoders"]}
    assert listed["beside"] == f"toml:{tmp_path / 'crsbench.toml'}"
    assert listed["from-env"] == f"toml:{tmp_path / 'env.toml'}"
    assert not get_encoder("beside").pretrained  # random init, labelled so


def test_a_second_repo_is_checked_by_check_weights_and_by_loading(tmp_path, monkeypatch):
    import dataclasses

    from huggingface_hub import constants

    weights = _r18_weights(tmp_path / "r18.pth")
    entry = dataclasses.replace(
        get_encoder("timm:resnet18"), extra_repos=("org/text-tower",), weights_path=str(weights)
    )
    assert weights_status(entry) == "missing"
    with pytest.raises(CrsbenchError, match="also needs the hub repo.* org/text-tower"):
        entry.build()
    snap = Path(constants.HF_HUB_CACHE) / "models--org--text-tower" / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (snap.parent.parent / "refs").mkdir()
    (snap.parent.parent / "refs" / "main").write_text("0" * 40)
    assert weights_status(entry) == "local"
    assert entry.build() is not None
