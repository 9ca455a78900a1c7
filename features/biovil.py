"""BioViL's image model in hi-ml-multimodal's layout, for its projected (joint-space) embedding.

hi-ml-multimodal (microsoft/hi-ml, `health_multimodal/image/model/model.py`, `ImageModel`) keeps
a ResNet-50 under `encoder.encoder.` and a projector under `projector.model.`: the `modules.py`
MLP with 1x1 convolutions (conv 2048 -> 128 without bias, BatchNorm2d, ReLU, conv 128 -> 128).
Its global joint-space embedding is the projector on every patch of the last stage's feature
map, then the mean over patches, so it cannot be recomputed from the pooled 2048-d feature.
The package is not installed (its pins clash with crsbench's); this rebuilds the layout.

The model's forward is the pooled ResNet feature (the depth grid, as before); its
`patch_projector` gives `features.hooks.DepthTap` the extra depth `proj` (METHODS.md §3.5).
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from crsbench.features.checkpoints import load_checkpoint
from crsbench.features.loaders import seeded, timm_model
from crsbench.features.registry import EncoderEntry, KeyConversion
from crsbench.features.weights import resolve_weights

JOINT_FEATURE_SIZE = 128  # hi-ml-multimodal's pretrained.py: every BioViL release
PROJECTOR = KeyConversion(keep_prefix="projector.model.")


def projector(input_dim: int, joint: int = JOINT_FEATURE_SIZE) -> nn.Sequential:
    """hi-ml's MLP(input_dim, output_dim=joint, hidden_dim=joint, use_1x1_convs=True)."""
    return nn.Sequential(
        nn.Conv2d(input_dim, joint, kernel_size=1, bias=False),
        nn.BatchNorm2d(joint),
        nn.ReLU(inplace=True),
        nn.Conv2d(joint, joint, kernel_size=1, bias=True),
    )


class BiovilImage(nn.Module):
    """The ResNet-50 (forward: pooled feature; hooks go on it) plus hi-ml's patch projector."""

    def __init__(self, resnet: nn.Module, patch_projector: nn.Module) -> None:
        super().__init__()
        self.resnet = resnet
        self.patch_projector = patch_projector

    @property
    def hook_root(self) -> nn.Module:
        return self.resnet

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.resnet(x)
        return out


def biovil_image(entry: EncoderEntry, weights: Path | None) -> BiovilImage:
    """The ResNet loaded as before (`encoder.encoder.`), then the projector, both strictly."""
    resnet = timm_model(entry, weights, arch="resnet50")
    width = int(getattr(resnet, "num_features", 2048))
    with seeded():
        head = projector(width)
    if entry.pretrained or weights is not None or entry.weights_path:
        load_checkpoint(head, resolve_weights(entry, weights), PROJECTOR, entry.id)
    return BiovilImage(resnet, head)
