"""Harmless encoder factories for the --allow-code tests (tests/features/test_user_code.py):
four small convolution stages, nothing but torch; one factory also leaves a marker file when
it is called, so a test can tell whether crsbench called it."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn


class FourStages(nn.Module):
    """Four stride-2 conv stages (`stages.0` .. `stages.3`); forward: the last one, average-pooled."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.stages = nn.Sequential(
            *(
                nn.Sequential(nn.Conv2d(3 if i == 0 else width, width, 3, stride=2, padding=1), nn.ReLU())
                for i in range(4)
            )
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.stages(x).mean(dim=(2, 3))


def build(width: int = 8) -> nn.Module:
    return FourStages(width)


def build_and_mark(marker: str, width: int = 8) -> nn.Module:
    Path(marker).write_text("called\n")
    return FourStages(width)
