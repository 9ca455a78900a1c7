"""Classifier transfer between encoders (METHODS.md §16): B's stored probe on A's mapped features."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from crsbench.warehouse.connection import Warehouse

DEFAULT_IMAGES = 4096
DEFAULT_RIDGE = 1e-3
COLUMNS = (
    "dataset_id",
    "encoder_a",
    "encoder_b",
    "depth",
    "seed",
    "m_images",
    "auroc_b",
    "auroc_mapped",
    "retention",
    "lo",
    "hi",
    "ece_b",
    "ece_mapped",
    "n_test",
)


def empty() -> pd.DataFrame:
    return pd.DataFrame(columns=list(COLUMNS))


def dataset_transfer(
    wh: Warehouse, imgs: Any, sources: Sequence[Any], depth: float, params: Mapping[str, Any]
) -> tuple[pd.DataFrame, list[str]]:
    return empty(), []
