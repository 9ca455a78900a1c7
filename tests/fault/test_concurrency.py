"""Concurrent `crsbench probe` processes over one warehouse split the fits: no fit twice."""

from __future__ import annotations

import json
import os
import time

import pytest
from support.fault_support import PLANNED_FITS, PROBE_ARGS, finish, raw_runs, start, synthetic_warehouse

from crsbench.warehouse.claims import FitClaims
from crsbench.warehouse.connection import Warehouse


@pytest.mark.parametrize("n_procs", [2, pytest.param(3, marks=pytest.mark.soak)])
def test_concurrent_probes_compute_every_fit_once(tmp_path, n_procs):
    db = synthetic_warehouse(tmp_path)
    procs = [start(PROBE_ARGS, db) for _ in range(n_procs)]
    reports = [finish(p) for p in procs]
    raw = raw_runs(db)
    assert len(raw) > 0
    assert len(raw) == raw["run_id"].nunique(), "a run record was written twice"
    assert raw["fit_id"].nunique() == PLANNED_FITS
    assert sum(r["fitted"] for r in reports) == PLANNED_FITS, reports
    for r in reports:  # every process accounts for every fit: its own, or another's
        assert r["fitted"] + r["by_others"] + r["skipped"] == PLANNED_FITS, r
    per_fit = raw.groupby("fit_id")["run_id"].count()
    assert per_fit.nunique() <= 2  # derm and cxr have fixed numbers of eval sets each
    with Warehouse.open(db, read_only=True) as wh:
        viewed = wh.sql("select count(*) n, count(distinct run_id) d from runs")
    assert viewed["n"].item() == viewed["d"].item() == len(raw)
    assert not list((db.with_name(db.name + ".parts") / "claims").glob("[0-9a-f]*")), "claims left behind"
    # The last sweep to end folds every part (an earlier one saw the other still running, or folded first).
    assert not [p for p in (db.with_name(db.name + ".parts") / "runs").glob("part-*") if "empty" not in p.name]
    assert sum(r["compacted"] for r in reports) > 0


def test_a_duplicated_batch_never_reaches_a_view(tmp_path):
    """Whatever the parts hold (a batch written twice, e.g. by a sweep without claims), the
    `runs` and `predictions` views keep exactly one row per run_id and metrics_seed is unchanged."""
    import shutil

    db = synthetic_warehouse(tmp_path)
    finish(start([*PROBE_ARGS[:-2], "--batch-size", "4", "--no-compact"], db))
    parts = db.with_name(db.name + ".parts")
    with Warehouse.open(db, read_only=True) as wh:
        before = wh.sql("select * from metrics_seed order by all")
        n_pred = wh.sql("select count(*) n from predictions")["n"].item()
    for kind in ("runs", "predictions"):  # one batch again, under a later part name
        first = sorted(p for p in (parts / kind).glob("part-*.parquet") if "empty" not in p.name)[0]
        shutil.copy(first, first.with_name("part-99999999999999999999-dup.parquet"))
    raw = raw_runs(db)
    assert len(raw) > raw["run_id"].nunique()
    with Warehouse.open(db, read_only=True) as wh:
        viewed = wh.sql("select count(*) n, count(distinct run_id) d from runs")
        preds = wh.sql("select count(*) n, count(distinct (run_id, row_index)) d from predictions")
        after = wh.sql("select * from metrics_seed order by all")
    assert viewed["n"].item() == viewed["d"].item() == raw["run_id"].nunique()
    assert preds["n"].item() == preds["d"].item() == n_pred
    import pandas as pd

    pd.testing.assert_frame_equal(after, before)


def test_claim_is_exclusive_and_a_dead_holders_claim_is_taken_over(tmp_path):
    parts = tmp_path / "w.duckdb.parts"
    with FitClaims(parts) as a, FitClaims(parts) as b:
        assert a.acquire(["f1", "f2"]) == {"f1", "f2"}
        assert b.acquire(["f1", "f2", "f3"]) == {"f3"}
        a.release(["f1"])
        assert b.acquire(["f1"]) == {"f1"}
        b.release(["f2"])  # not b's: left alone
        assert (parts / "claims" / "f2").exists()
    # A holder killed mid-fit on this host: its pid is gone, so the claim is stale at once.
    (parts / "claims" / "f9").write_text(json.dumps({"owner": "x", "host": os.uname().nodename, "pid": 2**22 + 1}))
    # A holder elsewhere that stopped refreshing: stale once older than the lease.
    (parts / "claims" / "f8").write_text(json.dumps({"owner": "y", "host": "elsewhere", "pid": 1}))
    old = time.time() - 1000
    os.utime(parts / "claims" / "f8", (old, old))
    (parts / "claims" / "f7").write_text(json.dumps({"owner": "z", "host": "elsewhere", "pid": 1}))
    with FitClaims(parts, lease_s=60) as c:
        assert c.acquire(["f7", "f8", "f9"]) == {"f8", "f9"}


def test_claims_refresh_keeps_a_slow_holder_alive(tmp_path):
    parts = tmp_path / "w.duckdb.parts"
    with FitClaims(parts, lease_s=0.4) as a:
        assert a.acquire(["f1"]) == {"f1"}
        # Host equal but a different pid is alive (ours): only the lease can make it stale.
        with FitClaims(parts, lease_s=0.4) as b:
            time.sleep(1.0)  # > lease: only a's refreshes keep the claim fresh
            assert b.acquire(["f1"]) == set()
