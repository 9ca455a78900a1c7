"""Fidelity of the timm-published families (ViT-B/16, MAE, ResNet-50) and RETFound's MAE
pretraining dict: a hub `model.safetensors` of the full model or `{"model": state}` loads exactly
and every depth matches the upstream forward (tests/support/fidelity_support.py)."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import save_file
from support.fidelity_support import (
    check_routes,
    inputs,
    offline_hub,
    resnet_reference,
    seeded,
    small_entry,
    timm_vit_reference,
)


@pytest.fixture
def hub(tmp_path, monkeypatch):
    return offline_hub(tmp_path, monkeypatch)


# -- timm hub files: model.safetensors of the full model, classifier included ----------------------


@pytest.mark.parametrize("encoder_id,pool", [("vit-b16", "cls"), ("mae", "mean")])
def test_timm_vit_families(encoder_id, pool, tmp_path, monkeypatch, hub):
    import timm

    small = {"depth": 4, "embed_dim": 64, "num_heads": 2, "img_size": 32}
    entry = small_entry(encoder_id, input_size=32, model_kwargs=small)
    upstream = seeded(lambda: timm.create_model(entry.checkpoint, pretrained=False, **small))
    save_file(upstream.state_dict(), tmp_path / "model.safetensors")
    x = inputs(32)
    reference = timm_vit_reference(upstream, x, pool)
    if pool == "cls":
        with torch.no_grad():
            assert torch.allclose(reference[1.0], upstream.forward_head(upstream.forward_features(x), pre_logits=True))
    check_routes(entry, tmp_path / "model.safetensors", reference, x, tmp_path, monkeypatch, hub)


def test_resnet50(tmp_path, monkeypatch, hub):
    import timm

    small = {"layers": (1, 1, 1, 1)}
    entry = small_entry("resnet50", input_size=32, model_kwargs=small)
    upstream = seeded(lambda: timm.create_model("resnet50", pretrained=False, **small))
    save_file(upstream.state_dict(), tmp_path / "model.safetensors")
    x = inputs(32)
    m = upstream
    reference = resnet_reference(
        lambda t: m.maxpool(m.act1(m.bn1(m.conv1(t)))), (m.layer1, m.layer2, m.layer3, m.layer4), x
    )
    check_routes(entry, tmp_path / "model.safetensors", reference, x, tmp_path, monkeypatch, hub)


def test_retfound_mae_pretraining_dict_under_model(tmp_path, monkeypatch, hub):
    # RETFound (rmaphoh/RETFound_MAE, models_mae.py) saves {"model": MAE state dict}: the timm
    # ViT encoder keys plus the MAE decoder (decoder_*, mask_token).
    import timm

    small = {"depth": 4, "embed_dim": 64, "num_heads": 2, "img_size": 32}
    entry = small_entry("retfound", input_size=32, model_kwargs=small)
    upstream = seeded(
        lambda: timm.create_model("vit_large_patch16_224", pretrained=False, num_classes=0, global_pool="", **small)
    )
    state = dict(upstream.state_dict())
    state.update(
        {
            "mask_token": torch.zeros(1, 1, 32),
            "decoder_embed.weight": torch.randn(32, 64),
            "decoder_blocks.0.norm1.weight": torch.ones(32),
            "decoder_pred.bias": torch.zeros(768),
        }
    )
    path = tmp_path / "RETFound_mae_natureCFP.pth"
    torch.save({"model": state, "epoch": 0}, path)
    x = inputs(32)
    check_routes(entry, path, timm_vit_reference(upstream, x, "mean"), x, tmp_path, monkeypatch, hub)
