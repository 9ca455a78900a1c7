"""The built-in tiny random-initialised architectures: tests and the demo (`all-tiny`; pretrained = false).

Small inputs (64 px, 56 for patch 14) keep the demo at a few minutes on two CPU cores.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from crsbench.features.encoders import (
    IMAGENET,
    OPEN_CLIP_IMAGE_TOWER,
    OPENAI_CLIP,
    RESNET_STAGES,
    TIMM_VIT,
    VIT_LORA,
    open_clip_model,
    timm_model,
)
from crsbench.features.registry import EncoderEntry, Pretraining, register_encoder

if TYPE_CHECKING:
    from torch import nn

# Random init has no pretraining scope; three tiny entries carry *stand-in* scopes and
# domains (named in their family) so the demo exercises E1's specialisation analysis.
# Declared as pretrained on no dataset (datasets=()), which is not "unknown".
RANDOM_INIT = Pretraining(datasets=(), source="random initialisation")
TINY = {"loader": "timm", "pretrained": False, "pretraining": RANDOM_INIT, **IMAGENET}
GENERAL = {"scope": "general", "domain": "none"}


@register_encoder(
    "tiny-resnet18",
    checkpoint="resnet18",
    family="tiny ResNet-18",
    input_size=64,
    pooling="avgpool",
    depth_blocks=RESNET_STAGES,
    lora_targets=("conv1", "conv2"),
    **GENERAL,
    **TINY,
)
def tiny_resnet18(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    return timm_model(entry, weights)


@register_encoder(
    "tiny-vit",
    checkpoint="vit_tiny_patch16_224",
    family="tiny ViT-Ti/16",
    input_size=64,
    pooling="cls",
    **TIMM_VIT,
    lora_targets=VIT_LORA,
    model_kwargs={"img_size": 64},
    **GENERAL,
    **TINY,
)
def tiny_vit(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    return timm_model(entry, weights)


@register_encoder(
    "tiny-convnext",
    checkpoint="convnext_atto",
    family="tiny ConvNeXt-atto (stand-in: broad medical)",
    scope="broad_medical",
    domain="none",
    input_size=64,
    pooling="avgpool",
    depth_blocks=("stages.0", "stages.1", "stages.2", "stages.3"),
    lora_targets=("mlp.fc1", "mlp.fc2"),
    **TINY,
)
def tiny_convnext(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    return timm_model(entry, weights)


@register_encoder(
    "tiny-efficientnet",
    checkpoint="efficientnet_b0",
    family="tiny EfficientNet-B0 (stand-in: derm specialist)",
    scope="specialty",
    domain="derm",
    input_size=64,
    pooling="avgpool",
    depth_blocks=(*tuple(f"blocks.{i}" for i in range(7)), "bn2"),
    lora_targets=("conv_pw", "conv_pwl"),
    **TINY,
)
def tiny_efficientnet(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    return timm_model(entry, weights)


# DINOv2-style: patch 14, four register tokens, LayerScale, mean over patch tokens; ViT-Ti width.
@register_encoder(
    "tiny-dinov2",
    checkpoint="vit_small_patch14_reg4_dinov2",
    family="tiny DINOv2-style ViT (stand-in: radiology specialist)",
    scope="specialty",
    domain="rad",
    input_size=56,
    pooling="mean",
    **TIMM_VIT,
    lora_targets=VIT_LORA,
    model_kwargs={"img_size": 56, "embed_dim": 192, "num_heads": 3},
    **TINY,
)
def tiny_dinov2(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    return timm_model(entry, weights)


# An open_clip CLIP scaled down (ViT 4 x 64 wide at 64 px, text transformer 4 x 64 wide over
# open_clip's own BPE vocabulary): the one tiny entry with a text tower, so the demo and the
# tests exercise zero-shot classification end to end on the CPU.
TINY_CLIP_CFG = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 64, "layers": 4, "width": 64, "head_width": 32, "patch_size": 16},
    "text_cfg": {"context_length": 32, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 4},
}


@register_encoder(
    "tiny-clip",
    checkpoint="open_clip:tiny (inline config)",
    family="tiny CLIP (open_clip, image + text towers)",
    loader="open_clip",
    pretrained=False,
    pretraining=RANDOM_INIT,
    input_size=64,
    **OPENAI_CLIP,
    pooling="projection",
    token_pool="cls",
    depth_blocks="transformer.resblocks",
    final_norm="ln_post",
    lora_targets=("c_fc", "c_proj"),
    convert=OPEN_CLIP_IMAGE_TOWER,
    text_tower="open_clip",
    model_kwargs={"model_cfg": TINY_CLIP_CFG},
    **GENERAL,
)
def tiny_clip(entry: EncoderEntry, weights: Path | None) -> nn.Module:
    return open_clip_model(entry, weights)
