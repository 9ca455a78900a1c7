"""Zero-shot fidelity, one test per image-text family: on a random-weight checkpoint written in the
publisher's layout by the upstream library, crsbench's zero-shot logits (its image tower, its text
tower, scale x cosine + bias) equal the library's own forward to 1e-5 relative."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from crsbench.features.loaders import build_model
from crsbench.features.lookup import get_encoder
from crsbench.features.text import load_text_tower
from crsbench.features.zeroshot import _unit

WORDS = ["a", "chest", "x-ray", "showing", "photo", "of", "cat", "dog", "skin", "no", "with", "effusion"]
TEXTS = ["a chest x-ray showing effusion", "a photo of a cat", "skin with no dog"]


def _ours(entry, folder: Path, pixels: torch.Tensor, texts: list[str]) -> np.ndarray:
    tower = load_text_tower(entry, folder)
    with torch.no_grad():
        image = build_model(entry, weights=folder)(pixels).double().numpy()
    return tower.logit_scale * (_unit(image) @ _unit(tower.encode(texts)).T) + tower.logit_bias


def _close(ours: np.ndarray, theirs: np.ndarray) -> None:
    assert ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5 * np.abs(theirs).max())


def _word_tokenizer(folder: Path, **special: str):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[BOS]", "[EOS]", *WORDS])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", **special)
    fast.save_pretrained(folder)
    return fast


def test_transformers_clip(tmp_path: Path) -> None:
    from transformers import CLIPConfig, CLIPModel

    torch.manual_seed(0)
    cfg = CLIPConfig(
        text_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "vocab_size": 32,
            "max_position_embeddings": 16,
            "eos_token_id": 3,
            "bos_token_id": 2,
            "pad_token_id": 0,
            "projection_dim": 16,
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": 32,
            "patch_size": 8,
            "projection_dim": 16,
        },
        projection_dim=16,
    )
    model = CLIPModel(cfg).eval()
    model.save_pretrained(tmp_path)
    tok = _word_tokenizer(tmp_path, eos_token="[EOS]", bos_token="[BOS]")
    entry = dataclasses.replace(get_encoder("clip"), input_size=32, architecture={})  # a small CLIP
    pixels = torch.randn(2, 3, 32, 32)
    tokens = tok(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        theirs = model(input_ids=tokens["input_ids"], attention_mask=tokens["attention_mask"], pixel_values=pixels)
    _close(_ours(entry, tmp_path, pixels, TEXTS), theirs.logits_per_image.double().numpy())


@pytest.mark.parametrize("encoder", ["siglip", "medsiglip"])
def test_transformers_siglip(tmp_path: Path, encoder: str) -> None:
    from transformers import SiglipConfig, SiglipModel

    torch.manual_seed(1)
    cfg = SiglipConfig(
        text_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "vocab_size": 32,
            "max_position_embeddings": 8,
            "projection_size": 32,
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": 32,
            "patch_size": 8,
        },
    )
    model = SiglipModel(cfg).eval()
    with torch.no_grad():
        model.logit_bias.fill_(-3.0)
    model.save_pretrained(tmp_path)
    tok = _word_tokenizer(tmp_path)
    tok.model_max_length = 8
    tok.save_pretrained(tmp_path)
    entry = dataclasses.replace(get_encoder(encoder), input_size=32, architecture={})  # a small SigLIP
    pixels = torch.randn(2, 3, 32, 32)
    tokens = tok(TEXTS, padding="max_length", max_length=8, return_tensors="pt")
    with torch.no_grad():
        theirs = model(input_ids=tokens["input_ids"], pixel_values=pixels).logits_per_image
    _close(_ours(entry, tmp_path, pixels, TEXTS), theirs.double().numpy())


def _open_clip_reference(model, tokenizer, pixels: torch.Tensor) -> np.ndarray:
    with torch.no_grad():
        out = model(pixels, tokenizer(TEXTS))
    image, text, scale = (
        out[:3] if isinstance(out, tuple) else (out["image_features"], out["text_features"], out["logit_scale"])
    )
    bias = out[3] if isinstance(out, tuple) and len(out) > 3 else 0.0
    return (scale * image @ text.T + bias).double().numpy()


def test_open_clip_chexzero_bpe(tmp_path: Path) -> None:
    """CheXzero's layout: an OpenAI-CLIP state dict (quick GELU) read by open_clip, open_clip's BPE."""
    from open_clip.tokenizer import SimpleTokenizer

    from crsbench.features.loaders import build_open_clip

    cfg = {
        "embed_dim": 16,
        "quick_gelu": True,
        "vision_cfg": {"image_size": 32, "layers": 2, "width": 32, "head_width": 16, "patch_size": 8},
        "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 2},
    }
    torch.manual_seed(2)
    model = build_open_clip(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.02)  # weights unlike crsbench's own random init
    file = tmp_path / "best_64_5e-05_original_22000_0.864.pt"
    torch.save(model.state_dict(), file)
    entry = dataclasses.replace(get_encoder("chexzero"), input_size=32, model_kwargs={"model_cfg": cfg})
    pixels = torch.randn(2, 3, 32, 32)
    theirs = _open_clip_reference(model, SimpleTokenizer(context_length=16), pixels)
    _close(_ours(entry, file, pixels, TEXTS), theirs)


def _tiny_bert(folder: Path) -> None:
    from transformers import BertConfig, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    BertTokenizer(str(folder / "vocab.txt")).save_pretrained(folder)
    BertConfig(
        vocab_size=17,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
    ).save_pretrained(folder)


def test_open_clip_biomedclip_hf_text(tmp_path: Path) -> None:
    """BiomedCLIP's hub layout: open_clip_config.json + open_clip_pytorch_model.bin, a timm ViT
    trunk and a Hugging Face BERT text encoder with its (PubMedBERT-style) WordPiece tokenizer."""
    from open_clip.model import CustomTextCLIP
    from open_clip.tokenizer import HFTokenizer

    bert = tmp_path / "pubmedbert"
    _tiny_bert(bert)
    cfg = {
        "embed_dim": 16,
        "vision_cfg": {
            "timm_model_name": "vit_tiny_patch16_224",
            "timm_model_pretrained": False,
            "timm_pool": "",
            "timm_proj": "linear",
            "image_size": 224,
        },
        "text_cfg": {
            "hf_model_name": str(bert),
            "hf_tokenizer_name": str(bert),
            "hf_proj_type": "mlp",
            "hf_pooler_type": "cls_last_hidden_state_pooler",
            "context_length": 16,
        },
    }
    torch.manual_seed(3)
    model = CustomTextCLIP(
        embed_dim=16, vision_cfg=cfg["vision_cfg"], text_cfg={**cfg["text_cfg"], "hf_model_pretrained": False}
    ).eval()
    hub = tmp_path / "hub"
    hub.mkdir()
    (hub / "open_clip_config.json").write_text(json.dumps({"model_cfg": cfg}))
    torch.save(model.state_dict(), hub / "open_clip_pytorch_model.bin")
    entry = dataclasses.replace(get_encoder("biomedclip"), input_size=224)
    pixels = torch.randn(2, 3, 224, 224)
    theirs = _open_clip_reference(model, HFTokenizer(str(bert), context_length=16), pixels)
    _close(_ours(entry, hub, pixels, TEXTS), theirs)


def test_cxr_bert_layout(tmp_path: Path) -> None:
    """hi-ml-multimodal's CXRBertModel layout (BertForMaskedLM + cls_projection_head): crsbench's
    projected text embedding equals the masked-LM model's last hidden [CLS] through the head,
    L2-normalised, as its get_projected_text_embeddings computes it."""
    from torch import nn
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    _tiny_bert(tmp_path)
    config = BertConfig.from_pretrained(tmp_path)
    torch.manual_seed(4)
    mlm = BertForMaskedLM(config).eval()
    head = nn.ModuleDict(
        {
            "dense_to_hidden": nn.Linear(32, 8),
            "LayerNorm": nn.LayerNorm(8, eps=1e-12),
            "dense_to_output": nn.Linear(8, 8),
        }
    )
    state = {**mlm.state_dict(), **{f"cls_projection_head.{k}": v for k, v in head.state_dict().items()}}
    torch.save(state, tmp_path / "pytorch_model.bin")
    raw = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**raw, "projection_size": 8, "model_type": "cxr-bert"}))
    (tmp_path / "biovil_image_resnet50_proj_size_128.pt").write_bytes(b"")
    tok = BertTokenizer(str(tmp_path / "vocab.txt"))
    tokens = tok(TEXTS, padding="longest", return_tensors="pt")
    with torch.no_grad():
        cls = mlm(**tokens, output_hidden_states=True).hidden_states[-1][:, 0, :]
        proj = head["dense_to_output"](head["LayerNorm"](nn.functional.gelu(head["dense_to_hidden"](cls))))
    theirs = nn.functional.normalize(proj, dim=1).double().numpy()
    tower = load_text_tower(get_encoder("biovil"), tmp_path / "biovil_image_resnet50_proj_size_128.pt")
    _close(_unit(tower.encode(TEXTS)), theirs)


def test_missing_tokenizer_files_are_one_line(tmp_path: Path) -> None:
    from transformers import SiglipConfig, SiglipModel

    from crsbench.core import CrsbenchError

    SiglipModel(
        SiglipConfig(
            text_config={
                "hidden_size": 16,
                "intermediate_size": 32,
                "num_hidden_layers": 1,
                "num_attention_heads": 2,
                "vocab_size": 8,
                "projection_size": 16,
            },
            vision_config={
                "hidden_size": 16,
                "intermediate_size": 32,
                "num_hidden_layers": 1,
                "num_attention_heads": 2,
                "image_size": 16,
                "patch_size": 8,
            },
        )
    ).save_pretrained(tmp_path)
    with pytest.raises(CrsbenchError) as info:
        load_text_tower(get_encoder("siglip"), tmp_path)
    message = str(info.value)
    assert "\n" not in message and str(tmp_path) in message
    assert "tokenizer.json or spiece.model" in message
    bert = tmp_path / "bert"
    bert.mkdir()
    (bert / "biovil_image_resnet50_proj_size_128.pt").write_bytes(b"")
    with pytest.raises(CrsbenchError, match=r"needs the tokenizer files config.json \+ vocab.txt in .*bert"):
        load_text_tower(get_encoder("biovil"), bert / "biovil_image_resnet50_proj_size_128.pt")
