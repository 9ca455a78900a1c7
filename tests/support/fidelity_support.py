"""Shared helpers of the fidelity tests (tests/features/test_fidelity_*.py): an offline Hugging Face
cache, the three weight routes, and upstream references for the depths.

Each test builds a small random-weight model with the upstream library (real config and key
names, fewer/narrower layers), writes it in the layout its publisher released, loads it through
every route the README documents (`--weights`, `$CRSBENCH_WEIGHTS/<id>`, the Hugging Face cache)
and compares the four stored depths with the in-memory upstream model's forward pass: relative
error <= 1e-5 in float32.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from crsbench.features import get_encoder
from crsbench.features.hooks import DepthTap
from crsbench.features.loaders import build_model
from crsbench.features.weights import hub_repo

torch.set_num_threads(1)
DEPTHS = (0.25, 0.5, 0.75, 1.0)
REV = "0" * 40


def offline_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, dict[str, Path]], Path]:
    """An offline Hugging Face cache in tmp; returns put(repo, files) filling one snapshot (the `hub` fixture)."""
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


def artefact_files(artefact: Path) -> dict[str, Path]:
    return {p.name: p for p in artefact.iterdir() if p.is_file()} if artefact.is_dir() else {artefact.name: artefact}


def check_routes(
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
            for name, src in artefact_files(artefact).items():
                (target / name).write_bytes(src.read_bytes())
            monkeypatch.setenv("CRSBENCH_WEIGHTS", str(base))
        else:
            repo = hub_repo(entry)
            assert repo is not None, entry.id
            hub(repo, artefact_files(artefact))
        model = build_model(entry, weights)
        tap = DepthTap(model, entry)
        with torch.no_grad():
            feats = tap(x)
        tap.close()
        for depth in DEPTHS:
            got, want = feats[depth], reference[depth].detach().float()
            assert got.shape == want.shape, (entry.id, route, depth)
            rel = float((got - want).norm() / want.norm())
            assert rel <= 1e-5, (entry.id, route, depth, rel)


def inputs(size: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(2, 3, size, size, generator=torch.Generator().manual_seed(seed))


def small_entry(encoder_id: str, **changes):
    """The registered entry for a small model of its family: it declares no published
    architecture (features.architecture, tested in test_architecture.py), the rest is the entry's."""
    return dataclasses.replace(get_encoder(encoder_id), **{"architecture": {}, **changes})


def seeded(build: Callable[[], torch.nn.Module]) -> torch.nn.Module:
    torch.manual_seed(0)
    model = build().eval()
    with torch.no_grad():  # layer scales and biases away from their init constants
        for name, p in model.named_parameters():
            if name.endswith(("gamma", "gamma_1", "gamma_2", "lambda1", "bias", "q_bias", "v_bias")):
                p.add_(0.1 * torch.randn_like(p))
    return model


def depth_grid(hidden, depths=DEPTHS):
    n = len(hidden)
    return {d: hidden[max(0, int(d * n + 0.5) - 1)] for d in depths}


def timm_vit_reference(model, x, pool: str) -> dict[float, torch.Tensor]:
    with torch.no_grad():
        h = model.norm_pre(model.patch_drop(model._pos_embed(model.patch_embed(x))))
        out = {}
        for i, block in enumerate(model.blocks):
            h = block(h)
            out[(i + 1) / len(model.blocks)] = model.norm(h)
    return {d: (t[:, 0] if pool == "cls" else t[:, model.num_prefix_tokens :].mean(1)) for d, t in out.items()}


def resnet_reference(stem, layers, x) -> dict[float, torch.Tensor]:
    with torch.no_grad():
        h = stem(x)
        out = {}
        for depth, layer in zip(DEPTHS, layers, strict=True):
            h = layer(h)
            out[depth] = h.mean(dim=(2, 3))
    return out
