"""Zero-shot runs leave the CRS of every encoder exactly as it was (logreg stays the primary probe):
crs_encoder before and after adding zero-shot runs and their prompt rows are equal frames."""

from __future__ import annotations

import pandas as pd
from support.runs_factory import PROFILES, encoder_runs, frame

from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel
from crsbench.warehouse.zeroshot import record_prompts


def test_crs_encoder_unchanged_by_zero_shot_runs(tmp_path):
    runs = frame([r for e in PROFILES for r in encoder_runs(e)])
    db = tmp_path / "w.duckdb"
    with Warehouse.open(db) as wh:
        wh.append_runs(runs)
        freeze_panel(wh, "p", list(PROFILES)[:3], allow_small=True)
    query = "select * from crs_encoder order by all"
    with Warehouse.open(db, read_only=True) as wh:
        before = wh.sql(query)
        metrics_before = wh.sql("select * from metrics_seed order by all")
    zs = runs[(runs.probe == "logreg") & (runs.depth == 1.0) & (runs.label_fraction == 1.0) & (runs.seed == 0)].copy()
    zs["probe"], zs["label_fraction"], zs["n_train"] = "zeroshot", 0.0, 0
    zs["fit_id"] = "zs|" + zs["encoder_id"] + "|" + zs["dataset_id"]
    zs["run_id"] = "zs|" + zs["run_id"]
    zs["auroc"] = 0.99  # better than any probe: must still not move a score
    with Warehouse.open(db) as wh:
        wh.append_runs(zs)
        record_prompts(
            wh.con,
            [
                {
                    "fit_id": f,
                    "encoder_id": e,
                    "dataset_id": d,
                    "prompt_hash": "h",
                    "prompts": {},
                    "logit_scale": 1.0,
                    "logit_bias": 0.0,
                }
                for f, e, d in zs[["fit_id", "encoder_id", "dataset_id"]].drop_duplicates().itertuples(index=False)
            ],
        )
    with Warehouse.open(db, read_only=True) as wh:
        after = wh.sql(query)
        assert (
            len(wh.sql("select * from zeroshot_vs_probe"))
            == zs[["encoder_id", "dataset_id"]].drop_duplicates().shape[0]
        )
        metrics_after = wh.sql("select * from metrics_seed where probe <> 'zeroshot' order by all")
    assert before.equals(after)
    # seed means are sums in DuckDB's parallel order: equal up to float rounding
    pd.testing.assert_frame_equal(metrics_before, metrics_after)
