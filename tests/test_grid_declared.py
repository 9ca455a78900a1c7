"""The declared grid: an off-grid probe on one encoder moves no score, `crsbench probe` fills the
declared grid's missing fits, `grid extend` widens it for everyone, out-of-grid values are refused,
and a warehouse of schema v4 is given the protocol's grid."""

from __future__ import annotations

import json

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import torch
from support.synthetic import make_dataset, write_features

from crsbench.bench import Bench
from crsbench.cli import main
from crsbench.cli.output import console
from crsbench.core import CALIB, CONDITIONS, LABEL_FRACTIONS, PROTOCOL_PROBE_DEPTHS
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset, read_dataset
from crsbench.warehouse.parts import parts_dir_for

torch.set_num_threads(1)

SEEDS = (0,)
# A small declared grid: logreg and knn at full depth, every fraction, one seed, every condition.
GRID = [
    (probe, 1.0, fraction, seed, condition)
    for probe in ("logreg", "knn")
    for fraction in LABEL_FRACTIONS
    for seed in SEEDS
    for condition in (*CONDITIONS, CALIB)
]
SIGNAL = {"enc_a": 2.0, "enc_b": 1.0, "enc_c": 1.5}


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """derm with its declared GRID, three encoders' features at depths 0.5 and 1.0, the grid probed
    by a bare `crsbench probe`, and panel p frozen on enc_a and enc_b."""
    db = tmp_path_factory.mktemp("grid") / "bench.duckdb"
    with Warehouse.open(db) as wh:
        load_dataset(wh, make_dataset("derm", "multiclass", 150, 3, seed=1), grid=GRID)
        ds = read_dataset(wh, "derm")
    store = str(db) + ".features.zarr"
    for k, (encoder, signal) in enumerate(SIGNAL.items()):
        write_features(store, ds, encoder, 8, depths=(0.5, 1.0), seed=k, signal=signal, chunk_rows=64)
    assert main(["--quiet", "probe", "--db", str(db)]) == 0
    with Warehouse.open(db, read_only=True) as wh:
        assert wh.sql("select count(distinct fit_id) n from runs")["n"].item() == 3 * 2 * 5
    Bench(db).freeze_panel("p", ["enc_a", "enc_b"], allow_small=True)
    return db


@pytest.fixture
def run_cli(capsys):
    def run(db, *args, code=0):
        console.configure(json_mode=True)
        try:
            got = main(["--json", *args, "--db", str(db)])
        finally:
            console.configure()
        captured = capsys.readouterr()
        assert got == code, (args, captured.err)
        return json.loads(captured.out) if code == 0 and captured.out.strip() else captured.err

    return run


def copy_of(db, tmp_path):
    import shutil

    target = tmp_path / db.name
    shutil.copy(db, target)
    shutil.copytree(parts_dir_for(db), parts_dir_for(target))
    shutil.copytree(str(db) + ".features.zarr", str(target) + ".features.zarr")
    return target


def scores(db):
    with Warehouse.open(db, read_only=True) as wh:
        return wh.sql("select * from crs_encoder order by all"), wh.sql("select * from cell_completeness order by all")


def test_off_grid_probe_on_one_encoder_leaves_every_score_identical(probed, tmp_path, run_cli):
    db = copy_of(probed, tmp_path)
    crs_before, cells_before = scores(db)
    assert cells_before["complete"].all() and len(crs_before) >= 3
    # the newcomer's sequence: one more probe at another depth, on one encoder
    out = run_cli(db, "probe", "-e", "enc_c", "-d", "derm", "-p", "knn", "--depth", "0.5")
    assert out["fitted"] == 5 and out["extra"] == 5
    crs_after, cells_after = scores(db)
    assert crs_before.equals(crs_after)
    assert cells_after["complete"].all()
    assert cells_after.set_index("encoder_id").loc["enc_c", "n_extra"] == 5 * 17
    with Warehouse.open(db, read_only=True) as wh:
        extra = wh.sql("select probe, depth, count(*) n from runs_grid where not in_grid group by all")
        assert extra.to_dict("records") == [{"probe": "knn", "depth": 0.5, "n": 5 * 17}]
        assert wh.sql("select count(*) n from runs")["n"].item() == (30 + 5) * 17  # stored, queryable


@pytest.mark.parametrize(
    ("option", "value"), [("--fraction", "2.0"), ("--seed", "99"), ("--seed", "-1"), ("--seed", "4")]
)
def test_probe_values_outside_the_declared_grid_are_refused(probed, run_cli, option, value):
    err = run_cli(probed, "probe", "-e", "enc_a", option, value, code=1)
    assert "outside the declared grid of dataset 'derm'" in err and "crsbench grid extend" in err
    assert len(err.strip().splitlines()) == 1


def test_bare_probe_fills_a_deleted_declared_fit(probed, tmp_path, run_cli):
    db = copy_of(probed, tmp_path)
    with Warehouse.open(db, read_only=True) as wh:
        fit = wh.sql(
            "select min(fit_id) f from runs where encoder_id = 'enc_b' and probe = 'logreg' and label_fraction = 0.05"
        )["f"].item()
    # The fit's runs go wherever they are: pending parts, or the file (probe folds them at its end).
    for part in sorted((parts_dir_for(db) / "runs").glob("*.parquet")):
        table = pq.read_table(part)
        keep = pc.invert(pc.equal(table["fit_id"], fit))
        pq.write_table(table.filter(keep), part)
    with Warehouse.open(db) as wh:
        wh.con.execute("delete from runs_compacted where fit_id = ?", [fit])
    _, cells = scores(db)
    assert not cells.set_index("encoder_id").loc["enc_b", "complete"]
    out = run_cli(db, "probe")
    assert (out["fitted"], out["skipped"]) == (1, 29)
    _, cells = scores(db)
    assert cells["complete"].all()


def test_grid_extend_widens_every_encoder_and_probe_fills_it(probed, tmp_path, run_cli):
    db = copy_of(probed, tmp_path)
    out = run_cli(db, "grid", "extend", "--probe", "knn", "--depth", "0.5")
    assert out["added"] == {"derm": 5} and out["incomplete_encoders"] == {"derm": ["enc_a", "enc_b", "enc_c"]}
    _, cells = scores(db)
    assert not cells["complete"].any()
    assert run_cli(db, "probe")["fitted"] == 3 * 5
    _, cells = scores(db)
    assert cells["complete"].all() and (cells["n_extra"] == 0).all()
    grids = run_cli(db, "grid", "show")["grids"]
    assert grids[0]["probe_depths"] == "knn@0.5, knn@1.0, logreg@1.0"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--depth", "0.3"), "depth 0.3 is not supported"),
        (("--seed", "99"), "has no subset seed 99"),
        (("--fraction", "2.0"), "has no label-fraction subset 2"),
        (("--probe", "svm"), "unknown probe 'svm'"),
        ((), "name at least one of"),
    ],
)
def test_grid_extend_refuses_unsupported_values(probed, run_cli, args, message):
    err = run_cli(probed, "grid", "extend", *args, code=1)
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_schema_v4_warehouse_gets_the_protocol_grid(tmp_path):
    db = tmp_path / "old.duckdb"
    with Warehouse.open(db) as wh:
        load_dataset(wh, make_dataset("derm", "multiclass", 150, 3, seed=1))
        protocol = wh.sql("select * exclude (declared_at) from dataset_grid order by all")
        wh.con.execute("drop table dataset_grid")
        wh.con.execute("drop table feature_chunks")  # and what schema v6 added
        wh.con.execute("alter table parts_ledger drop column digest")
        wh.con.execute("delete from schema_info where version >= 5")
    with Warehouse.open(db) as wh:
        migrated = wh.sql("select * exclude (declared_at) from dataset_grid order by all")
    pairs = {(p, d) for p, d in zip(migrated["probe"], migrated["depth"], strict=True)}
    assert pairs == set(PROTOCOL_PROBE_DEPTHS)
    assert set(migrated["condition"]) == {*CONDITIONS, CALIB, "shift"}
    assert len(migrated) == len(PROTOCOL_PROBE_DEPTHS) * 5 * 5 * (len(CONDITIONS) + 2)
    assert migrated.equals(protocol)


def test_grid_restrict_is_refused_once_a_panel_is_frozen(probed, run_cli):
    err = run_cli(probed, "grid", "restrict", "--probe", "logreg", code=1)
    assert "panel(s) p are frozen" in err and len(err.strip().splitlines()) == 1


def test_grid_restrict_leaves_out_an_unlabelled_dataset_and_refuses_it_named(tmp_path, run_cli):
    """An --unlabeled dataset has no grid: a bare restrict narrows the others (as a bare `probe`
    fits only them); naming it is one line, as `probe -d` says."""
    from PIL import Image

    from crsbench.ingest import ingest

    (tmp_path / "scans").mkdir()
    for i in range(6):
        Image.new("L", (8, 8), color=40 * i).save(tmp_path / "scans" / f"s{i}.png")
    db = tmp_path / "bench.duckdb"
    with Warehouse.open(db) as wh:
        load_dataset(wh, make_dataset("derm", "multiclass", 150, 3, seed=1), grid=GRID)
        load_dataset(wh, ingest("folder", tmp_path / "scans", "scans", unlabeled=True))
    out = run_cli(db, "grid", "restrict", "--probe", "logreg", "--fraction", "1.0")
    assert out["removed"] == {"derm": 2 * 5 - 1}  # of GRID's fits (2 probes x 5 fractions x 1 seed), one stays
    with Warehouse.open(db, read_only=True) as wh:
        kept = wh.sql("select distinct probe, label_fraction from dataset_grid where dataset_id = 'derm'")
    assert kept.values.tolist() == [["logreg", 1.0]]
    err = run_cli(db, "grid", "restrict", "-d", "scans", "--probe", "logreg", code=1)
    assert "'scans' was ingested without labels" in err and len(err.strip().splitlines()) == 1
