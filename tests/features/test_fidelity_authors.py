"""Fidelity of the families whose publishers' libraries cannot be installed beside the pins
(PanDerm, BioViL): their checkpoint layout is reproduced from the publisher's source, named in
each test, and every depth matches that forward (tests/support/fidelity_support.py)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from support.fidelity_support import check_routes, inputs, offline_hub, resnet_reference, small_entry

from crsbench.features.loaders import build_model


@pytest.fixture
def hub(tmp_path, monkeypatch):
    return offline_hub(tmp_path, monkeypatch)


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
    entry = small_entry("panderm", input_size=32, model_kwargs=small)
    state = _panderm_state(64, 4, 2, torch.Generator().manual_seed(3))
    checkpoint = {f"encoder.{k}": v for k, v in state.items()}
    checkpoint["regressor_and_decoder.norm.weight"] = torch.ones(64)  # CAE's other parts
    path = tmp_path / "panderm_ll_data6_checkpoint-499.pth"
    torch.save(checkpoint, path)
    x = inputs(32, 1)
    reference = _panderm_forward(state, x, 4, 2)
    check_routes(entry, path, reference, x, tmp_path, monkeypatch, hub, routes=("weights", "env"))
    # Without the declared layer-scale rename the gammas are not silently dropped (named as in the file).
    from crsbench.core import CrsbenchError

    partial = dataclasses.replace(entry.convert, rename={})
    with pytest.raises(CrsbenchError, match=r"unexpected keys \(encoder.blocks.0.gamma_1"):
        build_model(dataclasses.replace(entry, convert=partial), path)


# -- BioViL: hi-ml-multimodal ImageModel, reproduced from microsoft/hi-ml ----------------------------
# Layout from hi-ml-multimodal src/health_multimodal/image/model/model.py (ImageModel: `encoder`
# = ImageEncoder whose `encoder` is resnet.py's ResNetHIML, a torchvision ResNet; `projector` =
# modules.py MLP with 1x1 convs). hi-ml-multimodal pins SimpleITK/pydicom/scikit-image, so it is
# not installed; the layout is rebuilt with torchvision, which ResNetHIML subclasses.


def test_biovil_image_model(tmp_path, monkeypatch, hub):
    from torch import nn
    from torchvision.models.resnet import Bottleneck, ResNet

    entry = small_entry("biovil", input_size=64, model_kwargs={"layers": (1, 1, 1, 1)})
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
    x = inputs(64)
    m = resnet
    reference = resnet_reference(
        lambda t: m.maxpool(m.relu(m.bn1(m.conv1(t)))), (m.layer1, m.layer2, m.layer3, m.layer4), x
    )
    check_routes(entry, path, reference, x, tmp_path, monkeypatch, hub)
