"""The prompt sets of zero-shot fits and the declared zero-shot cells (METHODS.md §3.5).

A zero-shot fit's id covers its prompt set's digest (`probes.zeroshot`); `zeroshot_prompts` keeps
the set itself (classes, templates, the model's logit scale and bias) so a run can always be traced
to the exact prompts, and view `zeroshot_vs_probe` takes each cell's latest set.

`zeroshot_grid` declares the zero-shot cells: one row per (image-text encoder, dataset) the user
ran `crsbench zeroshot` on, with the prompt set now declared (the latest run). View
`grid_declared_zeroshot` expands each row into the run keys the cell must hold (probe 'zeroshot',
depth 1.0, label fraction 0, seed 0, every condition of the dataset's grid), so `grid_missing` and
`cell_completeness` account for them; no score reads them (the CRS reads logreg only).
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

ZEROSHOT_GRID = Schema(
    "zeroshot_grid",
    "One row per declared zero-shot cell (image-text encoder, dataset): 'crsbench zeroshot' declares it "
    "with the prompt set it ran, and view grid_declared_zeroshot expands it into the run keys the cell "
    f"must hold (probe 'zeroshot', depth 1.0, label fraction 0, seed 0, every condition). {_M} §3.5.",
    (
        ENCODER,
        DATASET,
        Column(
            "prompt_hash",
            "VARCHAR",
            f"The declared prompt set (zeroshot_prompts.prompt_hash): only its runs fill the cell. {_M} §3.5.",
        ),
        Column("declared_at", "TIMESTAMP", f"When the cell (or its current prompt set) was declared (UTC). {_M} §3.5."),
    ),
    since=15,
)


def backfill_grid_sql() -> list[str]:
    """Declare the cells of the zero-shot fits recorded before schema 15, each with its latest set."""
    return [
        """insert into zeroshot_grid (encoder_id, dataset_id, prompt_hash, declared_at)
           select encoder_id, dataset_id, prompt_hash, created_at from zeroshot_prompts
           qualify row_number() over (partition by encoder_id, dataset_id order by created_at desc, prompt_hash) = 1"""
    ]


def declare_cells(con: duckdb.DuckDBPyConnection, rows: Iterable[tuple[str, str, str]]) -> None:
    """Declare (encoder, dataset, prompt hash) zero-shot cells; a cell's earlier set is replaced."""
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    for encoder_id, dataset_id, prompt_hash in rows:
        con.execute("delete from zeroshot_grid where encoder_id = ? and dataset_id = ?", [encoder_id, dataset_id])
        con.execute("insert into zeroshot_grid values (?, ?, ?, ?)", [encoder_id, dataset_id, prompt_hash, now])


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
