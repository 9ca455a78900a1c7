"""Confirming a degenerate feature set: the user accepts it, and its encoder is ranked again."""

from __future__ import annotations

from pathlib import Path

from crsbench.warehouse.connection import Warehouse


def confirm_feature_set(db: Path, store_url: str, encoder: str, dataset: str) -> str:
    """Mark the flagged set of `encoder` (an encoder key, e.g. tiny-vit or tiny-vit@lora-s0) on
    `dataset` as confirmed, in the store's attrs and the catalog; returns the reason confirmed."""
    from crsbench.core import EncoderKey
    from crsbench.features.degenerate import DEGENERATE, confirm_in_store
    from crsbench.features.store import FeatureSetRef
    from crsbench.warehouse import catalog

    key = EncoderKey.parse(encoder)
    ref = FeatureSetRef(dataset, key.encoder_id, key.regime)
    attrs = confirm_in_store(store_url, ref)
    with Warehouse.open(db) as wh:
        catalog.record_attrs(wh, store_url, ref, attrs)
    return str(attrs[DEGENERATE])
