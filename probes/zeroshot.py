"""Zero-shot classification as a probe kind (METHODS.md §3.5): no training image, no fit.

The class (or, for multilabel tasks, positive and negative) text embeddings of one prompt set
are written into the feature set's attributes by `features.zeroshot`; a zero-shot "fit" reads
them. Its predictor takes the grid's standardised features, undoes the standardisation (so it
scores the stored projected image embedding itself), L2-normalises each row and computes
logits = logit_scale * <image, text> + logit_bias, as each model scores image-text pairs.
Multiclass and ordinal: softmax over the classes. Multilabel: per label, the sigmoid of the
positive-minus-negative logit difference (the two-way softmax of the pair).
"""

from __future__ import annotations

import numpy as np

from crsbench.core import CrsbenchError
from crsbench.features.store import FeatureSetRef, FeatureStore
from crsbench.ingest.types import Task
from crsbench.probes.reader import TrainStats
from crsbench.probes.registry import Predictor

ZEROSHOT = "zeroshot"
PROMPTS_MARK = "+prompts:"


def prompt_digest(weights_hash: str) -> str:
    """The prompt-set digest a zero-shot fit's identity carries (after its weights hash)."""
    return weights_hash.rpartition(PROMPTS_MARK)[2] if PROMPTS_MARK in weights_hash else ""


def logits_to_probs(logits: np.ndarray, task: Task) -> np.ndarray:
    if task is Task.MULTILABEL:
        half = logits.shape[1] // 2
        diff = logits[:, :half] - logits[:, half:]
        out: np.ndarray = 1.0 / (1.0 + np.exp(-diff))
        return out
    shifted = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    return np.asarray(e / e.sum(axis=1, keepdims=True))


def zeroshot_predictor(
    store: FeatureStore, ref: FeatureSetRef, stats: TrainStats, task: Task, digest: str
) -> Predictor:
    sets = dict(store.attrs(ref).get("zeroshot") or {})
    if digest not in sets:
        raise CrsbenchError(
            f"feature set {ref.path} has no text embeddings for prompt set {digest or '(none)'}; "
            f"run 'crsbench zeroshot --encoder {ref.encoder_id} --dataset {ref.dataset}'"
        )
    spec = sets[digest]
    text = np.asarray(spec["embeddings"], dtype=np.float64)
    scale, bias = float(spec["logit_scale"]), float(spec["logit_bias"])

    def predict(x_std: np.ndarray) -> np.ndarray:
        x = x_std * stats.std + stats.mean
        x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        return logits_to_probs(scale * (x @ text.T) + bias, task)

    return predict
