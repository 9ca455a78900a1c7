"""Contract of every encoder entry (crsbench.features.registry.ENCODERS): complete metadata for all;
for the tiny random-init entries (no download), a missing weight file refused by name and a
deterministic forward giving float features of the library's declared width at every depth."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from crsbench.features.hooks import DepthTap
from crsbench.features.loaders import build_model, state_dict_hash
from crsbench.features.registry import DOMAINS, ENCODERS, LOADERS, SCOPES, EncoderEntry
from tests.contract.support import names, refused_naming

ENCODER_IDS = names(ENCODERS)
TINY = names(ENCODERS, lambda e: not e.pretrained and e.origin == "built-in")


@pytest.mark.parametrize("encoder_id", ENCODER_IDS)
def test_metadata_is_complete(encoder_id):
    entry = ENCODERS.get(encoder_id)
    assert isinstance(entry, EncoderEntry) and entry.id == encoder_id
    assert entry.family.strip() and entry.checkpoint.strip()
    assert entry.scope in SCOPES and entry.domain in DOMAINS and entry.loader in LOADERS
    assert callable(entry.constructor)
    assert 16 <= entry.input_size <= 1024
    # Normalisation of [0, 1] pixels: a mean inside the range, a positive spread no wider than it.
    assert all(0.0 <= m <= 1.0 for m in entry.mean) and all(0.0 < s <= 1.0 for s in entry.std)
    assert entry.depth_blocks and all(entry.depth_blocks)
    assert json.loads(json.dumps(entry.to_dict()))["id"] == encoder_id  # what the store's attrs record


@pytest.mark.parametrize("encoder_id", TINY)
def test_a_missing_weight_file_is_refused_by_name(encoder_id, tmp_path):
    with refused_naming("no-such-weights"):
        build_model(ENCODERS.get(encoder_id), weights=tmp_path / "no-such-weights")


def _declared_widths(root: torch.nn.Module) -> dict[str, int]:
    """The library's own channel count of each module it lists (timm's feature_info)."""
    return {str(f["module"]): int(f["num_chs"]) for f in getattr(root, "feature_info", None) or []}


@pytest.mark.parametrize("encoder_id", TINY)
def test_forward_is_deterministic_with_the_declared_width_per_depth(encoder_id):
    entry = ENCODERS.get(encoder_id)
    x = torch.rand(2, 3, entry.input_size, entry.input_size, generator=torch.Generator().manual_seed(0))
    first, second = build_model(entry), build_model(entry)
    assert state_dict_hash(first) == state_dict_hash(second)  # random init is seeded
    tap = DepthTap(first, entry)
    feats, again = tap(x), DepthTap(second, entry)(x.clone())
    assert set(feats) == set(tap.depths) and 1.0 in feats
    root = getattr(first, "hook_root", first)
    declared = _declared_widths(root)
    for depth, value in feats.items():
        assert value.dtype == torch.float32 and value.ndim == 2 and value.shape[0] == 2 and value.shape[1] > 0
        assert torch.isfinite(value).all()
        assert value.numpy().tobytes() == again[depth].numpy().tobytes(), f"depth {depth} differs between runs"
        path = tap.modules.get(depth, (None,))[0] if isinstance(depth, float) else None
        if path in declared and not (depth == 1.0 and entry.pooling == "projection"):
            assert value.shape[1] == declared[path], f"depth {depth} ({path})"
    final = feats[1.0].shape[1]
    # the projected embedding's width (open_clip's output_dim), else the pooled features' (timm's num_features)
    expected = getattr(root, "output_dim" if entry.pooling == "projection" else "num_features", None)
    if expected is not None:
        assert final == int(expected)
    # One image alone gives the same width (the width is the model's, not the batch's).
    assert np.shape(tap(x[:1])[1.0]) == (1, final)
