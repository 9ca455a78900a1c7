"""Depth hooks: pooled features at 25 / 50 / 75 / 100 % depth from one forward pass (METHODS.md §2).

Where the hooks go (`EncoderEntry.depth_blocks`):
* a block container (transformers): the block at index round(f * N) - 1 for each depth f,
  e.g. blocks 3, 6, 9, 12 of a 12-block ViT;
* several stage modules (CNNs): the stage nearest each depth, e.g. ResNet layer1..layer4.

How a captured output is pooled:
* tokens [B, N, D]: the entry's `final_norm` is applied to the tokens of every depth (so
  all depths share the scale of the model's own output; at 100 % this is exactly the
  model's final representation), then the CLS token (index 0) or the mean over the
  non-prefix tokens (CLS and register tokens excluded);
* feature maps [B, C, H, W]: global average pooling;
* `pooling="projection"`: the 100 % feature is the model's forward output (its projected
  or head-pooled embedding); shallower depths pool tokens by `entry.token_pool`.

A model with a `patch_projector` (an image-text model whose projection acts on every patch,
BioViL) also gives the extra depth `proj`: the projector applied to the 100 % output before
pooling, then pooled (the mean over patches), as the publisher computes its joint-space
embedding; it cannot be recomputed from the pooled feature.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

import torch
from torch import nn

from crsbench.core import DEPTHS, CrsbenchError, portable_products
from crsbench.features.loaders import submodule
from crsbench.features.registry import EncoderEntry
from crsbench.features.store import PROJ, Depth


def depth_modules(
    root: nn.Module, blocks: str | tuple[str, ...], skip_last: int = 0
) -> dict[float, tuple[str, nn.Module]]:
    """{depth: (module path, module)} for the four depths (a container's last `skip_last` blocks
    left out of the grid)."""
    if isinstance(blocks, str):
        container = submodule(root, blocks)
        children = list(container.children())
        children = children[: len(children) - skip_last] if skip_last else children
        paths = [f"{blocks}.{i}" for i in range(len(children))]
    else:
        paths = list(blocks)
        children = [submodule(root, p) for p in paths]
    if not children:
        raise CrsbenchError(f"no blocks found at {blocks!r} in {type(root).__name__}")
    chosen: dict[float, tuple[str, nn.Module]] = {}
    for depth in DEPTHS:
        index = max(0, math.floor(depth * len(children) + 0.5) - 1)
        chosen[depth] = (paths[index], children[index])
    return chosen


class DepthTap:
    """Wraps a model: `tap(x)` runs one forward and returns {depth: [B, dim] float32}."""

    def __init__(self, model: nn.Module, entry: EncoderEntry) -> None:
        self.model = model
        self.entry = entry
        root = getattr(model, "hook_root", model)
        self.modules = depth_modules(root, entry.depth_blocks, entry.skip_last_blocks)
        self.norm = submodule(root, entry.final_norm) if entry.final_norm else None
        projector = getattr(model, "patch_projector", None)
        self.projector: nn.Module | None = projector if isinstance(projector, nn.Module) else None
        if self.projector is not None and entry.pooling == "projection":
            raise CrsbenchError(f"encoder {entry.id!r}: a patch projector needs the 100 % output before pooling")
        self.depths: tuple[Depth, ...] = (*DEPTHS, PROJ) if self.projector is not None else DEPTHS
        self.prefix_tokens = (
            entry.prefix_tokens if entry.prefix_tokens is not None else int(getattr(root, "num_prefix_tokens", 1))
        )
        self._local = threading.local()  # captures per calling thread: CPU extraction runs forwards in parallel
        self._handles = []
        for depth, (_, module) in self.modules.items():
            if depth == 1.0 and entry.pooling == "projection":
                continue
            self._handles.append(module.register_forward_hook(self._hook(depth)))

    @property
    def layers(self) -> dict[str, str]:
        """{depth key: module path} as recorded in the store attrs."""
        from crsbench.features.store import depth_key

        out = {depth_key(d): path for d, (path, _) in self.modules.items()}
        if self.entry.pooling == "projection":
            out[depth_key(1.0)] = "forward output (projection)"
        if self.projector is not None:
            out[PROJ] = f"patch_projector on {self.modules[1.0][0]}, then pooled"
        return out

    @property
    def _captured(self) -> dict[float, torch.Tensor]:
        if not hasattr(self._local, "captured"):
            self._local.captured = {}
        captured: dict[float, torch.Tensor] = self._local.captured  # threading.local is untyped
        return captured

    def _hook(self, depth: float) -> Callable[[nn.Module, object, object], None]:
        def capture(module: nn.Module, args: object, output: object) -> None:
            # tuples (open_clip, older transformers) and ModelOutput both put the hidden states first
            tensor = output if isinstance(output, torch.Tensor) else output[0]  # type: ignore[index]
            self._captured[depth] = tensor

        return capture

    def _pool(self, depth: float, x: torch.Tensor) -> torch.Tensor:
        if x.ndim == 4:
            return x.float().mean(dim=(2, 3))
        if x.ndim != 3:
            raise CrsbenchError(f"depth {depth}: cannot pool an output of shape {tuple(x.shape)}")
        if self.norm is not None:
            x = self.norm(x)
        how = self.entry.pooling if self.entry.pooling in ("cls", "mean") else self.entry.token_pool
        if how == "cls":
            return x[:, 0].float()
        return x[:, self.prefix_tokens :].float().mean(dim=1)

    def _project(self, x: torch.Tensor) -> torch.Tensor:
        """The projector on every patch of a feature map, then the mean over patches."""
        assert self.projector is not None
        if x.ndim != 4:
            raise CrsbenchError(f"depth {PROJ}: a patch projector needs a feature map, got shape {tuple(x.shape)}")
        projected: torch.Tensor = self.projector(x)
        return projected.float().mean(dim=(2, 3))

    @torch.no_grad()
    def __call__(self, x: torch.Tensor) -> dict[Depth, torch.Tensor]:
        return self.forward_depths(x)

    def forward_depths(self, x: torch.Tensor) -> dict[Depth, torch.Tensor]:
        """As calling the tap, with autograd left on (LoRA training, `crsbench.features.adapt`).
        On the CPU the model's products run on OpenBLAS (`crsbench.core.portable_products`): the
        same feature bits on Intel and AMD CPUs alike."""
        self._captured.clear()
        with portable_products(x.device):
            return self._depths(x)

    def _depths(self, x: torch.Tensor) -> dict[Depth, torch.Tensor]:
        out = self.model(x)
        feats: dict[Depth, torch.Tensor] = {}
        for depth in DEPTHS:
            if depth == 1.0 and self.entry.pooling == "projection":
                feats[depth] = out.float().flatten(1)
            else:
                feats[depth] = self._pool(depth, self._captured[depth])
        if self.projector is not None:
            feats[PROJ] = self._project(self._captured[1.0])
        self._captured.clear()
        return feats

    def close(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
