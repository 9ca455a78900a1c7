"""`crsbench results export` (docs/METHODS.md §22.1): a site's results for one frozen panel as a
bundle that holds no image id, path, per-image prediction, embedding or label by default.

Parts:
* `runs`: the panel members' seed-level run records of the declared grid (frozen regime): keys,
  metrics (AUROC and ECE as columns, the others as one JSON object), counts; no run or fit ids.
* `cells`: the members' cells of view axes_cell, the four axes as this site computes them.
* `replicates`: per member cell, its axes under every bootstrap replicate (images and seeds
  resampled, as `crsbench analyze bootstrap`; seeds alone where no predictions are stored).
* `scores`: the members' rows of crs_encoder for the panel: this site's own CRS and AUROC.
* `anchors`: the panel's frozen anchors.
* `predictions` (only with include_predictions): the members' stored per-image predictions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.analyses.uncertainty.bootstrap import bootstrap_scores
from crsbench.core import AXES, CrsbenchError, ProgressFn, __version__
from crsbench.exchange.bundle import BUNDLE_FORMAT, BUNDLE_SCHEMA, encode, manifest_digest, write_bundle
from crsbench.exchange.protocol import site_protocol
from crsbench.exchange.signing import sign
from crsbench.probes.metrics import METRICS
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import Panel, get_panel
from crsbench.warehouse.schema import SCHEMA_VERSION

RUN_KEYS = (
    "encoder_id", "dataset_id", "eval_dataset_id", "regime", "probe", "depth", "label_fraction", "seed", "condition",
)  # fmt: skip
CELL_COLUMNS = ("encoder_id", "dataset_id", "regime", *AXES, "aulc", "n_perturbed", "n_shift", "complete", "pretrained")
SCORE_COLUMNS = ("encoder_id", "crs", "auroc", "crs_rank", "auroc_rank", "dominance", "ideal", "worst")


@dataclass(frozen=True)
class ExportSummary:
    path: Path
    digest: str
    site: str
    panel: str
    parts: dict[str, int]  # part -> rows
    signed_by: str | None
    resample: str
    added_by_predictions: str | None  # what --include-predictions added, in words


def _runs(wh: Warehouse, members: list[str]) -> pd.DataFrame:
    others = [m for m in METRICS.names() if m not in ("auroc", "ece")]
    frame = wh.sql(
        f"select {', '.join(RUN_KEYS)}, auroc, ece, {', '.join(others)}, n_train, n_test, pretrained "
        "from runs_grid where in_grid and regime = 'frozen' and list_contains(?, encoder_id) "
        f"order by {', '.join(RUN_KEYS)}",
        [members],
    )
    metrics = frame[others].astype(float)
    frame["metrics"] = [
        json.dumps({k: (None if not np.isfinite(v) else v) for k, v in row.items()}, sort_keys=True)
        for row in metrics.to_dict("records")
    ]
    return frame.drop(columns=others)


def _replicates(
    wh: Warehouse, members: list[str], replicates: int, seed: int, progress: ProgressFn | None
) -> tuple[pd.DataFrame, str]:
    has_predictions = bool(wh.sql("select count(*) as n from predictions limit 1")["n"][0])
    resample = "images+seeds" if has_predictions else "seeds"
    if progress:
        progress("bootstrap replicates for the bundle", 0, 1)
    scores, _ = bootstrap_scores(wh, members, replicates, resample, np.random.default_rng(seed))
    cells = scores[scores["scope"] != "global"].rename(columns={"scope": "dataset_id"})
    if progress:
        progress("bootstrap replicates for the bundle", 1, 1)
    frame = cells[["replicate", "encoder_id", "dataset_id", *AXES]].astype({"replicate": "int32"})
    return frame.sort_values(["replicate", "encoder_id", "dataset_id"]).reset_index(drop=True), resample


def _parts(wh: Warehouse, panel: Panel, replicates: int, seed: int, progress: ProgressFn | None) -> dict[str, Any]:
    members = list(panel.members)
    cells = wh.sql(
        f"select {', '.join(CELL_COLUMNS)} from axes_cell where regime = 'frozen' and list_contains(?, encoder_id) "
        "order by encoder_id, dataset_id",
        [members],
    )
    scores = wh.sql(
        f"select {', '.join(SCORE_COLUMNS)} from crs_encoder where panel = ? and regime = 'frozen' "
        "and list_contains(?, encoder_id) order by encoder_id",
        [panel.name, members],
    )
    replicate_rows, resample = _replicates(wh, members, replicates, seed, progress)
    return {
        "runs": _runs(wh, members),
        "cells": cells,
        "scores": scores,
        "anchors": panel.anchors[["scope", "axis", "lo", "hi"]].reset_index(drop=True),
        "replicates": replicate_rows,
        "resample": resample,
    }


def _predictions(wh: Warehouse, members: list[str]) -> pd.DataFrame:
    return wh.sql(
        "select p.* from predictions p join runs r using (run_id) "
        "where r.regime = 'frozen' and list_contains(?, r.encoder_id) order by all",
        [members],
    )


def export_bundle(
    wh: Warehouse,
    panel_name: str,
    site: str,
    out: Path,
    *,
    key: Path | None = None,
    include_predictions: bool = False,
    replicates: int = 200,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> ExportSummary:
    """Write the bundle of `panel_name`'s members at `site` to `out` (signed with `key` if given)."""
    site = site.strip()
    if replicates < 0:
        raise CrsbenchError(f"--replicates must be 0 or more, got {replicates}")
    if not site or any(c in site for c in "\n\r\t"):
        raise CrsbenchError(f"--site {site!r}: give the site a one-line name, e.g. 'hospital-a'")
    panel = get_panel(wh, panel_name)
    parts = _parts(wh, panel, replicates, seed, progress)
    resample = parts.pop("resample")
    if parts["cells"].empty:
        raise CrsbenchError(f"panel {panel_name!r}: no member has a cell in this warehouse; nothing to export")
    datasets = sorted(set(parts["cells"]["dataset_id"]))
    added = None
    if include_predictions:
        parts["predictions"] = _predictions(wh, list(panel.members))
        added = (
            f"predictions: {len(parts['predictions']):,} per-image rows with image ids "
            f"({', '.join(parts['predictions'].columns)})"
        )
    manifest = {
        "format": BUNDLE_FORMAT,
        "bundle_schema": BUNDLE_SCHEMA,
        "crsbench_version": __version__,
        "warehouse_schema": SCHEMA_VERSION,
        "site": site,
        "panel": {"name": panel.name, "members": list(panel.members), "frozen_at": str(panel.frozen_at)},
        "exported_at": datetime.now(UTC).replace(tzinfo=None).isoformat(timespec="seconds"),
        "bootstrap": {"replicates": replicates, "resample": resample, "seed": seed},
        "includes_predictions": include_predictions,
        "protocol": site_protocol(wh, datasets, sorted(set(parts["runs"]["condition"]))),
    }
    manifest_bytes, files = encode(manifest, parts)
    signature, signed_by = None, None
    if key is not None:
        public, sig = sign(key, manifest_bytes)
        signature = {"key_id": public.key_id, "public_key": public.line(), "signature": sig.hex()}
        signed_by = public.key_id
    write_bundle(out, manifest_bytes, files, signature)
    return ExportSummary(
        out, manifest_digest(manifest_bytes), site, panel.name, {k: len(v) for k, v in parts.items()}, signed_by,
        resample, added,
    )  # fmt: skip
