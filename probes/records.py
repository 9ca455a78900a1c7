"""Fit keys, their ids and the run-record frames the probes hand to the warehouse.

The run record's columns are declared once, in `crsbench.core.schema` (identity and context)
and by each metric's registration (`crsbench.probes.metrics.register_metric`); `runs_schema`
puts them together, and the warehouse builds its Parquet parts and comments from it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from crsbench.core import FROZEN
from crsbench.core.schema import Schema, run_schema
from crsbench.features.store import FeatureSetRef
from crsbench.probes.metrics import metric_columns


def runs_schema() -> Schema:
    """The run record as declared now, including every metric registered so far."""
    return run_schema(metric_columns())


def run_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The run records `rows` as one frame, its columns those of `runs_schema()` in order.

    Each row must hold exactly the schema's columns: a row with a key missing or one the schema
    lacks is a bug in whoever built it, so it raises (ValueError naming the missing and extra
    keys) rather than leaving a column NaN or dropping a value."""
    names = runs_schema().names
    expected = set(names)
    for keys in {frozenset(row) for row in rows}:
        if keys != expected:
            missing = [n for n in names if n not in keys]
            extra = sorted(keys - expected)
            raise ValueError(
                f"run row keys differ from the run schema: missing {', '.join(missing) or 'none'}; "
                f"extra {', '.join(extra) or 'none'}"
            )
    return pd.DataFrame(list(rows), columns=names)


__all__ = ["FitKey", "run_frame", "run_id", "runs_schema"]


def _digest(*parts: object) -> str:
    text = json.dumps([str(p) if isinstance(p, str) else p for p in parts], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclasses.dataclass(frozen=True, order=True)
class FitKey:
    """One probe fit: what it is trained on and how. Its id is a hash of exactly this.

    `data_digest` identifies the data (the dataset's `data_digest`, with those of its shift
    targets) and `weights_hash` the encoder weights its features came from; `run_grid`
    fills both in, so replacing a dataset or re-extracting other weights changes every fit id.
    A suite's fit is its own fit (own id, own runs): the protocol fit's runs, done before the grid
    gained the suite, stay as they are.
    """

    encoder_id: str
    dataset_id: str
    depth: float
    probe: str
    label_fraction: float
    seed: int
    regime: str = FROZEN
    data_digest: str = ""
    weights_hash: str = ""
    # A corruption suite's fit (`features.suites`): the same probe, trained as its protocol fit is,
    # evaluated on the suite's conditions only. Empty for the protocol's fit, whose id it leaves as is.
    suite: str = ""

    @property
    def fit_id(self) -> str:
        return _digest(
            "fit",
            self.encoder_id,
            self.dataset_id,
            round(float(self.depth), 6),
            self.probe,
            round(float(self.label_fraction), 6),
            int(self.seed),
            self.regime,
            self.data_digest,
            self.weights_hash,
            *((self.suite,) if self.suite else ()),
        )

    @property
    def feature_set(self) -> FeatureSetRef:
        return FeatureSetRef(self.dataset_id, self.encoder_id, self.regime)


def fit_data_digest(source_digest: str, targets: dict[str, str]) -> str:
    """The data identity of a fit: its dataset's digest and each shift target's (by name)."""
    return _digest("data", source_digest, sorted(targets.items()))


def run_id(fit_id: str, eval_dataset_id: str, condition: str) -> str:
    """The id of one evaluation of a fit: deterministic, so reruns produce the same ids."""
    return _digest("run", fit_id, eval_dataset_id, condition)
