"""Types shared by every stage after ingest: the task kinds and the dataset handle.

This module sits at the start of the one-way flow (ingest -> features -> probes ->
warehouse -> sql -> analyses), so every later stage may import it.
"""

from __future__ import annotations

import dataclasses
from enum import StrEnum
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.core import InputError


class Task(StrEnum):
    MULTICLASS = "multiclass"
    ORDINAL = "ordinal"
    MULTILABEL = "multilabel"

    @classmethod
    def parse(cls, value: str) -> Task:
        try:
            return cls(value)
        except ValueError:
            known = ", ".join(t.value for t in cls)
            raise InputError(f"unknown task type {value!r}; expected one of: {known}") from None


IMAGE_COLUMNS: tuple[str, ...] = ("image_id", "rel_path", "sha256", "group_id", "split")


@dataclasses.dataclass
class Dataset:
    """One ingested dataset, as every stage sees it.

    `images` has one row per image in store order (its index is the row number used
    by the feature store) with the columns in IMAGE_COLUMNS. `labels` is aligned with
    those rows: int class indices of shape (n,) for multiclass/ordinal tasks, 0/1 int8
    of shape (n, L) for multilabel. `fractions` lists the nested label-fraction subsets
    of the train split as rows (seed, fraction, image_id); fraction 1.0 is all of train.
    `metadata` holds the images' published metadata (age, sex, view, ...) as long rows.
    """

    name: str
    adapter: str
    root: Path
    task: Task
    label_names: list[str]
    images: pd.DataFrame
    labels: np.ndarray
    fractions: pd.DataFrame
    errors: pd.DataFrame = dataclasses.field(default_factory=lambda: pd.DataFrame(columns=["row", "file", "message"]))
    # Imaging domain ('derm' | 'eye' | 'rad' | 'none'), matched against encoders.domain (E1),
    # and the adapter options the labels were derived with (e.g. uncertainty='zeros').
    domain: str = "none"
    options: dict[str, str] = dataclasses.field(default_factory=dict)
    # Per-image metadata as long rows (image_id, key, value), binned (ingest.metadata); not part
    # of data_digest: no probe reads it.
    metadata: pd.DataFrame = dataclasses.field(
        default_factory=lambda: pd.DataFrame(columns=["image_id", "key", "value"], dtype=object)
    )
    # What the data is, a name of ingest.known_datasets (the adapter's, or --source), matched
    # against encoders' declared pretraining data; None: unknown. Not part of data_digest.
    source: str | None = None
    # What ingest accepted but warns about (e.g. a test split that cannot support the image-level
    # bootstrap, ingest.strata); not stored, not part of data_digest.
    warnings: list[str] = dataclasses.field(default_factory=list)

    @property
    def n_images(self) -> int:
        return len(self.images)

    def split_rows(self, split: str) -> np.ndarray:
        """Row numbers (store order) of one split."""
        return np.flatnonzero(self.images["split"].to_numpy() == split)

    def fraction_rows(self, fraction: float, seed: int) -> np.ndarray:
        """Row numbers of the train subset for a label fraction and seed, in store order."""
        if fraction >= 1.0:
            return self.split_rows("train")
        chosen = self.fractions[(self.fractions["seed"] == seed) & np.isclose(self.fractions["fraction"], fraction)][
            "image_id"
        ]
        if chosen.empty:
            raise InputError(f"dataset {self.name!r} has no label-fraction subset {fraction:g} for seed {seed}")
        mask = self.images["image_id"].isin(set(chosen)).to_numpy()
        return np.flatnonzero(mask)

    def image_digest(self) -> str:
        """SHA-256 over the ordered image ids and content hashes: changes if any image changes."""
        import hashlib

        h = hashlib.sha256()
        for image_id, sha in zip(self.images["image_id"], self.images["sha256"], strict=True):
            h.update(f"{image_id}\t{sha}\n".encode())
        return h.hexdigest()

    def data_digest(self) -> str:
        """SHA-256 over everything a probe's numbers depend on: the images (`image_digest`),
        the task, label names, labels, splits and label-fraction subsets. Part of every fit id,
        so a dataset replaced by other images or labels is never mistaken for the old one."""
        import hashlib
        import json

        h = hashlib.sha256()
        h.update(self.image_digest().encode())
        h.update(json.dumps([str(self.task), list(self.label_names)]).encode())
        h.update("\n".join(self.images["split"].astype(str)).encode())
        h.update(np.ascontiguousarray(np.asarray(self.labels, dtype=np.int64)).tobytes())
        fractions = self.fractions[["seed", "fraction", "image_id"]].astype(
            {"seed": "int64", "fraction": "float64", "image_id": str}
        )
        for seed, fraction, image_id in sorted(fractions.itertuples(index=False, name=None)):
            h.update(f"{seed}\t{fraction:.6f}\t{image_id}\n".encode())
        return h.hexdigest()
