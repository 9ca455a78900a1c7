"""Sweeps on a dask.distributed cluster, and read-only analysts querying during a sweep."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pandas as pd
import pytest
import torch

from crsbench.warehouse.connection import Warehouse
from tests.probes.test_grid import collect, comparable, make_setup, sweep

torch.set_num_threads(1)


@pytest.mark.slow
def test_two_worker_cluster_with_a_killed_worker_gives_the_same_rows_as_in_process(tmp_path):
    """The same run records as in-process, and a worker SIGKILLed while it holds a fit loses no
    result and duplicates none (the scheduler reassigns its work). `make soak` repeats this on a
    separately started cluster reading an s3:// store (tests/scale/test_cluster.py)."""
    import os
    import signal

    from distributed import Client, LocalCluster

    setup = make_setup(tmp_path)
    local, sink = collect()
    sweep(setup, sink, batch_size=3)
    with (
        LocalCluster(processes=True, n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster.scheduler_address) as client,
    ):
        killed: dict[str, object] = {}

        def kill_a_busy_worker(what: str, done: int, total: int) -> None:
            if what != "probe fits" or killed or done == 0 or done >= total:
                return
            busy = {w: keys for w, keys in client.processing().items() if keys}
            if busy:
                worker = sorted(busy)[0]
                pid = client.run(os.getpid, workers=[worker])[worker]
                os.kill(pid, signal.SIGKILL)  # a worker process this test's cluster started
                killed.update(worker=worker, tasks=list(busy[worker]))

        remote, sink = collect()
        summary = sweep(setup, sink, batch_size=3, scheduler=cluster.scheduler_address, progress=kill_a_busy_worker)
    assert killed and killed["tasks"], "no worker was busy after the first result; nothing was killed"
    assert summary.batches == len(remote) == len(local) > 1
    expected = comparable(pd.concat([r for r, _ in local]))
    got = comparable(pd.concat([r for r, _ in remote]))
    assert got["run_id"].is_unique
    pd.testing.assert_frame_equal(got, expected, check_exact=False, rtol=1e-7, atol=1e-9)
    preds = pd.concat([p for _, p in remote]).sort_values(["run_id", "row_index"])
    assert len(preds) == len(pd.concat([p for _, p in local]))
    assert not preds.duplicated(["run_id", "row_index"]).any()


READER = textwrap.dedent("""
    import json, os, sys, time, duckdb
    db, stop, out = sys.argv[1:4]
    seen, errors, queries = set(), [], 0
    while not os.path.exists(stop) or queries < 3:
        try:
            con = duckdb.connect(db, read_only=True)
            rows = con.execute(
                "select dataset_id, fit_id, count(*) from runs group by all").fetchall()
            n_pred = con.execute("select count(*) from predictions").fetchone()[0]
            con.close()
            seen.update((d, n) for d, _, n in rows)
            queries += 1
        except Exception as exc:
            errors.append(repr(exc))
        time.sleep(0.01)
    json.dump({"seen": sorted(seen), "errors": errors, "queries": queries}, open(out, "w"))
""")


def test_read_only_reader_during_a_sweep_never_fails_or_sees_half_a_batch(tmp_path):
    setup = make_setup(tmp_path)
    db = tmp_path / "w.duckdb"
    wh = Warehouse(db)
    wh.close()  # as the CLI does: the sweep holds no DuckDB connection, it only adds parts
    stop, out = tmp_path / "stop", tmp_path / "reader.json"
    reader = subprocess.Popen([sys.executable, "-c", READER, str(db), str(stop), str(out)])
    try:
        summary = sweep(setup, wh.append_runs, batch_size=1)
    finally:
        stop.touch()
        reader.wait(timeout=120)
    report = json.loads(out.read_text())
    assert report["errors"] == []
    assert report["queries"] >= 3 and summary.batches == 16
    # every fit seen has all of its evaluations: 17 rows (derm), 18 (cxr, with its shift target)
    assert {tuple(x) for x in report["seen"]} <= {("derm", 17), ("cxr", 18)}
