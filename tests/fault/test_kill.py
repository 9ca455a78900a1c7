"""kill -9 at seeded random points of probe, compact and extract: the store and the run table
end up as a clean run's, with no duplicate (issue 17 item 8).

CI draws one point per stage from a fixed seed; `make soak` (CRSBENCH_SOAK=1) draws many.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from support.fault_support import CLI, PROBE_ARGS, env, raw_runs, synthetic_warehouse

from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.parts import parts_dir_for

SOAK = int(os.environ.get("CRSBENCH_SOAK", "0"))
RNG = random.Random(int(os.environ.get("CRSBENCH_FAULT_SEED", "17")))
COMPARED = "run_id, fit_id, condition, auroc, ece, brier, nll, accuracy, n_train, n_test"


def _runs(db) -> list[tuple]:
    with Warehouse.open(db, read_only=True) as wh:
        return wh.con.execute(f"select {COMPARED} from runs order by run_id").fetchall()


def _copy(db, folder):
    folder.mkdir()
    shutil.copy(db, folder / db.name)
    shutil.copytree(str(db) + ".features.zarr", str(folder / db.name) + ".features.zarr")
    if parts_dir_for(db).exists():
        shutil.copytree(parts_dir_for(db), parts_dir_for(folder / db.name))
    return folder / db.name


def _data_parts(db) -> int:
    return len([p for p in (parts_dir_for(db) / "runs").glob("part-*.parquet") if "empty" not in p.name])


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """A synthetic warehouse before any probe, and the runs a clean sweep gives."""
    base = tmp_path_factory.mktemp("kill")
    (base / "w").mkdir()
    db = synthetic_warehouse(base / "w")
    clean = _copy(db, base / "clean")
    done = subprocess.run(  # parts left pending: the compaction test kills `warehouse compact` folding them
        [*CLI, "--quiet", *PROBE_ARGS, "--no-compact", "--db", str(clean)],
        env=env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return db, clean, _runs(clean)


def test_probe_killed_at_random_batches_resumes_to_the_clean_runs(probed, tmp_path):
    db, _, expected = probed
    db = _copy(db, tmp_path / "killed")
    kills = sorted(RNG.sample(range(1, 12), 4 if SOAK else 2))
    for after in kills:  # SIGKILL once `after` batches have landed (claims are left behind)
        proc = subprocess.Popen(
            [*CLI, "--quiet", *PROBE_ARGS, "--db", str(db)],
            env=env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 300
        while _data_parts(db) < after and proc.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        raw = raw_runs(db)
        assert raw.empty or raw["run_id"].is_unique
    done = subprocess.run(
        [*CLI, "--quiet", *PROBE_ARGS, "--db", str(db)], env=env(), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert _runs(db) == expected
    assert raw_runs(db)["run_id"].is_unique


# The child counts file-system mutations (renames, unlinks, DuckDB commits) during
# `crsbench warehouse compact` and kills itself with SIGKILL at the chosen one.
COMPACT_CHILD = textwrap.dedent("""
    import os, pathlib, signal, sys
    target = int(sys.argv[2])
    count = [0]
    def step():
        count[0] += 1
        if count[0] == target:
            os.kill(os.getpid(), signal.SIGKILL)
    def wrap(fn):
        def inner(*a, **k):
            step()
            out = fn(*a, **k)
            step()
            return out
        return inner
    os.replace, os.rename, os.unlink = wrap(os.replace), wrap(os.rename), wrap(os.unlink)
    pathlib.Path.unlink = wrap(pathlib.Path.unlink)
    import duckdb
    original_execute = duckdb.DuckDBPyConnection.execute
    def execute(self, query, *a, **k):
        if isinstance(query, str) and query.strip().lower().startswith("commit"):
            step()
        return original_execute(self, query, *a, **k)
    duckdb.DuckDBPyConnection.execute = execute
    from crsbench.cli import main
    sys.exit(main(["--quiet", "warehouse", "compact", "--db", sys.argv[1]]))
""")


def test_compact_killed_at_random_steps_recovers_the_same_runs(probed, tmp_path):
    _, clean, expected = probed
    steps = RNG.sample(range(1, 40), 6 if SOAK else 2)
    for k in steps:
        db = _copy(clean, tmp_path / f"k{k}")
        proc = subprocess.run(
            [sys.executable, "-c", COMPACT_CHILD, str(db), str(k)],
            env=env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode in (0, -9), proc.stderr[-2000:]
        with Warehouse.open(db):  # the read-write open finishes or rolls back the compaction
            pass
        assert _runs(db) == expected, f"kill at step {k}"
        assert (
            subprocess.run(
                [*CLI, "--quiet", "warehouse", "compact", "--db", str(db)], env=env(), timeout=300
            ).returncode
            == 0
        )
        assert _runs(db) == expected


@pytest.mark.slow
def test_extract_killed_at_a_random_write_resumes_to_the_clean_store(tmp_path):
    import tests.features.test_extract as fx
    from crsbench.ingest import make_suite

    suite = make_suite(tmp_path / "suite", scale=0.05, image_size=32)
    clean, killed = str(tmp_path / "clean.zarr"), str(tmp_path / "killed.zarr")
    assert fx._run_child(suite["aptos2019"], clean) == 0
    for _ in range(3 if SOAK else 1):
        point = (RNG.randrange(0, 3), RNG.randrange(0, 6))
        fx._run_child(suite["aptos2019"], killed, *point)
    assert fx._run_child(suite["aptos2019"], killed) == 0
    straight, resumed = fx._files(clean), fx._files(killed)
    assert straight.keys() == resumed.keys()
    assert [k for k in straight if straight[k] != resumed[k]] == []
