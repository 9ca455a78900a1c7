"""Zero-shot classification as a probe kind (METHODS.md §3.5; the predictor is `probes.zeroshot`)."""

from __future__ import annotations

import numpy as np

from crsbench.core import CrsbenchError
from crsbench.ingest.types import Task
from crsbench.probes.registry import Predictor, register_probe
from crsbench.probes.zeroshot import ZEROSHOT


@register_probe(
    ZEROSHOT,
    seeded=False,
    zero_shot=True,
    description="zero-shot: logit scale x cosine(image embedding, per-class mean of L2-normalised prompt "
    "embeddings) + bias; softmax (multiclass/ordinal) or sigmoid of positive-minus-negative (multilabel); "
    "label fraction 0, no training images",
)
def zeroshot_fit(x: np.ndarray, y: np.ndarray, task: Task, n_outputs: int, seed: int) -> Predictor:
    # A zero-shot "fit" reads the text embeddings of its feature set (`probes.zeroshot.zeroshot_predictor`):
    # the grid's fit path has none to give it.
    raise CrsbenchError("zero-shot needs text embeddings: run it with 'crsbench zeroshot'")
