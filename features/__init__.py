"""crsbench.features: encoder registry, seeded perturbations, one-pass extraction, Zarr store (METHODS.md §2).

    from crsbench.features import get_encoder, extract, perturb
    extract(dataset, get_encoder("tiny-vit"), "features.zarr")
    noisy = perturb(image, "img-001", "rician", 2)

Heavy modules (torch, timm) load on first use, so `import crsbench.features` stays cheap.
"""

from __future__ import annotations

from typing import Any

from crsbench.features.lookup import get_encoder, list_encoders, tiny_encoder_ids
from crsbench.features.registry import EncoderEntry, register_encoder
from crsbench.features.store import FeatureSetRef, FeatureStore, depth_key, encoder_key

_LAZY = {
    "extract": "crsbench.features.extraction",
    "perturb": "crsbench.features.perturbations",
    "perturb_batch": "crsbench.features.perturbations",
    "seed_key": "crsbench.features.perturbations",
    "DepthTap": "crsbench.features.hooks",
    "resolve_weights": "crsbench.features.loaders",
    "state_dict_hash": "crsbench.features.loaders",
    "decode_image": "crsbench.features.transforms",
}

__all__ = [
    "EncoderEntry",
    "FeatureSetRef",
    "FeatureStore",
    "depth_key",
    "encoder_key",
    "get_encoder",
    "list_encoders",
    "register_encoder",
    "tiny_encoder_ids",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'crsbench.features' has no attribute {name!r}")
