"""The built-in tiny random-initialised architectures: tests and the demo (`all-tiny`; pretrained = false).

Small inputs (64 px, 56 for patch 14) keep the demo at a few minutes on two CPU cores.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from crsbench.features.encoders import IMAGENET, RESNET_STAGES, TIMM_VIT, VIT_LORA, timm_model
from crsbench.features.registry import EncoderEntry, register_encoder

if TYPE_CHECKING:
    from torch import nn

# Random init has no pretraining scope; three tiny entries carry *stand-in* scopes and
# domains (named in their family) so the demo exercises E1's specialisation analysis.
TINY = {"loader": "timm", "pretrained": False, **IMAGENET}
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
    depth_blocks=tuple(f"blocks.{i}" for i in range(7)) + ("bn2",),
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
