"""The eight items of the reporting card (crsbench/reads/card.py), one function each: (wh, relations
present, panel) -> CardItem. Each reads one or two relations with plain aggregates."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pandas as pd

from crsbench.core import FROZEN
from crsbench.core.schema import sql_identifier
from crsbench.probes.metrics import METRICS
from crsbench.reads.card_model import CardItem, Value
from crsbench.warehouse.connection import Warehouse

COMMANDS = {
    "partition": "crsbench analyze partition",
    "adapt": "crsbench adapt --encoder ENCODER --dataset DATASET",
    "operating_points": "crsbench analyze operating_points",
    "e2": "crsbench analyze e2",
    "bootstrap": "crsbench analyze bootstrap",
    "resplit": "crsbench analyze resplit --repeats 5",
    "shortcuts": "crsbench analyze shortcuts",
    "probe": "crsbench probe",
    "ingest": "crsbench ingest",
}
RESAMPLE_UNITS = {
    "images+seeds": "test images (stratified by class, grouped by patient or lesion) jointly with the seeds",
    "images": "test images (stratified by class, grouped by patient or lesion)",
    "seeds": "the label-fraction seeds (paired across encoders)",
}


def fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def present_relations(wh: Warehouse) -> set[str]:
    return {r[0] for r in wh.con.execute("select table_name from information_schema.tables").fetchall()}


def _rows(
    wh: Warehouse, present: set[str], relation: str, query: str, params: list[object] | None = None
) -> pd.DataFrame:
    """The query's rows, or an empty frame when `relation` is absent (an analysis not run)."""
    if relation not in present:
        return pd.DataFrame()
    return wh.sql(query, params or [])


# -- 1. split ----------------------------------------------------------------------------------


def split_kind(adapter: str | None, options: str | None) -> str:
    """Official or derived, from the adapter and its options (METHODS.md §1)."""
    opts = json.loads(options) if options else {}
    if adapter == "mimic-cxr" and opts.get("official_split", "true") == "true":
        return "official (the publisher's split file)"
    if adapter == "chexpert" and opts.get("valid_as_test", "true") == "true":
        return "official test (valid.csv), train/calib derived"
    if adapter == "medmnist":
        return "official"
    if adapter == "manifest":
        return "the manifest's split column, else derived"
    if adapter == "folder":
        return "the split folders where present, else derived"
    return "derived"


def _split(wh: Warehouse, present: set[str], panel: str | None) -> CardItem:
    datasets = wh.sql(
        "select d.dataset_id, d.adapter, d.options, "
        "count(*) filter (where i.split = 'train') as n_train, count(*) filter (where i.split = 'calib') as n_calib, "
        "count(*) filter (where i.split = 'test') as n_test from datasets d join images i using (dataset_id) "
        "group by all order by 1"
    )
    crossing = wh.sql(
        "select dataset_id, count(*) as n from (select dataset_id, group_id from images where group_id is not null "
        "group by all having count(distinct split) > 1) group by all"
    )
    crossed = dict(zip(crossing["dataset_id"], crossing["n"], strict=True))
    shift = _rows(
        wh,
        present,
        "partition_shift",
        "select dataset, pair, other_dataset, avg(auroc) as auroc, avg(auroc_lo) as lo, avg(auroc_hi) as hi, "
        "count(*) as n from partition_shift group by all order by all",
    )
    values: dict[str, Value] = {}
    statements = []
    for r in datasets.itertuples():
        n_cross = int(crossed.get(r.dataset_id, 0))
        values[f"{r.dataset_id}.groups_crossing_splits"] = n_cross
        safe = "group-safe" if n_cross == 0 else f"NOT group-safe: {n_cross} groups cross splits"
        text = (
            f"{r.dataset_id}: {split_kind(r.adapter, r.options)}, {safe}, "
            f"{r.n_train}/{r.n_calib}/{r.n_test} train/calib/test images"
        )
        for p in shift[shift["dataset"] == r.dataset_id].itertuples() if len(shift) else ():
            values[f"{r.dataset_id}.{p.pair}.partition_auroc"] = float(p.auroc)
            against = "pool vs test" if p.pair == "pool_vs_test" else f"vs {p.other_dataset} test"
            text += (
                f", partition classifier AUROC ({against}) {fmt(p.auroc)} "
                f"[{fmt(p.lo)}, {fmt(p.hi)}] (mean of {p.n} encoders; 0.5 = indistinguishable)"
            )
        statements.append(text)
    if datasets.empty:
        return CardItem("split", "Split", (), {}, (f"datasets: {COMMANDS['ingest']}",))
    not_run = () if len(shift) else (f"partition classifier: {COMMANDS['partition']}",)
    return CardItem("split", "Split", tuple(statements), values, not_run)


# -- 2. training policy ------------------------------------------------------------------------


def _training(wh: Warehouse, present: set[str], panel: str | None) -> CardItem:
    regimes = _rows(
        wh,
        present,
        "runs",
        "select regime, count(distinct encoder_id) as encoders, count(*) as runs from runs "
        "where regime is not null group by all order by regime",
    )
    if regimes.empty:
        return CardItem("training", "Training policy", (), {}, (f"runs: {COMMANDS['probe']}",))
    values: dict[str, Value] = {f"{r.regime}.encoders": int(r.encoders) for r in regimes.itertuples()}
    adapted = regimes[regimes["regime"] != FROZEN]
    n_frozen = int(regimes.loc[regimes["regime"] == FROZEN, "encoders"].sum())
    statements = [f"frozen encoders with linear probes: {n_frozen}"]
    if adapted.empty:
        return CardItem(
            "training", "Training policy", tuple(statements), values, (f"LoRA adaptation: {COMMANDS['adapt']}",)
        )
    statements.append(
        "adapted (LoRA) variants: " + ", ".join(f"{r.regime} ({r.encoders} encoders)" for r in adapted.itertuples())
    )
    agreement = _rows(
        wh,
        present,
        "rank_agreement_regime",
        "select regime, metric, n, kendall_tau, top3_overlap from rank_agreement_regime "
        "where panel = ? and metric = 'crs' order by regime",
        [panel],
    )
    family = agreement[~agreement["regime"].str.contains(r"-s\d+$", regex=True)] if len(agreement) else agreement
    for r in (family if len(family) else agreement).itertuples():
        values[f"{r.regime}.kendall_tau"] = float(r.kendall_tau)
        statements.append(
            f"frozen-to-{r.regime} CRS rank agreement: Kendall tau {fmt(r.kendall_tau)}, "
            f"Top-3 overlap {fmt(r.top3_overlap)} ({r.n} encoders, panel {panel})"
        )
    not_run = () if len(agreement) else (f"rank agreement (a frozen panel scoring both regimes): {COMMANDS['adapt']}",)
    return CardItem("training", "Training policy", tuple(statements), values, not_run)


# -- 3. threshold policy -----------------------------------------------------------------------


def _threshold(wh: Warehouse, present: set[str], panel: str | None) -> CardItem:
    rules = _rows(
        wh,
        present,
        "operating_points",
        "select rule, avg(balanced_accuracy) as ba, count(distinct run_id) as runs from operating_points "
        "where condition = 'clean' and balanced_accuracy is not null group by all order by rule",
    )
    if rules.empty:
        return CardItem("threshold", "Threshold policy", (), {}, (f"operating points: {COMMANDS['operating_points']}",))
    gaps = wh.sql(
        "select case when condition in ('clean', 'shift') then condition else 'perturbed' end as kind, "
        "avg(transfer_gap) as gap from operating_points where transfer_gap is not null group by all order by 1"
    )
    values: dict[str, Value] = {f"{r.rule}.balanced_accuracy": float(r.ba) for r in rules.itertuples()}
    values |= {f"transfer_gap.{r.kind}": float(r.gap) for r in gaps.itertuples()}
    statements = (
        "thresholds chosen on each fit's calibration split, applied unchanged: "
        + ", ".join(f"{r.rule} balanced accuracy {fmt(r.ba)}" for r in rules.itertuples())
        + " (clean test, mean over runs and classes)",
        "threshold transfer gap (test-optimal minus calibration-chosen balanced accuracy): "
        + ", ".join(f"{r.kind} {fmt(r.gap)}" for r in gaps.itertuples()),
    )
    return CardItem("threshold", "Threshold policy", statements, values)


# -- 4. metrics --------------------------------------------------------------------------------


def _metrics(wh: Warehouse, present: set[str], panel: str | None) -> CardItem:
    # Every registered metric (read now, so one registered after import is listed too) that some run recorded.
    names = METRICS.names()
    counts = _rows(
        wh,
        present,
        "runs",
        "select " + ", ".join(f"count({sql_identifier(m)}) as {sql_identifier(m)}" for m in names) + " from runs",
    )
    if counts.empty or int(counts["auroc"].iloc[0]) == 0:
        return CardItem("metrics", "Metrics", (), {}, (f"runs: {COMMANDS['probe']}",))
    recorded = [m for m in names if int(counts[m].iloc[0]) > 0]
    values: dict[str, Value] = {f"runs_with.{m}": int(counts[m].iloc[0]) for m in recorded}
    statements = [
        "per run: " + ", ".join(recorded) + " (AUROC macro one-vs-rest and threshold-free; ECE 15 equal-width bins)"
    ]
    spread = _rows(
        wh,
        present,
        "axes_encoder",
        "select max(discrimination) - min(discrimination) as spread, count(*) as n from axes_encoder "
        "where regime = ? and discrimination is not null",
        [FROZEN],
    )
    if len(spread) and int(spread["n"].iloc[0]) > 1:
        values["auroc_spread_encoders"] = float(spread["spread"].iloc[0])
        statements.append(
            f"AUROC spread across the {int(spread['n'].iloc[0])} frozen encoders: {fmt(spread['spread'].iloc[0])}"
        )
    moved = _rows(
        wh,
        present,
        "operating_points",
        "select avg(spread) as moved from (select max(ba) - min(ba) as spread from (select encoder_id, "
        "eval_dataset_id, rule, avg(balanced_accuracy) as ba from operating_points where condition = 'clean' "
        "group by all) group by encoder_id, eval_dataset_id)",
    )
    not_run: tuple[str, ...] = ()
    if len(moved) and moved["moved"].notna().iloc[0]:
        values["balanced_accuracy_spread_rules"] = float(moved["moved"].iloc[0])
        statements.append(
            "balanced accuracy moved by the threshold rule alone: "
            f"{fmt(moved['moved'].iloc[0])} (mean over encoders and datasets, clean test)"
        )
    else:
        not_run = (f"threshold metrics: {COMMANDS['operating_points']}",)
    return CardItem("metrics", "Metrics", tuple(statements), values, not_run)


# -- 5. calibration ----------------------------------------------------------------------------


def _calibration(wh: Warehouse, present: set[str], panel: str | None) -> CardItem:
    cells = _rows(
        wh,
        present,
        "analysis_e2_cells",
        "select method, avg(ece_before) as before, avg(ece_after) as after, count(*) as n "
        "from analysis_e2_cells where kind = 'clean' group by all order by after",
    )
    if cells.empty:
        return CardItem("calibration", "Calibration", (), {}, (f"recalibration (E2): {COMMANDS['e2']}",))
    values: dict[str, Value] = {"ece_before": float(cells["before"].iloc[0])}
    values |= {f"{r.method}.ece_after": float(r.after) for r in cells.itertuples()}
    statements = (
        f"ECE before recalibration {fmt(cells['before'].iloc[0])}; after (fitted on the calibration split): "
        + ", ".join(f"{r.method} {fmt(r.after)}" for r in cells.itertuples())
        + f" (clean test, mean over {int(cells['n'].iloc[0])} cells)",
    )
    return CardItem("calibration", "Calibration", statements, values)


# -- 6. uncertainty ----------------------------------------------------------------------------


def _uncertainty(wh: Warehouse, present: set[str], panel: str | None) -> CardItem:
    widths = _rows(
        wh,
        present,
        "bootstrap_intervals",
        # avg skips the NULL widths of intervals that cannot vary (note): n/a, never a width of 0.
        "select resample, metric, avg(hi - lo) as width, max(replicates) as replicates, "
        "count(*) filter (where note is not null) as n_na, count(*) as n from bootstrap_intervals "
        "where panel = ? and encoder_id is not null and dataset_id is null and metric in ('crs', 'discrimination') "
        "group by all order by resample, metric",
        [panel],
    )
    values: dict[str, Value] = {}
    statements = []
    not_run = []
    if len(widths):
        chosen = "images+seeds" if "images+seeds" in set(widths["resample"]) else str(widths["resample"].iloc[0])
        part = widths[widths["resample"] == chosen]
        values["resample"] = chosen
        values |= {f"{r.metric}.interval_width": float(r.width) for r in part.itertuples() if pd.notna(r.width)}
        statements.append(
            f"bootstrap ({chosen}, {int(part['replicates'].max())} replicates) resamples "
            f"{RESAMPLE_UNITS.get(chosen, chosen)}; mean 95 % interval width: "
            + ", ".join(_width(r) for r in part.itertuples())
        )
    else:
        not_run.append(f"image/seed bootstrap: {COMMANDS['bootstrap']}" + (f" --panel {panel}" if panel else ""))
    resplit = _rows(
        wh,
        present,
        "resplit_selection",
        "select criterion, max(repeats) as repeats, avg(test_auroc_sd) as sd, max(test_auroc_max - test_auroc_min) "
        "as range from resplit_selection group by all order by criterion",
    )
    if len(resplit):
        values |= {f"resplit.{r.criterion}.test_auroc_sd": float(r.sd) for r in resplit.itertuples()}
        statements.append(
            f"split-level (refit on {int(resplit['repeats'].max())} re-drawn train/calib partitions, test fixed): "
            + ", ".join(
                f"selected on {r.criterion}: test AUROC sd {fmt(r.sd)}, widest range {fmt(r.range)}"
                for r in resplit.itertuples()
            )
        )
    else:
        not_run.append(f"split-level uncertainty: {COMMANDS['resplit']}")
    return CardItem("uncertainty", "Uncertainty", tuple(statements), values, tuple(not_run))


def _width(row: Any) -> str:
    """'CRS 0.123', or n/a where the resampling cannot move the metric (those rows are left out)."""
    label = "AUROC" if row.metric == "discrimination" else "CRS"
    if pd.isna(row.width):
        return f"{label} n/a (the same in every replicate: {row.resample} resampling does not move it)"
    left_out = f" ({int(row.n_na)} of {int(row.n)} n/a, left out)" if row.n_na else ""
    return f"{label} {fmt(row.width)}{left_out}"


# -- 7. shortcut audit -------------------------------------------------------------------------


def _shortcuts(wh: Warehouse, present: set[str], panel: str | None) -> CardItem:
    audit = _rows(
        wh,
        present,
        "shortcut_audit",
        "select dataset, split, bool_or(warn) as warn, "
        "max(estimate) filter (where metric = 'balanced_accuracy' and properties = 'header') as ba, "
        "max(chance) filter (where metric = 'balanced_accuracy' and properties = 'header') as chance, "
        "max(estimate) filter (where metric = 'auroc' and properties = 'header') as auroc, "
        "max(estimate) filter (where metric = 'max_class_auroc' and properties = 'header') as best, "
        "max(estimate) filter (where metric = 'auroc' and properties = 'header_and_size') as sized "
        "from shortcut_audit group by all order by dataset, split",
    )
    if audit.empty:
        return CardItem("shortcuts", "Shortcut audit", (), {}, (f"file-property classifier: {COMMANDS['shortcuts']}",))
    values: dict[str, Value] = {}
    statements = []
    for dataset, part in audit.groupby("dataset", sort=True):
        pool = part[part["split"] == "pool_cv"].iloc[0]
        test = part[part["split"] == "test"].iloc[0]
        values[f"{dataset}.pool_cv.balanced_accuracy"] = float(pool["ba"])
        values[f"{dataset}.pool_cv.auroc"] = float(pool["auroc"])
        values[f"{dataset}.test.auroc"] = float(test["auroc"])
        statements.append(
            f"{dataset}: file properties alone reach balanced accuracy {fmt(pool['ba'])} (chance "
            f"{fmt(pool['chance'])}), AUROC {fmt(pool['auroc'])}, best class {fmt(pool['best'])} inside the pool; "
            f"AUROC {fmt(test['auroc'])} on test; with the file size added (it also reflects the image "
            f"content) AUROC {fmt(pool['sized'])} inside the pool" + (" (WARNING)" if bool(pool["warn"]) else "")
        )
    warned = sorted(str(d) for d in audit.loc[audit["warn"].astype(bool), "dataset"].unique())
    warn = f"labels are predictable from file properties alone in {', '.join(warned)}" if warned else None
    return CardItem("shortcuts", "Shortcut audit", tuple(statements), values, warn=warn)


# -- 8. data provenance -------------------------------------------------------------------------


def _provenance(wh: Warehouse, present: set[str], panel: str | None) -> CardItem:
    """Per dataset, what it is and which encoders were pretrained on it (view encoder_dataset_overlap)."""
    rows = wh.sql(
        "select d.dataset_id, d.source, o.encoder_id, o.status, o.measured_share "
        "from datasets d left join encoder_dataset_overlap o using (dataset_id) order by d.dataset_id, o.encoder_id"
    )
    if rows.empty:
        return CardItem("provenance", "Data provenance", (), {}, (f"datasets: {COMMANDS['ingest']}",))
    values: dict[str, Value] = {}
    statements = []
    for dataset, part in rows.groupby("dataset_id", sort=True):
        source = part["source"].iloc[0]
        counts = part["status"].value_counts()
        for status in ("declared", "measured", "none", "unknown"):
            values[f"{dataset}.{status}"] = int(counts.get(status, 0))
        seen = [_overlap_text(r) for r in part.itertuples() if r.status in ("declared", "measured")]
        what = f"is {source}" if isinstance(source, str) else "source unknown (crsbench ingest --source)"
        text = f"{dataset}: {what}; pretrained on it: {', '.join(seen) if seen else 'no encoder known to be'}"
        if counts.get("unknown", 0):
            text += f"; unknown for {int(counts['unknown'])} of {int(part['encoder_id'].notna().sum())} encoders"
        statements.append(text)
    overlapping = sorted(
        {str(d) for d, s in zip(rows["dataset_id"], rows["status"], strict=True) if s in ("declared", "measured")}
    )
    warn = f"some encoders were pretrained on {', '.join(overlapping)} (leaderboard †)" if overlapping else None
    return CardItem("provenance", "Data provenance", tuple(statements), values, warn=warn)


def _overlap_text(row: Any) -> str:
    """E.g. 'rad-dino (declared)' or 'toy (measured 10.0 % of the images)'."""
    if row.status == "measured":
        return f"{row.encoder_id} (measured {100 * row.measured_share:.1f} % of the images)"
    return f"{row.encoder_id} (declared)"


ItemFn = Callable[[Warehouse, set[str], "str | None"], CardItem]
ITEMS: tuple[ItemFn, ...] = (
    _split,
    _training,
    _threshold,
    _metrics,
    _calibration,
    _uncertainty,
    _shortcuts,
    _provenance,
)
