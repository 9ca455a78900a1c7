"""Fidelity of the families published as transformers `save_pretrained` folders (CLIP, SigLIP,
MedSigLIP, LLaVA-Med, DINOv2, RAD-DINO, MedGemma): every depth matches the upstream forward
(tests/support/fidelity_support.py)."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import save_file
from support.fidelity_support import check_routes, depth_grid, inputs, offline_hub, seeded, small_entry

from crsbench.features.loaders import build_model


@pytest.fixture
def hub(tmp_path, monkeypatch):
    return offline_hub(tmp_path, monkeypatch)


# -- transformers save_pretrained folders ----------------------------------------------------------


def _clip_model(vision_layers: int, image: int, patch: int):
    import transformers as T

    text = T.CLIPTextConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        vocab_size=100,
        max_position_embeddings=16,
        projection_dim=16,
    )
    vision = T.CLIPVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=vision_layers,
        num_attention_heads=2,
        image_size=image,
        patch_size=patch,
        projection_dim=16,
    )
    return seeded(
        lambda: T.CLIPModel(T.CLIPConfig(text_config=text.to_dict(), vision_config=vision.to_dict(), projection_dim=16))
    )


def _siglip_model(image: int, patch: int):
    import transformers as T

    text = T.SiglipTextConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        vocab_size=100,
        max_position_embeddings=16,
    )
    vision = T.SiglipVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=4,
        num_attention_heads=2,
        image_size=image,
        patch_size=patch,
    )
    return seeded(lambda: T.SiglipModel(T.SiglipConfig(text_config=text.to_dict(), vision_config=vision.to_dict())))


def _hidden(vision, x):
    with torch.no_grad():
        out = vision(pixel_values=x, output_hidden_states=True)
    return out, out.hidden_states[1:]


def test_clip(tmp_path, monkeypatch, hub):
    upstream = _clip_model(4, 32, 16)
    upstream.save_pretrained(tmp_path / "clip")
    x = inputs(32)
    out, hidden = _hidden(upstream.vision_model, x)
    norm = upstream.vision_model.post_layernorm
    reference = {d: norm(h)[:, 0] for d, h in depth_grid(hidden).items()}
    with torch.no_grad():
        reference[1.0] = upstream.visual_projection(out.pooler_output)
    check_routes(small_entry("clip", input_size=32), tmp_path / "clip", reference, x, tmp_path, monkeypatch, hub)


@pytest.mark.parametrize("encoder_id", ["siglip", "medsiglip"])
def test_siglip_families(encoder_id, tmp_path, monkeypatch, hub):
    upstream = _siglip_model(32, 8)
    upstream.save_pretrained(tmp_path / "siglip")
    x = inputs(32)
    out, hidden = _hidden(upstream.vision_model, x)
    norm = upstream.vision_model.post_layernorm
    reference = {d: norm(h).mean(1) for d, h in depth_grid(hidden).items()}
    reference[1.0] = out.pooler_output  # the attention-pooling head: SigLIP's image embedding
    check_routes(small_entry(encoder_id, input_size=32), tmp_path / "siglip", reference, x, tmp_path, monkeypatch, hub)


def test_llava_med_vision_tower_reads_the_penultimate_layer(tmp_path, monkeypatch, hub):
    # LLaVA's CLIPVisionTower: hidden_states[mm_vision_select_layer = -2][:, 1:] (patch tokens).
    upstream = _clip_model(5, 28, 14)
    upstream.save_pretrained(tmp_path / "clip-l")
    x = inputs(28)
    _, hidden = _hidden(upstream.vision_model, x)
    used = hidden[:-1]  # hidden[-1] is the last layer; LLaVA's -2 of hidden_states is used[-1]
    reference = {d: h[:, 1:].mean(1) for d, h in depth_grid(used).items()}
    with torch.no_grad():
        llava = upstream.vision_model(pixel_values=x, output_hidden_states=True).hidden_states[-2][:, 1:]
    assert torch.equal(reference[1.0], llava.mean(1))
    check_routes(small_entry("llava-med", input_size=28), tmp_path / "clip-l", reference, x, tmp_path, monkeypatch, hub)


@pytest.mark.parametrize("encoder_id", ["dinov2", "rad-dino"])
def test_dinov2_families(encoder_id, tmp_path, monkeypatch, hub):
    import transformers as T

    config = T.Dinov2Config(
        hidden_size=32, intermediate_size=64, num_hidden_layers=4, num_attention_heads=2, image_size=28, patch_size=14
    )
    upstream = seeded(lambda: T.Dinov2Model(config))
    upstream.save_pretrained(tmp_path / "dino")  # writes the published key names (attention.attention.query)
    x = inputs(28)
    _, hidden = _hidden(upstream, x)
    reference = {d: upstream.layernorm(h)[:, 0] for d, h in depth_grid(hidden).items()}
    entry = small_entry(encoder_id, input_size=28)
    check_routes(entry, tmp_path / "dino", reference, x, tmp_path, monkeypatch, hub)
    # LoRA adapts the attention projections too, not only the MLPs.
    from crsbench.features.adapt import lora_target_modules

    targets = lora_target_modules(build_model(entry, tmp_path / "dino"), entry)
    assert {t.rsplit(".", 1)[1] for t in targets} == {"q_proj", "k_proj", "v_proj", "o_proj", "fc1", "fc2"}
    assert len(targets) == 6 * 4


def test_a_partial_transformers_folder_is_refused(tmp_path, hub):
    import transformers as T
    from safetensors.torch import load_file

    from crsbench.core import CrsbenchError

    config = T.Dinov2Config(
        hidden_size=32, intermediate_size=64, num_hidden_layers=4, num_attention_heads=2, image_size=28, patch_size=14
    )
    T.Dinov2Model(config).save_pretrained(tmp_path / "dino")
    file = tmp_path / "dino" / "model.safetensors"
    state = load_file(str(file))
    save_file(
        {k: v for k, v in state.items() if not k.startswith(("encoder.layer.2.", "encoder.layer.3."))},
        str(file),
        metadata={"format": "pt"},
    )
    with pytest.raises(CrsbenchError, match=r"do not fit encoder 'dinov2' .*missing keys \(encoder.layer.2"):
        build_model(small_entry("dinov2", input_size=28), tmp_path / "dino")


def test_medgemma_vision_stack(tmp_path, monkeypatch, hub):
    import transformers as T

    vision = T.SiglipVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=4,
        num_attention_heads=2,
        image_size=32,
        patch_size=8,
        vision_use_head=False,
    )
    text = T.Gemma3TextConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        vocab_size=300,
        sliding_window=16,
    )
    config = T.Gemma3Config(
        text_config=text.to_dict(),
        vision_config=vision.to_dict(),
        mm_tokens_per_image=4,
        boi_token_index=290,
        eoi_token_index=291,
        image_token_index=292,
    )
    upstream = seeded(lambda: T.Gemma3ForConditionalGeneration(config))
    upstream.save_pretrained(tmp_path / "medgemma")
    x = inputs(32)
    tower = upstream.model.vision_tower
    _, hidden = _hidden(tower, x)
    norm = getattr(tower, "vision_model", tower).post_layernorm
    reference = {d: norm(h).mean(1) for d, h in depth_grid(hidden).items()}
    check_routes(
        small_entry("medgemma-4b", input_size=32), tmp_path / "medgemma", reference, x, tmp_path, monkeypatch, hub
    )
