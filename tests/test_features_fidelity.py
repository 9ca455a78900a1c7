"""Fidelity of the 15 paper families: a published-layout checkpoint loads exactly and every depth
matches the upstream model's own forward.

Each test builds a small random-weight model with the upstream library (real config and key
names, fewer/narrower layers), writes it in the layout its publisher released (transformers
`save_pretrained`, timm safetensors, open_clip hub folder, the authors' `torch.save` dicts),
loads it through every route the README documents (`--weights`, `$CRSBENCH_WEIGHTS/<id>`, the
Hugging Face cache) and compares the four stored depths with the in-memory upstream model's
forward pass: relative error <= 1e-5 in float32. Two publishers' libraries are not installable
beside the pins, so their layout is reproduced from the publisher's source, named in the test.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from crsbench.features import get_encoder
from crsbench.features.hooks import DepthTap
from crsbench.features.weights import hub_repo

torch.set_num_threads(1)
DEPTHS = (0.25, 0.5, 0.75, 1.0)
REV = "0" * 40


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """An offline Hugging Face cache in tmp; returns put(repo, folder) filling one snapshot."""
    from huggingface_hub import constants

    cache = tmp_path / "hf-cache"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("CRSBENCH_WEIGHTS", raising=False)
    monkeypatch.delenv("CRSBENCH_ALLOW_DOWNLOAD", raising=False)

    def put(repo: str, files: dict[str, Path]) -> Path:
        root = cache / f"models--{repo.replace('/', '--')}"
        snap = root / "snapshots" / REV
        snap.mkdir(parents=True, exist_ok=True)
        (root / "refs").mkdir(exist_ok=True)
        (root / "refs" / "main").write_text(REV)
        for name, src in files.items():
            (snap / name).write_bytes(src.read_bytes())
        return snap

    return put


def _files(artefact: Path) -> dict[str, Path]:
    return {p.name: p for p in artefact.iterdir() if p.is_file()} if artefact.is_dir() else {artefact.name: artefact}


def _check_routes(
    entry,
    artefact: Path,
    reference: dict[float, torch.Tensor],
    x: torch.Tensor,
    tmp_path: Path,
    monkeypatch,
    hub,
    routes=("weights", "env", "hf_cache"),
) -> None:
    """Build through each route and compare every depth with the upstream forward."""
    for route in routes:
        monkeypatch.delenv("CRSBENCH_WEIGHTS", raising=False)
        weights = None
        if route == "weights":
            weights = artefact
        elif route == "env":
            base = tmp_path / f"env-{entry.id}"
            target = base / entry.id
            target.mkdir(parents=True, exist_ok=True)
            for name, src in _files(artefact).items():
                (target / name).write_bytes(src.read_bytes())
            monkeypatch.setenv("CRSBENCH_WEIGHTS", str(base))
        else:
            repo = hub_repo(entry)
            assert repo is not None, entry.id
            hub(repo, _files(artefact))
        model = entry.build(weights)
        tap = DepthTap(model, entry)
        with torch.no_grad():
            feats = tap(x)
        tap.close()
        for depth in DEPTHS:
            got, want = feats[depth], reference[depth].detach().float()
            assert got.shape == want.shape, (entry.id, route, depth)
            rel = float((got - want).norm() / want.norm())
            assert rel <= 1e-5, (entry.id, route, depth, rel)


def _x(size: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(2, 3, size, size, generator=torch.Generator().manual_seed(seed))


def _entry(encoder_id: str, **changes):
    return dataclasses.replace(get_encoder(encoder_id), **changes)


def _seeded(build: Callable[[], torch.nn.Module]) -> torch.nn.Module:
    torch.manual_seed(0)
    model = build().eval()
    with torch.no_grad():  # layer scales and biases away from their init constants
        for name, p in model.named_parameters():
            if name.endswith(("gamma", "gamma_1", "gamma_2", "lambda1", "bias", "q_bias", "v_bias")):
                p.add_(0.1 * torch.randn_like(p))
    return model


# -- timm hub files: model.safetensors of the full model, classifier included ----------------------


def _timm_vit_reference(model, x, pool: str) -> dict[float, torch.Tensor]:
    with torch.no_grad():
        h = model.norm_pre(model.patch_drop(model._pos_embed(model.patch_embed(x))))
        out = {}
        for i, block in enumerate(model.blocks):
            h = block(h)
            out[(i + 1) / len(model.blocks)] = model.norm(h)
    return {d: (t[:, 0] if pool == "cls" else t[:, model.num_prefix_tokens :].mean(1)) for d, t in out.items()}


@pytest.mark.parametrize("encoder_id,pool", [("vit-b16", "cls"), ("mae", "mean")])
def test_timm_vit_families(encoder_id, pool, tmp_path, monkeypatch, hub):
    import timm

    small = {"depth": 4, "embed_dim": 64, "num_heads": 2, "img_size": 32}
    entry = _entry(encoder_id, input_size=32, model_kwargs=small)
    upstream = _seeded(lambda: timm.create_model(entry.checkpoint, pretrained=False, **small))
    save_file(upstream.state_dict(), tmp_path / "model.safetensors")
    x = _x(32)
    reference = _timm_vit_reference(upstream, x, pool)
    if pool == "cls":
        with torch.no_grad():
            assert torch.allclose(reference[1.0], upstream.forward_head(upstream.forward_features(x), pre_logits=True))
    _check_routes(entry, tmp_path / "model.safetensors", reference, x, tmp_path, monkeypatch, hub)


def _resnet_reference(stem, layers, x) -> dict[float, torch.Tensor]:
    with torch.no_grad():
        h = stem(x)
        out = {}
        for depth, layer in zip(DEPTHS, layers):
            h = layer(h)
            out[depth] = h.mean(dim=(2, 3))
    return out


def test_resnet50(tmp_path, monkeypatch, hub):
    import timm

    small = {"layers": (1, 1, 1, 1)}
    entry = _entry("resnet50", input_size=32, model_kwargs=small)
    upstream = _seeded(lambda: timm.create_model("resnet50", pretrained=False, **small))
    save_file(upstream.state_dict(), tmp_path / "model.safetensors")
    x = _x(32)
    m = upstream
    reference = _resnet_reference(
        lambda t: m.maxpool(m.act1(m.bn1(m.conv1(t)))), (m.layer1, m.layer2, m.layer3, m.layer4), x
    )
    _check_routes(entry, tmp_path / "model.safetensors", reference, x, tmp_path, monkeypatch, hub)


def test_retfound_mae_pretraining_dict_under_model(tmp_path, monkeypatch, hub):
    # RETFound (rmaphoh/RETFound_MAE, models_mae.py) saves {"model": MAE state dict}: the timm
    # ViT encoder keys plus the MAE decoder (decoder_*, mask_token).
    import timm

    small = {"depth": 4, "embed_dim": 64, "num_heads": 2, "img_size": 32}
    entry = _entry("retfound", input_size=32, model_kwargs=small)
    upstream = _seeded(
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
    x = _x(32)
    _check_routes(entry, path, _timm_vit_reference(upstream, x, "mean"), x, tmp_path, monkeypatch, hub)


# -- PanDerm: CAE/BEiT layout, reproduced from SiyuanYan1/PanDerm -----------------------------------
# Layout and forward from PanDerm classification/models/modeling_finetune.py (VisionTransformer,
# Block, Attention: qkv without bias plus q_bias/v_bias, gamma_1/gamma_2 layer scales, 2D sin-cos
# pos_embed), keys under "encoder." as its CAE pretraining checkpoint stores them; PanDerm's
# repository is not a pip package.


def _panderm_state(dim: int, depth: int, grid: int, gen: torch.Generator) -> dict[str, torch.Tensor]:
    def r(*s):
        return 0.05 * torch.randn(*s, generator=gen)

    s = {
        "cls_token": r(1, 1, dim),
        "pos_embed": r(1, 1 + grid * grid, dim),
        "patch_embed.proj.weight": r(dim, 3, 16, 16),
        "patch_embed.proj.bias": r(dim),
        "norm.weight": 1 + r(dim),
        "norm.bias": r(dim),
    }
    for i in range(depth):
        b = f"blocks.{i}."
        s.update(
            {
                b + "gamma_1": r(dim) + 0.1,
                b + "gamma_2": r(dim) + 0.1,
                b + "norm1.weight": 1 + r(dim),
                b + "norm1.bias": r(dim),
                b + "attn.q_bias": r(dim),
                b + "attn.v_bias": r(dim),
                b + "attn.qkv.weight": r(3 * dim, dim) * 4,
                b + "attn.proj.weight": r(dim, dim) * 4,
                b + "attn.proj.bias": r(dim),
                b + "norm2.weight": 1 + r(dim),
                b + "norm2.bias": r(dim),
                b + "mlp.fc1.weight": r(4 * dim, dim) * 4,
                b + "mlp.fc1.bias": r(4 * dim),
                b + "mlp.fc2.weight": r(dim, 4 * dim) * 4,
                b + "mlp.fc2.bias": r(dim),
            }
        )
    return s


def _panderm_forward(s: dict[str, torch.Tensor], x: torch.Tensor, depth: int, heads: int):
    import torch.nn.functional as F

    def ln(t, p):
        return F.layer_norm(t, t.shape[-1:], s[p + ".weight"], s[p + ".bias"], eps=1e-6)

    t = F.conv2d(x, s["patch_embed.proj.weight"], s["patch_embed.proj.bias"], stride=16)
    t = t.flatten(2).transpose(1, 2)
    t = torch.cat([s["cls_token"].expand(len(x), -1, -1), t], 1) + s["pos_embed"]
    out = {}
    for i in range(depth):
        b = f"blocks.{i}."
        B, N, C = t.shape
        bias = torch.cat([s[b + "attn.q_bias"], torch.zeros_like(s[b + "attn.v_bias"]), s[b + "attn.v_bias"]])
        qkv = F.linear(ln(t, b + "norm1"), s[b + "attn.qkv.weight"], bias)
        q, k, v = qkv.reshape(B, N, 3, heads, C // heads).permute(2, 0, 3, 1, 4)
        attn = ((q * (C // heads) ** -0.5) @ k.transpose(-2, -1)).softmax(-1)
        a = F.linear((attn @ v).transpose(1, 2).reshape(B, N, C), s[b + "attn.proj.weight"], s[b + "attn.proj.bias"])
        t = t + s[b + "gamma_1"] * a
        m = F.linear(
            F.gelu(F.linear(ln(t, b + "norm2"), s[b + "mlp.fc1.weight"], s[b + "mlp.fc1.bias"])),
            s[b + "mlp.fc2.weight"],
            s[b + "mlp.fc2.bias"],
        )
        t = t + s[b + "gamma_2"] * m
        out[(i + 1) / depth] = ln(t, "norm")[:, 1:].mean(1)
    return out


def test_panderm_cae_checkpoint(tmp_path, monkeypatch, hub):
    small = {"init_values": 0.1, "depth": 4, "embed_dim": 64, "num_heads": 2, "img_size": 32}
    entry = _entry("panderm", input_size=32, model_kwargs=small)
    state = _panderm_state(64, 4, 2, torch.Generator().manual_seed(3))
    checkpoint = {f"encoder.{k}": v for k, v in state.items()}
    checkpoint["regressor_and_decoder.norm.weight"] = torch.ones(64)  # CAE's other parts
    path = tmp_path / "panderm_ll_data6_checkpoint-499.pth"
    torch.save(checkpoint, path)
    x = _x(32, 1)
    reference = _panderm_forward(state, x, 4, 2)
    _check_routes(entry, path, reference, x, tmp_path, monkeypatch, hub, routes=("weights", "env"))
    # Without the declared layer-scale rename the gammas are not silently dropped.
    from crsbench.ingest.types import CrsbenchError

    partial = dataclasses.replace(entry.convert, rename={})
    with pytest.raises(CrsbenchError, match=r"unexpected keys \(blocks.0.gamma_1"):
        dataclasses.replace(entry, convert=partial).build(path)


# -- BioViL: hi-ml-multimodal ImageModel, reproduced from microsoft/hi-ml ----------------------------
# Layout from hi-ml-multimodal src/health_multimodal/image/model/model.py (ImageModel: `encoder`
# = ImageEncoder whose `encoder` is resnet.py's ResNetHIML, a torchvision ResNet; `projector` =
# modules.py MLP with 1x1 convs). hi-ml-multimodal pins SimpleITK/pydicom/scikit-image, so it is
# not installed; the layout is rebuilt with torchvision, which ResNetHIML subclasses.


def test_biovil_image_model(tmp_path, monkeypatch, hub):
    from torch import nn
    from torchvision.models.resnet import Bottleneck, ResNet

    entry = _entry("biovil", input_size=64, model_kwargs={"layers": (1, 1, 1, 1)})
    torch.manual_seed(0)
    resnet = ResNet(Bottleneck, [1, 1, 1, 1]).eval()
    image_model = nn.Module()
    image_model.encoder = nn.Module()
    image_model.encoder.encoder = resnet
    image_model.projector = nn.Module()
    image_model.projector.model = nn.Sequential(
        nn.Conv2d(2048, 128, 1, bias=False), nn.BatchNorm2d(128), nn.ReLU(inplace=True), nn.Conv2d(128, 128, 1)
    )
    with torch.no_grad():
        for m in resnet.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    path = tmp_path / "biovil_image_resnet50_proj_size_128.pt"
    torch.save(image_model.state_dict(), path)
    x = _x(64)
    m = resnet
    reference = _resnet_reference(
        lambda t: m.maxpool(m.relu(m.bn1(m.conv1(t)))), (m.layer1, m.layer2, m.layer3, m.layer4), x
    )
    _check_routes(entry, path, reference, x, tmp_path, monkeypatch, hub)


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
    return _seeded(
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
    return _seeded(lambda: T.SiglipModel(T.SiglipConfig(text_config=text.to_dict(), vision_config=vision.to_dict())))


def _hidden(vision, x):
    with torch.no_grad():
        out = vision(pixel_values=x, output_hidden_states=True)
    return out, out.hidden_states[1:]


def _grid(hidden, depths=DEPTHS):
    n = len(hidden)
    return {d: hidden[max(0, int(d * n + 0.5) - 1)] for d in depths}


def test_clip(tmp_path, monkeypatch, hub):
    upstream = _clip_model(4, 32, 16)
    upstream.save_pretrained(tmp_path / "clip")
    x = _x(32)
    out, hidden = _hidden(upstream.vision_model, x)
    norm = upstream.vision_model.post_layernorm
    reference = {d: norm(h)[:, 0] for d, h in _grid(hidden).items()}
    with torch.no_grad():
        reference[1.0] = upstream.visual_projection(out.pooler_output)
    _check_routes(_entry("clip", input_size=32), tmp_path / "clip", reference, x, tmp_path, monkeypatch, hub)


@pytest.mark.parametrize("encoder_id", ["siglip", "medsiglip"])
def test_siglip_families(encoder_id, tmp_path, monkeypatch, hub):
    upstream = _siglip_model(32, 8)
    upstream.save_pretrained(tmp_path / "siglip")
    x = _x(32)
    out, hidden = _hidden(upstream.vision_model, x)
    norm = upstream.vision_model.post_layernorm
    reference = {d: norm(h).mean(1) for d, h in _grid(hidden).items()}
    reference[1.0] = out.pooler_output  # the attention-pooling head: SigLIP's image embedding
    _check_routes(_entry(encoder_id, input_size=32), tmp_path / "siglip", reference, x, tmp_path, monkeypatch, hub)


def test_llava_med_vision_tower_reads_the_penultimate_layer(tmp_path, monkeypatch, hub):
    # LLaVA's CLIPVisionTower: hidden_states[mm_vision_select_layer = -2][:, 1:] (patch tokens).
    upstream = _clip_model(5, 28, 14)
    upstream.save_pretrained(tmp_path / "clip-l")
    x = _x(28)
    _, hidden = _hidden(upstream.vision_model, x)
    used = hidden[:-1]  # hidden[-1] is the last layer; LLaVA's -2 of hidden_states is used[-1]
    reference = {d: h[:, 1:].mean(1) for d, h in _grid(used).items()}
    with torch.no_grad():
        llava = upstream.vision_model(pixel_values=x, output_hidden_states=True).hidden_states[-2][:, 1:]
    assert torch.equal(reference[1.0], llava.mean(1))
    _check_routes(_entry("llava-med", input_size=28), tmp_path / "clip-l", reference, x, tmp_path, monkeypatch, hub)


@pytest.mark.parametrize("encoder_id", ["dinov2", "rad-dino"])
def test_dinov2_families(encoder_id, tmp_path, monkeypatch, hub):
    import transformers as T

    config = T.Dinov2Config(
        hidden_size=32, intermediate_size=64, num_hidden_layers=4, num_attention_heads=2, image_size=28, patch_size=14
    )
    upstream = _seeded(lambda: T.Dinov2Model(config))
    upstream.save_pretrained(tmp_path / "dino")  # writes the published key names (attention.attention.query)
    x = _x(28)
    _, hidden = _hidden(upstream, x)
    reference = {d: upstream.layernorm(h)[:, 0] for d, h in _grid(hidden).items()}
    entry = _entry(encoder_id, input_size=28)
    _check_routes(entry, tmp_path / "dino", reference, x, tmp_path, monkeypatch, hub)
    # LoRA adapts the attention projections too, not only the MLPs.
    from crsbench.features.adapt import lora_target_modules

    targets = lora_target_modules(entry.build(tmp_path / "dino"), entry)
    assert {t.rsplit(".", 1)[1] for t in targets} == {"q_proj", "k_proj", "v_proj", "o_proj", "fc1", "fc2"}
    assert len(targets) == 6 * 4


def test_a_partial_transformers_folder_is_refused(tmp_path, hub):
    import transformers as T
    from safetensors.torch import load_file

    from crsbench.ingest.types import CrsbenchError

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
        _entry("dinov2", input_size=28).build(tmp_path / "dino")


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
    upstream = _seeded(lambda: T.Gemma3ForConditionalGeneration(config))
    upstream.save_pretrained(tmp_path / "medgemma")
    x = _x(32)
    tower = upstream.model.vision_tower
    _, hidden = _hidden(tower, x)
    norm = getattr(tower, "vision_model", tower).post_layernorm
    reference = {d: norm(h).mean(1) for d, h in _grid(hidden).items()}
    _check_routes(_entry("medgemma-4b", input_size=32), tmp_path / "medgemma", reference, x, tmp_path, monkeypatch, hub)


# -- open_clip ------------------------------------------------------------------------------------


def _open_clip_reference(model, x, blocks, norm, pool="cls"):
    out = {}
    hooks = [b.register_forward_hook(lambda m, a, o, i=i: out.__setitem__(i, o)) for i, b in enumerate(blocks)]
    with torch.no_grad():
        embedding = model.encode_image(x)
    for h in hooks:
        h.remove()
    grid = _grid([out[i] for i in range(len(blocks))])
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
    x = _x(224)
    trunk = upstream.visual.trunk
    reference = _open_clip_reference(upstream, x, trunk.blocks, trunk.norm)
    for p in text_snapshot.iterdir():  # the text repo is gone: crsbench still loads offline
        p.unlink()
    _check_routes(get_encoder("biomedclip"), folder, reference, x, tmp_path, monkeypatch, hub)


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
    x = _x(64)
    visual = upstream.visual
    reference = _open_clip_reference(upstream, x, visual.transformer.resblocks, visual.ln_post)
    entry = _entry("chexzero", input_size=64, model_kwargs={"arch": "crsbench-test-chexzero"})
    _check_routes(entry, path, reference, x, tmp_path, monkeypatch, hub, routes=("weights", "env"))
