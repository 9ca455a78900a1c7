"""Synthetic datasets and feature stores in the real layout, for the tests and benchmarks/.

No images: a `Dataset` with class-dependent Gaussian features written straight into a
feature store (`{dataset}/image_ids`, `{dataset}/{encoder}/d{..}/{condition}`, group attrs
with `complete = True`), perturbed conditions filled for test rows only (NaN elsewhere,
as extraction writes them) with severity-graded noise, so probes learn something and
perturbations hurt.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import zarr

from crsbench.core import CONDITIONS, DEPTHS, FRACTION_SEEDS, FROZEN, LABEL_FRACTIONS
from crsbench.features.store import FeatureSetRef, depth_key
from crsbench.ingest.types import Dataset, Task


def make_dataset(
    name: str,
    task: Task | str,
    n: int,
    n_outputs: int,
    *,
    seed: int = 0,
    split_share: tuple[float, float] = (0.6, 0.15),
) -> Dataset:
    """n images split train/calib/test, nested label fractions keeping every class/label."""
    task = Task(task)
    rng = np.random.default_rng(seed)
    labels: np.ndarray
    if task is Task.MULTILABEL:
        prevalence = rng.uniform(0.1, 0.4, n_outputs)
        labels = (rng.random((n, n_outputs)) < prevalence).astype(np.int8)
    else:
        labels = rng.integers(0, n_outputs, n)
        labels[:n_outputs] = np.arange(n_outputs)  # every class present
        rng.shuffle(labels)
    split = np.array(["test"] * n, dtype=object)
    order = rng.permutation(n)
    n_train, n_calib = int(n * split_share[0]), int(n * split_share[1])
    split[order[:n_train]] = "train"
    split[order[n_train : n_train + n_calib]] = "calib"
    image_ids = [f"{name}-{i:06d}" for i in range(n)]
    images = pd.DataFrame(
        {
            "image_id": image_ids,
            "rel_path": [f"{i}.png" for i in image_ids],
            "sha256": [f"{i:064x}" for i in range(n)],
            "group_id": image_ids,
            "split": split,
        }
    )
    train = np.flatnonzero(split == "train")
    frames = []
    for s in FRACTION_SEEDS:
        srng = np.random.default_rng(1000 + s)
        first = _covering_rows(labels[train], task, srng)
        rest = srng.permutation([i for i in range(len(train)) if i not in set(first)])
        ordered = train[np.concatenate([first, rest]).astype(np.int64)]
        for fraction in LABEL_FRACTIONS:
            size = max(len(first), math.ceil(fraction * len(train)))
            frames.append(
                pd.DataFrame({"seed": s, "fraction": fraction, "image_id": [image_ids[i] for i in ordered[:size]]})
            )
    names = [f"class{j}" for j in range(n_outputs)]
    return Dataset(
        name=name,
        adapter="synthetic",
        root=Path("."),
        task=task,
        label_names=names,
        images=images,
        labels=labels,
        fractions=pd.concat(frames, ignore_index=True),
    )


def _covering_rows(labels: np.ndarray, task: Task, rng: np.random.Generator) -> list[int]:
    """Positions that hold every class (or a positive and a negative of every label)."""
    chosen: list[int] = []
    if task is Task.MULTILABEL:
        for j in range(labels.shape[1]):
            for value in (1, 0):
                if not any(labels[i, j] == value for i in chosen):
                    chosen.append(int(rng.choice(np.flatnonzero(labels[:, j] == value))))
    else:
        for k in np.unique(labels):
            chosen.append(int(rng.choice(np.flatnonzero(labels == k))))
    return sorted(set(chosen))


def write_features(
    store_url: str | Path,
    dataset: Dataset,
    encoder_id: str,
    dim: int,
    *,
    regime: str = FROZEN,
    seed: int = 0,
    signal: float = 1.0,
    depths: tuple[float, ...] = DEPTHS,
    complete: bool = True,
    chunk_rows: int = 256,
    pretrained: bool = False,
    latent: int = 16,
    decay: float = 0.0,
) -> FeatureSetRef:
    """Write one feature set; returns its ref. Deterministic in (dataset, encoder, seed).

    `latent` nuisance factors with scales (j + 1) ** -decay are mixed into the `dim` features;
    decay ~ 1 gives the power-law spectrum typical of real encoder embeddings.
    """
    ref = FeatureSetRef(dataset.name, encoder_id, regime)
    rng = np.random.default_rng([seed, len(dataset.name), dim])
    root = zarr.open_group(str(store_url), mode="a", zarr_format=3)
    if f"{dataset.name}/image_ids" not in root:
        ids = dataset.images["image_id"].to_numpy().astype(str)
        arr = root.create_array(f"{dataset.name}/image_ids", shape=ids.shape, dtype=str, chunks=(max(len(ids), 1),))
        arr[:] = ids
    y = dataset.labels
    onehot = y.astype(np.float64) if y.ndim == 2 else np.eye(len(dataset.label_names))[y]
    n = len(y)
    test = (dataset.images["split"] == "test").to_numpy()
    group = root.require_group(ref.path)
    for depth in depths:
        # correlated features: a few latent factors (some class-driven) mixed into dim dims
        mix = rng.normal(size=(onehot.shape[1] + latent, dim)) / np.sqrt(latent)
        scales = (np.arange(latent) + 1.0) ** -decay * np.sqrt(
            latent / np.sum((np.arange(latent) + 1.0) ** (-2 * decay))
        )
        nuisance = rng.normal(size=(n, latent)) * scales
        factors = np.concatenate([onehot * signal * (0.5 + depth), nuisance], axis=1)
        base = factors @ mix + 0.5 * rng.normal(size=(n, dim))
        for condition in CONDITIONS:
            if condition == "clean":
                values = base
            else:
                severity = int(condition[-1])
                values = np.full((n, dim), np.nan)
                noise = rng.normal(size=(int(test.sum()), dim)) * 0.4 * severity
                values[test] = base[test] + noise
            arr = group.create_array(
                f"{depth_key(depth)}/{condition}",
                shape=(n, dim),
                chunks=(chunk_rows, dim),
                dtype="float16",
                fill_value=np.nan,
                overwrite=True,
            )
            arr[:] = values.astype(np.float16)
    group.attrs.update(
        {
            "complete": complete,
            "image_digest": dataset.image_digest(),
            "pretrained": pretrained,
            "dim": dim,
            "regime": regime,
            "code_version": "synthetic",
        }
    )
    return ref
