"""Checkpoints as publishers ship them: nested state dicts found and recorded, declared conversions
required, pickled training checkpoints only when trusted (or after `weights convert`), and bad
files refused in one line (features/checkpoints.py). Every load that passes is checked against the
upstream forward (tests/support/fidelity_support.py)."""

from __future__ import annotations

import argparse
import dataclasses
import json

import pytest
import timm
import torch
from safetensors.torch import save_file
from support.fidelity_support import check_routes, inputs, offline_hub, seeded, small_entry, timm_vit_reference

from crsbench.core import CrsbenchError
from crsbench.features.checkpoints import convert_to_safetensors, read_checkpoint
from crsbench.features.hub import CrsbenchWarning
from crsbench.features.loaders import build_model
from crsbench.features.weights import recording_loads

SMALL_VIT = {"depth": 4, "embed_dim": 64, "num_heads": 2, "img_size": 32}


@pytest.fixture
def hub(tmp_path, monkeypatch):
    return offline_hub(tmp_path, monkeypatch)


def _vit(arch: str = "vit_base_patch16_224", **kwargs):
    return seeded(lambda: timm.create_model(arch, pretrained=False, num_classes=0, **{**SMALL_VIT, **kwargs}))


def _loaded_from(entry, path) -> list[dict[str, str]]:
    with recording_loads() as loads:
        build_model(entry, path)
    return loads


# -- publishers' variants ---------------------------------------------------------------------------


def test_mae_release_layout_model_entry(tmp_path, monkeypatch, hub):
    # facebookresearch/mae's mae_pretrain_vit_base.pth: {"model": the ViT encoder's state dict}.
    entry = small_entry("mae", input_size=32, model_kwargs=SMALL_VIT)
    upstream = _vit("vit_base_patch16_224.mae", global_pool="")
    path = tmp_path / "mae_pretrain_vit_base.pth"
    torch.save({"model": upstream.state_dict()}, path)
    x = inputs(32)
    check_routes(
        entry, path, timm_vit_reference(upstream, x, "mean"), x, tmp_path, monkeypatch, hub, ("weights", "env")
    )
    assert _loaded_from(entry, path) == [{"file": str(path), "state": "'model'"}]


@pytest.mark.parametrize(
    "wrap,state",
    [
        (
            lambda s: {"state_dict": {f"module.{k}": v for k, v in s.items()}, "epoch": 3},
            "'state_dict' without its DataParallel 'module.' prefix",
        ),
        (lambda s: {f"module.{k}": v for k, v in s.items()}, "top-level without its DataParallel 'module.' prefix"),
        (lambda s: {"model": {"head.weight": torch.zeros(3, 3)}, "model_ema": s}, "'model_ema'"),
    ],
)
def test_nested_and_data_parallel_variants_take_the_first_that_fits(wrap, state, tmp_path, monkeypatch, hub):
    entry = small_entry("vit-b16", input_size=32, model_kwargs=SMALL_VIT)
    upstream = _vit()
    path = tmp_path / "vit.pth"
    torch.save(wrap(upstream.state_dict()), path)
    x = inputs(32)
    check_routes(entry, path, timm_vit_reference(upstream, x, "cls"), x, tmp_path, monkeypatch, hub, ("weights",))
    assert _loaded_from(entry, path) == [{"file": str(path), "state": state}]


def test_no_variant_fits_names_the_closest(tmp_path):
    entry = small_entry("vit-b16", input_size=32, model_kwargs=SMALL_VIT)
    state = _vit(depth=3).state_dict()  # one block short
    torch.save({"model": state, "model_ema": {"x": torch.zeros(1)}}, tmp_path / "short.pth")
    with pytest.raises(CrsbenchError, match=r"closest: the 'model' state dict\): \d+ missing keys \(blocks\.3\."):
        build_model(entry, tmp_path / "short.pth")


# -- declared conversions are required -------------------------------------------------------------


def test_biovil_refuses_a_plain_resnet50(tmp_path):
    entry = small_entry("biovil", input_size=64, model_kwargs={"layers": (1, 1, 1, 1)})
    plain = timm.create_model("resnet50", pretrained=False, layers=(1, 1, 1, 1))
    torch.save(plain.state_dict(), tmp_path / "resnet50.pth")
    with pytest.raises(CrsbenchError) as info:
        build_model(entry, tmp_path / "resnet50.pth")
    text = str(info.value)
    assert "no key starts with 'encoder.encoder.' (keep_prefix)" in text and "keys seen: conv1.weight" in text


def test_panderm_refuses_a_plain_vit(tmp_path):
    small = {"init_values": 0.1, **SMALL_VIT}
    entry = small_entry("panderm", input_size=32, model_kwargs=small)
    torch.save({"model": _vit("vit_large_patch16_224", init_values=0.1).state_dict()}, tmp_path / "vit.pth")
    with pytest.raises(CrsbenchError, match=r"no key starts with 'encoder\.' \(keep_prefix\); keys seen: cls_token"):
        build_model(entry, tmp_path / "vit.pth")


def test_retfound_refuses_a_file_without_its_model_entry(tmp_path):
    entry = small_entry("retfound", input_size=32, model_kwargs=SMALL_VIT)
    torch.save(_vit("vit_large_patch16_224").state_dict(), tmp_path / "flat.pth")
    with pytest.raises(CrsbenchError, match=r"no 'model' entry \(state_key\); top-level keys seen: cls_token"):
        build_model(entry, tmp_path / "flat.pth")


def test_a_declared_rename_that_matches_nothing_is_refused(tmp_path):
    # PanDerm's layout with timm's layer-scale names already: the declared gamma rename finds nothing.
    small = {"init_values": 0.1, **SMALL_VIT}
    entry = small_entry("panderm", input_size=32, model_kwargs=small)
    state = _vit("vit_large_patch16_224", init_values=0.1).state_dict()
    torch.save({f"encoder.{k}": v for k, v in state.items()}, tmp_path / "timm-names.pth")
    with pytest.raises(CrsbenchError, match=r"no key contains '\.gamma_1' \(rename to '\.ls1\.gamma'\)"):
        build_model(entry, tmp_path / "timm-names.pth")


# -- training checkpoints: pickled Python objects ------------------------------------------------------


def _training_checkpoint(tmp_path):
    """RETFound/MAE main_pretrain.py's save_model: model, optimizer, epoch, scaler, args (a Namespace)."""
    upstream = _vit("vit_large_patch16_224", global_pool="")
    state = dict(upstream.state_dict())
    state.update({"mask_token": torch.zeros(1, 1, 32), "decoder_embed.weight": torch.randn(32, 64)})
    optimizer = torch.optim.AdamW(upstream.parameters(), lr=1e-3)
    path = tmp_path / "checkpoint-799.pth"
    torch.save(
        {
            "model": state,
            "optimizer": optimizer.state_dict(),
            "epoch": 799,
            "scaler": {"scale": 65536.0, "growth_factor": 2.0},
            "args": argparse.Namespace(model="mae_vit_large_patch16", mask_ratio=0.75),
        },
        path,
    )
    return upstream, path


def test_training_checkpoint_needs_trust_or_conversion(tmp_path, monkeypatch, hub):
    entry = small_entry("retfound", input_size=32, model_kwargs=SMALL_VIT)
    upstream, path = _training_checkpoint(tmp_path)
    x = inputs(32)
    reference = timm_vit_reference(upstream, x, "mean")
    with pytest.raises(CrsbenchError) as info:
        build_model(entry, path)
    text = str(info.value)
    assert "\n" not in text and "pickled Python objects (argparse.Namespace)" in text
    assert "--trust-pickle" in text and f"crsbench weights convert --trust-pickle {path} " in text

    trusting = dataclasses.replace(entry, trust_pickle=True)  # the entry flag; --trust-pickle is the same
    with pytest.warns(CrsbenchWarning, match=f"loading {path} with weights_only=False"):
        check_routes(trusting, path, reference, x, tmp_path, monkeypatch, hub, ("weights",))

    out = tmp_path / "converted.safetensors"
    with pytest.raises(CrsbenchError, match=r"pickled Python objects \(argparse.Namespace\).*--trust-pickle"):
        convert_to_safetensors(path, out)  # the same rule as extract: no trust, no unpickling
    assert not out.exists()
    with pytest.warns(CrsbenchWarning, match="weights_only=False"):
        kept = convert_to_safetensors(path, out, trust_pickle=True)
    assert kept == {"model": len(upstream.state_dict()) + 2}  # optimizer, epoch, scaler, args left behind
    assert set(read_checkpoint(out)) == {"model"}
    check_routes(entry, out, reference, x, tmp_path, monkeypatch, hub, ("weights",))  # no trust needed


# -- bad input: one line each --------------------------------------------------------------------------


def test_bad_files_are_refused_in_one_line(tmp_path):
    entry = small_entry("vit-b16", input_size=32, model_kwargs=SMALL_VIT)
    state = _vit().state_dict()
    (tmp_path / "notes.pth").write_text("these are not weights")
    save_file(state, tmp_path / "full.safetensors")
    data = (tmp_path / "full.safetensors").read_bytes()
    (tmp_path / "cut.safetensors").write_bytes(data[:40])  # the JSON header cut short
    torch.save({k: torch.empty_like(v, device="meta") for k, v in state.items()}, tmp_path / "meta.pth")
    two = tmp_path / "two"
    two.mkdir()
    torch.save(state, two / "a.pth")
    save_file(state, two / "b.safetensors")
    cases = {
        "notes.pth": "are neither a safetensors file nor a torch checkpoint",
        "cut.safetensors": "cannot read weights",
        "meta.pth": "tensors on the meta device",
        "two": "holds 2 candidate weight files (a.pth, b.safetensors)",
    }
    for name, message in cases.items():
        with pytest.raises(CrsbenchError) as info:
            build_model(entry, tmp_path / name)
        assert message in str(info.value) and "\n" not in str(info.value), (name, str(info.value))


def test_weights_convert_command(tmp_path, capsys):
    from support.user_encoders_support import cli

    upstream, path = _training_checkpoint(tmp_path)
    out = tmp_path / "out" / "retfound.safetensors"
    capsys.readouterr()
    assert cli("weights", "convert", "--trust-pickle", str(path), str(out)) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["kept"] == {"model": len(upstream.state_dict()) + 2}
    restored = read_checkpoint(out)["model"]
    for key, value in upstream.state_dict().items():
        assert torch.equal(restored[key], value), key
    assert [p.name for p in out.parent.iterdir()] == ["retfound.safetensors"]  # no partial file left
    assert cli("weights", "convert", "--force", str(tmp_path / "absent.pth"), str(out)) == 1


def test_keys_that_do_not_fit_are_named_as_the_file_spells_them(tmp_path):
    from torch import nn

    from crsbench.features.checkpoints import load_checkpoint
    from crsbench.features.registry import KeyConversion

    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 3))
    path = tmp_path / "nested.safetensors"
    save_file(
        {
            "encoder.0.weight": torch.zeros(2, 2),
            "encoder.0.bias": torch.zeros(2),
            "encoder.1.weight": torch.zeros(3, 4),  # shape mismatch
            "encoder.head.scale": torch.zeros(1),  # the model has no place for it
        },
        str(path),
    )
    with pytest.raises(CrsbenchError) as info:
        load_checkpoint(model, path, KeyConversion(keep_prefix="encoder."), "e")
    message = str(info.value)
    assert "1 missing keys (encoder.1.bias)" in message
    assert "1 unexpected keys (encoder.head.scale)" in message
    assert "1 shape mismatches (encoder.1.weight (3, 4) vs model (3, 2))" in message
