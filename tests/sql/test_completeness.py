"""Exact completeness: a cell is complete only with every fraction x seed x condition x probe of
its grid; status and leaderboard lines name what is missing."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from support.bootstrap_support import build_world, copy_world

from crsbench.reads.gaps import missing_lines
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.parts import parts_dir_for


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build_world(tmp_path_factory.mktemp("complete"))


def drop_runs(db, *, encoders, dataset, fraction, seeds, condition=None):
    """Delete matching run records from the warehouse's run parts (as if never run)."""
    for part in sorted((parts_dir_for(db) / "runs").glob("*.parquet")):
        table = pq.read_table(part)
        hit = pc.and_(
            pc.and_(
                pc.is_in(table["encoder_id"], value_set=pa.array(encoders)), pc.equal(table["dataset_id"], dataset)
            ),
            pc.and_(
                pc.equal(table["label_fraction"], fraction), pc.is_in(table["seed"], value_set=pa.array(seeds, "int32"))
            ),
        )
        if condition is not None:
            hit = pc.and_(hit, pc.equal(table["condition"], condition))
        if pc.any(hit).as_py():
            pq.write_table(table.filter(pc.invert(hit)), part)


def cells(wh):
    return wh.sql("select encoder_id, dataset_id, complete, n_missing from cell_completeness order by all").set_index(
        ["encoder_id", "dataset_id"]
    )


def test_deleting_seeds_flags_the_cell_and_names_them(world, tmp_path):
    with Warehouse.open(world, read_only=True) as wh:
        assert cells(wh)["complete"].all()
        assert missing_lines(wh) == []
        before = wh.sql("select n_datasets from crs_encoder where encoder_id = 'enc_b'")["n_datasets"].iloc[0]
    db = copy_world(world, tmp_path)
    drop_runs(db, encoders=["enc_b"], dataset="derm", fraction=0.05, seeds=[3, 4])
    with Warehouse.open(db) as wh:
        got = cells(wh)
        assert not got.loc[("enc_b", "derm"), "complete"] and got.loc[("enc_b", "derm"), "n_missing"] == 2
        assert got.drop(index=[("enc_b", "derm")])["complete"].all()
        axes = wh.sql("select complete from axes_cell where encoder_id = 'enc_b' and dataset_id = 'derm'")
        assert not axes["complete"].iloc[0]  # all four axes observed, yet not complete
        after = wh.sql("select n_datasets from crs_encoder where encoder_id = 'enc_b'")["n_datasets"].iloc[0]
        assert (before, after) == (2, 1)
        assert missing_lines(wh) == ["derm x enc_b: fraction 0.05 seeds 3-4 missing"]


def test_one_missing_condition_and_a_seed_missing_everywhere_are_flagged(world, tmp_path):
    db = copy_world(world, tmp_path)
    with Warehouse.open(db, read_only=True) as wh:
        condition = wh.sql("select min(condition) as c from runs where condition like '%-s%'")["c"].iloc[0]
    drop_runs(db, encoders=["enc_a"], dataset="cxr", fraction=1.0, seeds=[2], condition=condition)
    # no encoder has seed 1 at fraction 0.25: still part of the grid (declared label fractions)
    drop_runs(db, encoders=["enc_a", "enc_b", "enc_c", "enc_d"], dataset="derm", fraction=0.25, seeds=[1])
    with Warehouse.open(db) as wh:
        got = cells(wh)
        lines = missing_lines(wh)
    assert not got.loc[("enc_a", "cxr"), "complete"] and got.loc[("enc_a", "cxr"), "n_missing"] == 1
    assert not got.xs("derm", level="dataset_id")["complete"].any()
    assert f"cxr x enc_a: fraction 1 seed 2: 1 condition(s) missing ({condition})" in lines
    assert "derm x enc_c: fraction 0.25 seed 1 missing" in lines
