"""The encoder registry, offline weight resolution and the depth hooks (METHODS.md §2)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from crsbench.core import CrsbenchError
from crsbench.features import get_encoder, list_encoders, tiny_encoder_ids
from crsbench.features.hooks import DepthTap
from crsbench.features.loaders import build_model, resolve_weights, state_dict_hash

torch.set_num_threads(1)

# The paper's 15 families with the publishers' checkpoint ids and released input sizes.
PAPER = {
    "ResNet-50": ("resnet50.a1_in1k", 224, "general", "none"),
    "ViT-B/16": ("vit_base_patch16_224.augreg2_in21k_ft_in1k", 224, "general", "none"),
    "CLIP": ("openai/clip-vit-base-patch16", 224, "general", "none"),
    "SigLIP": ("google/siglip-base-patch16-224", 224, "general", "none"),
    "DINOv2": ("facebook/dinov2-base", 224, "general", "none"),
    "MAE": ("vit_base_patch16_224.mae", 224, "general", "none"),
    "BiomedCLIP": ("hf-hub:microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224", 224, "broad_medical", "none"),
    "LLaVA-Med": ("microsoft/llava-med-v1.5-mistral-7b", 336, "broad_medical", "none"),
    "MedSigLIP": ("google/medsiglip-448", 448, "broad_medical", "none"),
    "MedGemma-4B": ("google/medgemma-4b-it", 896, "broad_medical", "none"),
    "RETFound": ("YukunZhou/RETFound_mae_natureCFP", 224, "specialty", "eye"),
    "PanDerm": ("gdrive:panderm_ll_data6_checkpoint-499.pth", 224, "specialty", "derm"),
    "RAD-DINO": ("microsoft/rad-dino", 518, "specialty", "rad"),
    "BioViL": ("microsoft/BiomedVLP-CXR-BERT-specialized", 480, "specialty", "rad"),
    "CheXzero": ("gdrive:best_64_5e-05_original_22000_0.864.pt", 224, "specialty", "rad"),
}


def test_the_fifteen_paper_families_are_registered_as_released():
    pretrained = {e.family: e for e in list_encoders(pretrained=True)}
    assert set(pretrained) == set(PAPER)
    for family, (checkpoint, size, scope, domain) in PAPER.items():
        e = pretrained[family]
        assert (e.checkpoint, e.input_size, e.scope, e.domain) == (checkpoint, size, scope, domain), family
        assert e.chest_only == (family in {"BioViL", "CheXzero"}), family
        assert not e.trust_remote_code, family
    assert pretrained["RAD-DINO"].mean == (0.5307,) * 3 and pretrained["RAD-DINO"].std == (0.2583,) * 3
    assert pretrained["MedSigLIP"].mean == (0.5, 0.5, 0.5)
    # CheXzero normalises 0-255 pixels with (101.48761, 83.43944).
    assert pretrained["CheXzero"].mean[0] * 255 == pytest.approx(101.48761)


def test_timm_entries_declare_what_timm_publishes_for_their_checkpoint():
    """Built-in timm entries write out input size, mean and std (so listing needs no timm):
    they must be what timm's pretrained_cfg says for the pretrained checkpoints."""
    import timm

    from crsbench.features.registry import library_defaults

    checked = 0
    for e in list_encoders(pretrained=True):
        cfg = timm.get_pretrained_cfg(e.checkpoint) if e.loader == "timm" else None
        if cfg is None:  # not a timm checkpoint name (RETFound, PanDerm, BioViL name their own file)
            continue
        assert (e.input_size, e.mean, e.std) == (cfg.input_size[-1], tuple(cfg.mean), tuple(cfg.std)), e.id
        checked += 1
    assert checked >= 3  # resnet50, vit-b16, mae
    # An entry that leaves them out (a plugin's) still gets timm's values.
    fields = {"loader": "timm", "checkpoint": "vit_base_patch16_224.augreg2_in21k_ft_in1k"}
    assert library_defaults(fields) == {"input_size": 224, "mean": (0.5,) * 3, "std": (0.5,) * 3}
    assert library_defaults({**fields, "input_size": 64, "mean": (0.1,) * 3, "std": (0.2,) * 3}) == {}


def test_tiny_entries_are_random_init_with_different_architectures():
    tiny = [get_encoder(i) for i in tiny_encoder_ids()]
    assert len(tiny) >= 5
    assert all(not e.pretrained and e.input_size <= 112 for e in tiny)
    assert len({e.checkpoint for e in tiny}) == len(tiny)
    assert {e.pooling for e in tiny} >= {"cls", "mean", "avgpool"}


def test_unknown_encoder_names_the_known_ones():
    with pytest.raises(CrsbenchError, match="tiny-vit"):
        get_encoder("no-such-encoder")


def test_missing_checkpoint_says_where_to_put_it_and_never_downloads(tmp_path, monkeypatch):
    monkeypatch.setenv("CRSBENCH_WEIGHTS", str(tmp_path / "weights"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for encoder_id in ("resnet50", "rad-dino", "panderm"):
        with pytest.raises(CrsbenchError) as err:
            build_model(get_encoder(encoder_id))
        message = str(err.value)
        assert f"{tmp_path / 'weights'}" in message or "$CRSBENCH_WEIGHTS" in message
        assert "never downloads" in message
    assert not (tmp_path / "empty-cache").exists() or not any((tmp_path / "empty-cache").rglob("*.safetensors"))


def test_local_weights_are_loaded_and_a_mismatched_file_is_refused(tmp_path, monkeypatch):
    tiny = get_encoder("tiny-resnet18")
    source = build_model(tiny)
    with torch.no_grad():
        for p in source.parameters():
            p.add_(0.25)  # differ from the seeded random init
    entry = dataclasses.replace(tiny, id="local-r18", pretrained=True)
    weights = tmp_path / "local-r18" / "model.pt"
    weights.parent.mkdir()
    torch.save(source.state_dict(), weights)
    monkeypatch.setenv("CRSBENCH_WEIGHTS", str(tmp_path))
    assert resolve_weights(entry) == weights
    assert state_dict_hash(build_model(entry)) == state_dict_hash(source)
    assert state_dict_hash(build_model(entry)) != state_dict_hash(build_model(tiny))
    torch.save({"conv1.weight": source.conv1.weight}, weights)
    with pytest.raises(CrsbenchError, match=r"missing keys \(bn1.weight"):
        build_model(entry)
    torch.save({"conv1.weight": torch.zeros(1)}, weights)
    with pytest.raises(CrsbenchError, match="do not fit"):
        build_model(entry)


def test_random_init_is_identical_across_builds():
    e = get_encoder("tiny-vit")
    assert state_dict_hash(build_model(e)) == state_dict_hash(build_model(e))


def _vit_by_hand(model, x, blocks):
    """Independent ViT pass: embed, run the blocks, final norm, take CLS at the chosen blocks."""
    h = model.norm_pre(model.patch_drop(model._pos_embed(model.patch_embed(x))))
    out = []
    for i, block in enumerate(model.blocks):
        h = block(h)
        if i in blocks:
            out.append(model.norm(h)[:, 0])
    return out


def test_depth_hooks_match_a_hand_run_vit_and_resnet():
    x = torch.randn(3, 3, 64, 64, generator=torch.Generator().manual_seed(1))
    e = get_encoder("tiny-vit")
    m = build_model(e)
    feats = DepthTap(m, e)(x)
    with torch.no_grad():
        expected = _vit_by_hand(m, x, {2, 5, 8, 11})
    for depth, exp in zip((0.25, 0.5, 0.75, 1.0), expected, strict=True):
        torch.testing.assert_close(feats[depth], exp)

    e = get_encoder("tiny-resnet18")
    m = build_model(e)
    feats = DepthTap(m, e)(x)
    with torch.no_grad():
        h = m.maxpool(m.act1(m.bn1(m.conv1(x))))
        for depth, layer in zip((0.25, 0.5, 0.75, 1.0), (m.layer1, m.layer2, m.layer3, m.layer4), strict=True):
            h = layer(h)
            torch.testing.assert_close(feats[depth], h.mean(dim=(2, 3)))


def test_mean_pooling_skips_cls_and_register_tokens():
    e = get_encoder("tiny-dinov2")
    m = build_model(e)
    assert m.num_prefix_tokens == 5
    x = torch.randn(2, 3, 56, 56, generator=torch.Generator().manual_seed(2))
    feats = DepthTap(m, e)(x)
    with torch.no_grad():
        h = m.norm_pre(m.patch_drop(m._pos_embed(m.patch_embed(x))))
        for block in m.blocks:
            h = block(h)
    torch.testing.assert_close(feats[1.0], m.norm(h)[:, 5:].mean(dim=1))


def test_transformers_loader_and_hooks_on_a_local_dinov2(tmp_path):
    from transformers import Dinov2Config, Dinov2Model

    config = Dinov2Config(
        hidden_size=32, num_hidden_layers=4, num_attention_heads=2, intermediate_size=64, image_size=28, patch_size=14
    )
    torch.manual_seed(0)
    Dinov2Model(config).save_pretrained(tmp_path / "rad")
    entry = dataclasses.replace(get_encoder("rad-dino"), input_size=28, architecture={})  # a small DINOv2
    model = build_model(entry, weights=tmp_path / "rad")
    x = torch.randn(2, 3, 28, 28, generator=torch.Generator().manual_seed(3))
    feats = DepthTap(model, entry)(x)
    reference = Dinov2Model.from_pretrained(tmp_path / "rad").eval()
    with torch.no_grad():
        hidden = reference(pixel_values=x, output_hidden_states=True).hidden_states
    for depth, layer in zip((0.25, 0.5, 0.75, 1.0), (1, 2, 3, 4), strict=True):
        torch.testing.assert_close(feats[depth], reference.layernorm(hidden[layer])[:, 0])
