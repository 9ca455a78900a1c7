"""Fidelity of the open_clip-published families (BiomedCLIP's hub folder, CheXzero's OpenAI CLIP
state dict): every depth matches the upstream forward (tests/support/fidelity_support.py)."""

from __future__ import annotations

import json

import pytest
import torch
from support.fidelity_support import check_routes, depth_grid, inputs, offline_hub, small_entry

from crsbench.features import get_encoder


@pytest.fixture
def hub(tmp_path, monkeypatch):
    return offline_hub(tmp_path, monkeypatch)


# -- open_clip ------------------------------------------------------------------------------------


def _open_clip_reference(model, x, blocks, norm, pool="cls"):
    out = {}
    hooks = [b.register_forward_hook(lambda m, a, o, i=i: out.__setitem__(i, o)) for i, b in enumerate(blocks)]
    with torch.no_grad():
        embedding = model.encode_image(x)
    for h in hooks:
        h.remove()
    grid = depth_grid([out[i] for i in range(len(blocks))])
    reference = {d: norm(h)[:, 0] for d, h in grid.items()}
    reference[1.0] = embedding
    return reference


def test_biomedclip_hub_folder_without_its_text_repo(tmp_path, monkeypatch, hub):
    # open_clip's hub layout: open_clip_config.json + open_clip_pytorch_model.bin. The config's text
    # tower names a second repo (BiomedBERT); upstream needs its config.json to build the full model,
    # crsbench must not (only the image tower is built).
    import open_clip
    import transformers as T

    text_repo = "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract"
    config = {
        "model_cfg": {
            "embed_dim": 16,
            "vision_cfg": {
                "timm_model_name": "vit_tiny_patch16_224",
                "timm_model_pretrained": False,
                "timm_pool": "",
                "timm_proj": "linear",
                "image_size": 224,
            },
            "text_cfg": {
                "hf_model_name": text_repo,
                "hf_tokenizer_name": text_repo,
                "hf_proj_type": "mlp",
                "hf_pooler_type": "cls_last_hidden_state_pooler",
                "context_length": 16,
            },
        },
        "preprocess_cfg": {"mean": [0.48145466, 0.4578275, 0.40821073], "std": [0.26862954, 0.26130258, 0.27577711]},
    }
    folder = tmp_path / "biomedclip"
    folder.mkdir()
    (folder / "open_clip_config.json").write_text(json.dumps(config))
    bert = tmp_path / "bert"
    T.BertConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, vocab_size=100
    ).save_pretrained(bert)
    text_snapshot = hub(text_repo, {"config.json": bert / "config.json"})
    torch.manual_seed(0)
    upstream = open_clip.create_model(f"local-dir:{folder}", pretrained_text=False).eval()
    torch.save(upstream.state_dict(), folder / "open_clip_pytorch_model.bin")
    x = inputs(224)
    trunk = upstream.visual.trunk
    reference = _open_clip_reference(upstream, x, trunk.blocks, trunk.norm)
    for p in text_snapshot.iterdir():  # the text repo is gone: crsbench still loads offline
        p.unlink()
    check_routes(get_encoder("biomedclip"), folder, reference, x, tmp_path, monkeypatch, hub)


def test_chexzero_openai_clip_state_dict(tmp_path, monkeypatch, hub):
    # CheXzero (rajpurkarlab/CheXzero, zero_shot.py load_clip) saves model.state_dict() of an
    # OpenAI-CLIP ViT-B/32 with QuickGELU; open_clip's CLIP has the same keys.
    import open_clip

    cfg = open_clip.get_model_config("ViT-B-32-quickgelu")
    cfg["vision_cfg"].update({"width": 64, "layers": 4, "image_size": 64})
    cfg["text_cfg"].update({"width": 32, "layers": 1, "heads": 2, "context_length": 16})
    cfg["embed_dim"] = 16
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "crsbench-test-chexzero.json").write_text(json.dumps(cfg))
    open_clip.add_model_config(tmp_path / "cfg")
    torch.manual_seed(0)
    upstream = open_clip.create_model("crsbench-test-chexzero").eval()
    path = tmp_path / "best_64_5e-05_original_22000_0.864.pt"
    torch.save(upstream.state_dict(), path)
    x = inputs(64)
    visual = upstream.visual
    reference = _open_clip_reference(upstream, x, visual.transformer.resblocks, visual.ln_post)
    entry = small_entry("chexzero", input_size=64, model_kwargs={"arch": "crsbench-test-chexzero"})
    check_routes(entry, path, reference, x, tmp_path, monkeypatch, hub, routes=("weights", "env"))
