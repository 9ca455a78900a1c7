"""User encoders from TOML tables and entry-point plugins: through extract and probe, where the
TOML files are found, and the bad-input errors (one line, exit 1, nothing written)."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
import timm
import torch
from support.user_encoders_support import (
    cli,
    isolate_registry,
    make_tiny_db,
    r18_weights,
    run_counts,
    stored_features,
)
from timm.models.vision_transformer import checkpoint_filter_fn

from crsbench.features.lookup import get_encoder
from crsbench.features.transforms import decode_image, model_input
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import read_dataset


@pytest.fixture(autouse=True)
def isolated_registry(monkeypatch, tmp_path):
    yield from isolate_registry(monkeypatch, tmp_path)


@pytest.fixture(scope="module")
def tiny_db(tmp_path_factory):
    """A warehouse holding one small generated dataset (aptos, 32 px)."""
    return make_tiny_db(tmp_path_factory)


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
    r18_weights(tmp_path / "mine.pth")
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
    assert cli("encoders", "--db", str(db), "--encoders", str(toml)) == 0
    out, err = capsys.readouterr()
    assert "encoder plugin 'derm' of crsbench-test-plugin: importing crsbench_test_plugin:encoders" in err
    listed = {r["id"]: r["origin"] for r in json.loads(out)["encoders"]}
    assert listed["my-r18"] == f"toml:{toml.resolve()}"
    assert listed["plugin-convnext"] == "plugin:crsbench-test-plugin"
    assert listed["resnet50"] == "built-in"
    assert (
        cli("extract", "--db", str(db), "--encoders", str(toml), "-e", "my-r18", "-e", "plugin-convnext", "-d", "aptos")
        == 0
    )
    assert (
        cli(
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
    runs = run_counts(db)
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
    assert cli("encoders", "--db", str(tmp_path / "w.duckdb"), "--encoders", str(toml)) == 1
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
    args = ["extract", "--db", str(db), "--encoders", str(toml), "-e", "py-enc", "-d", "aptos"]
    assert cli(*args) == 1  # code runs only from a file given with --allow-code
    assert "add --allow-code" in capsys.readouterr().err
    assert cli(*args, "--allow-code") == 1
    notice, error = capsys.readouterr().err.strip().splitlines()
    assert "importing module 'notamodel', then calling 'build'" in notice
    assert "notamodel:build returned str, not a torch nn.Module" in error
    assert not Path(str(db) + ".features.zarr").exists()


def test_toml_found_beside_the_warehouse_and_through_the_environment(tmp_path, monkeypatch, capsys):
    table = '[encoder.{}]\nsource = "timm"\nmodel = "resnet18"\npretrained = false\n'
    (tmp_path / "crsbench.toml").write_text(table.format("beside"))
    (tmp_path / "env.toml").write_text(table.format("from-env"))
    monkeypatch.setenv("CRSBENCH_ENCODERS", str(tmp_path / "env.toml"))
    assert cli("encoders", "--db", str(tmp_path / "bench.duckdb")) == 0
    listed = {r["id"]: r["origin"] for r in json.loads(capsys.readouterr().out)["encoders"]}
    assert listed["beside"] == f"toml:{tmp_path / 'crsbench.toml'}"
    assert listed["from-env"] == f"toml:{tmp_path / 'env.toml'}"
    assert not get_encoder("beside").pretrained  # random init, labelled so


DOC = Path(__file__).resolve().parents[2] / "docs" / "ADDING_AN_ENCODER.md"


def _documented_table() -> str:
    """The first TOML table of ADDING_AN_ENCODER.md, section 2, as a user copies it."""
    blocks = re.findall(r"```toml\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    return next(b for b in blocks if "[encoder.derm-vit]" in b)


def test_documented_vit_table_runs_at_another_input_size(tiny_db, tmp_path, capsys):
    """The doc's table, with only the model made tiny and the size made small: a ViT built for
    224 px extracts at 64 px from a 224 px checkpoint (no img_size / dynamic_img_size needed)."""
    table = _documented_table()
    tiny, n = re.subn(r'model = "vit_small_patch16_224"', 'model = "vit_tiny_patch16_224"', table)
    tiny, m = re.subn(r"input_size = 384", "input_size = 64", tiny)
    assert n == m == 1, "the documented table changed; update this test with it"
    assert "model_kwargs" not in tiny and "img_size" not in tiny
    (tmp_path / "encoders.toml").write_text(tiny)
    weights = tmp_path / "weights" / "derm_vit.pth"
    weights.parent.mkdir()
    torch.manual_seed(3)
    published = timm.create_model("vit_tiny_patch16_224", pretrained=False)  # 224 px, with its head
    torch.save(published.state_dict(), weights)
    db = tmp_path / "bench.duckdb"
    db.write_bytes(tiny_db.read_bytes())
    argv = ("extract", "--db", str(db), "--encoders", str(tmp_path / "encoders.toml"), "-e", "derm-vit")
    assert cli(*argv, "-d", "aptos") == 0, capsys.readouterr().err

    # Independent: timm built for 64 px, the checkpoint's position embedding resampled by timm's
    # own checkpoint filter, the documented transform, the mean over patch tokens after the norm.
    reference = timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=0, img_size=64).eval()
    state = {k: v for k, v in published.state_dict().items() if not k.startswith("head.")}
    reference.load_state_dict(checkpoint_filter_fn(state, reference))
    with Warehouse.open(db, read_only=True) as wh:
        ds = read_dataset(wh, "aptos")
    entry = get_encoder("derm-vit")
    assert entry.input_size == 64 and entry.mean == (0.6, 0.5, 0.4)
    images = torch.cat([torch.tensor(decode_image(ds.root, p))[None] for p in ds.images.rel_path[:4]])
    with torch.no_grad():
        tokens = reference.forward_features(model_input(images, entry, torch.float32))
    want = tokens[:, reference.num_prefix_tokens :].mean(dim=1).numpy()
    got = stored_features(db, "aptos", "derm-vit")[:4]
    assert got.shape == (4, 192)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3 * np.abs(want).max())  # stored as float16


def test_fixed_size_model_without_dynamic_option_is_refused_in_one_line(tiny_db, tmp_path, capsys):
    """CaiT has a fixed patch grid and no dynamic_img_size: a user error naming the size, not an assertion."""
    toml = tmp_path / "cait.toml"
    toml.write_text(
        '[encoder.cait]\nsource = "timm"\nmodel = "cait_xxs24_224"\npretrained = false\n'
        "[encoder.cait.overrides]\ninput_size = 64\n"
    )
    db = tmp_path / "bench.duckdb"
    db.write_bytes(tiny_db.read_bytes())
    assert cli("extract", "--db", str(db), "--encoders", str(toml), "-e", "cait", "-d", "aptos") == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "takes 224x224 px input only, not input_size 64" in err and "img_size = 64" in err
    assert not Path(str(db) + ".features.zarr").exists()
