"""The prompt sets of zero-shot fits (METHODS.md §3.5): which prompts made which fit.

A zero-shot fit's id covers its prompt set's digest (`probes.zeroshot`); this table keeps the
set itself (classes, templates, the model's logit scale and bias) so a run can always be traced
to the exact prompts, and view `zeroshot_vs_probe` takes each cell's latest set.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from typing import Any

import duckdb

from crsbench.core.schema import Column, Schema
from crsbench.warehouse.schema_columns import DATASET, ENCODER
from crsbench.warehouse.schema_columns import METHODS as _M

ZEROSHOT_PROMPTS = Schema(
    "zeroshot_prompts",
    f"One row per zero-shot fit: the prompt set (class phrases, templates) its predictions came from. {_M} §3.5.",
    (
        Column("fit_id", "VARCHAR", f"Fit id of the zero-shot fit (runs.fit_id, probe 'zeroshot'). {_M} §3.5."),
        ENCODER,
        DATASET,
        Column(
            "prompt_hash",
            "VARCHAR",
            f"SHA-256 (16 hex digits) of the prompt set's canonical JSON; part of the fit id. {_M} §3.5.",
        ),
        Column(
            "prompts",
            "VARCHAR",
            f"JSON: classes (label -> phrase), templates, negative_templates (multilabel). {_M} §3.5.",
        ),
        Column("logit_scale", "DOUBLE", f"The model's logit scale (exponentiated) the logits used. {_M} §3.5."),
        Column("logit_bias", "DOUBLE", f"The model's logit bias (SigLIP; 0 otherwise). {_M} §3.5."),
        Column("created_at", "TIMESTAMP", f"When the zero-shot fit was recorded (UTC). {_M} §3.5."),
    ),
    since=9,
)


def record_prompts(con: duckdb.DuckDBPyConnection, rows: Iterable[dict[str, Any]]) -> int:
    """Insert the rows of fits not yet recorded (idempotent); returns how many were new."""
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    have = {r[0] for r in con.execute("select fit_id from zeroshot_prompts").fetchall()}
    new = [r for r in rows if r["fit_id"] not in have]
    for r in new:
        con.execute(
            "insert into zeroshot_prompts values (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                r["fit_id"],
                r["encoder_id"],
                r["dataset_id"],
                r["prompt_hash"],
                json.dumps(r["prompts"], sort_keys=True),
                float(r["logit_scale"]),
                float(r["logit_bias"]),
                now,
            ],
        )
    return len(new)
