"""Class text embeddings of a prompt set, kept beside an encoder's image features (METHODS.md §3.5).

For each class the prompt embeddings (its phrase in every template) are L2-normalised, averaged
and the mean normalised again, as CLIP does for its prompt ensembles; multilabel sets stack the
positive rows over the negative ones. They are written into the feature set's attributes under
`zeroshot/<digest>` with the prompts, the model's logit scale and bias, and the set becomes the
feature set's active one (`zeroshot_active`), which the next zero-shot fits take. Sets written
before stay, so runs of an earlier prompt set remain readable and reproducible.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from crsbench.core import CrsbenchError
from crsbench.features.lookup import list_encoders
from crsbench.features.registry import EncoderEntry
from crsbench.features.store import PROJ, Depth, FeatureSetRef, FeatureStore
from crsbench.features.text import TextTower
from crsbench.ingest.prompts import PromptSet
from crsbench.ingest.types import Task


def _unit(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
    return out


def class_embeddings(tower: TextTower, prompts: PromptSet, task: Task) -> np.ndarray:
    """(K, dim) per-class embeddings; (2L, dim), positives then negatives, for multilabel."""

    def per_class(templates: tuple[str, ...]) -> np.ndarray:
        return np.stack([_unit(_unit(tower.encode(texts)).mean(axis=0)) for texts in prompts.texts(templates)])

    if task is Task.MULTILABEL:
        return np.concatenate([per_class(prompts.templates), per_class(prompts.negative_templates)])
    return per_class(prompts.templates)


def check_zero_shot_encoder(entry: EncoderEntry) -> None:
    """Zero-shot needs a text tower (the image side is checked per feature set: `image_depth`)."""
    if entry.text_tower is None:
        have = ", ".join(e.id for e in list_encoders() if e.text_tower is not None)
        raise CrsbenchError(
            f"encoder {entry.id!r} has no text tower, so it cannot classify zero-shot; encoders with one: {have}"
        )


def image_depth(store: FeatureStore, ref: FeatureSetRef, entry: EncoderEntry) -> Depth | None:
    """Where a feature set keeps the projected image embedding: `proj` when stored (BioViL),
    depth 1.0 for projection-pooled entries; None when it has none."""
    if store.has_proj(ref):
        return PROJ
    return 1.0 if entry.pooling == "projection" else None


def check_image_depth(store: FeatureStore, ref: FeatureSetRef, entry: EncoderEntry) -> Depth:
    depth = image_depth(store, ref, entry)
    if depth is None:
        raise CrsbenchError(
            f"encoder {entry.id!r}: feature set {ref.path} holds no projected image embedding (pooling "
            f"{entry.pooling!r} and no depth {PROJ!r}), so zero-shot scores cannot be computed from it; "
            f"re-extract it with 'crsbench extract --encoder {entry.id} --dataset {ref.dataset} --force'"
        )
    return depth


def store_text_embeddings(
    store: FeatureStore, ref: FeatureSetRef, prompts: PromptSet, task: Task, tower: TextTower, entry: EncoderEntry
) -> str:
    """Write the set's class embeddings into the feature set's attributes; returns its digest."""
    store.attrs(ref)  # a missing feature set is named with its extract command
    depth = check_image_depth(store, ref, entry)
    embeddings = class_embeddings(tower, prompts, task)
    dim = store.array(ref, depth, "clean").shape[1]
    if embeddings.shape[1] != dim:
        raise CrsbenchError(
            f"encoder {ref.encoder_id!r}: text embeddings have {embeddings.shape[1]} dimensions but its "
            f"stored image embeddings {dim}"
        )
    group = store.root(writable=True)[ref.path]
    sets: dict[str, Any] = dict(cast("dict[str, Any]", group.attrs.get("zeroshot") or {}))
    sets[prompts.digest] = {
        "prompts": prompts.to_dict(),
        "embeddings": embeddings.tolist(),
        "logit_scale": tower.logit_scale,
        "logit_bias": tower.logit_bias,
    }
    group.attrs.update({"zeroshot": sets, "zeroshot_active": prompts.digest})
    return prompts.digest
