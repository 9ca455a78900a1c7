"""crs_cell, crs_encoder, pareto_pairs, the cohort views and the fn_crs_scores macro against an
independent numpy computation of METHODS.md §8."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from support.runs_factory import (
    AXES,
    DATASETS,
    PROFILES,
    clone_encoder,
    encoder_runs,
    frame,
    reference_anchors,
    reference_axes_cell,
    reference_axes_encoder,
    reference_crs,
)

from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel

MEMBERS = ["e1", "e2", "e3", "e5", "e6"]  # e6 is an exact copy of e2 (ties); e5 has no fundus cell


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    rows = [r for e in PROFILES for r in encoder_runs(e)]
    rows += clone_encoder(rows, "e2", "e6")
    # non-members outside the panel's range on some axes, so clipping matters
    rows += encoder_runs("x_hi", quality=0.97) + encoder_runs("x_lo", quality=0.6)
    runs = frame(rows)
    db = tmp_path_factory.mktemp("crs") / "w.duckdb"
    with Warehouse.open(db) as wh:
        wh.append_runs(runs)
        freeze_panel(wh, "p", MEMBERS)
    cells = reference_axes_cell(runs)
    return db, cells, reference_axes_encoder(cells)


def _sql(db, query, params=None):
    with Warehouse.open(db, read_only=True) as wh:
        return wh.sql(query, params)


def _assert_scores(got: pd.DataFrame, want: pd.DataFrame) -> None:
    merged = want.merge(got, on="encoder_id", suffixes=("", "_sql"), validate="one_to_one")
    assert len(merged) == len(want) == len(got)
    for col in ("dominance", "ideal", "worst", "crs"):
        np.testing.assert_allclose(merged[col + "_sql"], merged[col], rtol=0, atol=1e-12, err_msg=col)


def test_crs_encoder_matches_spec(scenario):
    db, _, enc = scenario
    want = reference_crs(enc, MEMBERS, reference_anchors(enc, MEMBERS))
    got = _sql(db, "select * from crs_encoder where panel = 'p'")
    _assert_scores(got, want)
    got = got.set_index("encoder_id")
    np.testing.assert_allclose(got.loc[enc.encoder_id, "auroc"], enc.discrimination, atol=1e-12)
    assert got.loc[MEMBERS, "in_panel"].all() and not got.loc[["e4", "x_hi", "x_lo"], "in_panel"].any()
    # x_hi beats the panel on discrimination, so clipping pins it at 1 there and x_lo at 0
    assert got.loc["x_lo", "worst"] == 0.0 and got.loc["x_hi", "ideal"] <= 1.0
    # ranks are against the panel: 1 + members (other than e) with a strictly higher value; an
    # encoder without a complete cell on every panel dataset (e5: no fundus) is partial: its
    # aggregate rank is withheld and only the place it would take is kept apart
    for e, row in got.iterrows():
        others = got.loc[[m for m in MEMBERS if m != e]]
        partial = e == "e5"
        assert row.coverage == ("partial" if partial else "full")
        assert (row.crs_rank_partial if partial else row.crs_rank) == 1 + (others.crs > row.crs).sum()
        assert (row.auroc_rank_partial if partial else row.auroc_rank) == 1 + (others.auroc > row.auroc).sum()
        assert pd.isna(row.crs_rank if partial else row.crs_rank_partial)
        assert list(row.missing_datasets) == (["fundus"] if partial else [])
        assert row.n_panel_datasets == len(DATASETS)


def test_crs_cell_uses_dataset_anchors_and_observed_members(scenario):
    db, cells, _ = scenario
    got = _sql(db, "select * from crs_cell where panel = 'p'")
    for ds, table in cells.groupby("dataset_id"):
        observed = [m for m in MEMBERS if m in set(table.encoder_id)]
        want = reference_crs(table, observed, reference_anchors(table, observed))
        _assert_scores(got[got.dataset_id == ds].drop(columns="dataset_id"), want)
    # fundus: e5 is a member without a cell, so the Pareto denominator there is 3 (e1, e2/e6, e3
    # minus self) for members and 4 for non-members
    fundus = got[got.dataset_id == "fundus"].set_index("encoder_id")
    assert "e5" not in fundus.index
    assert set((fundus.dominance * np.where(fundus.in_panel, 3, 4)).round(9) % 1) == {0.0}


def test_ties_in_dominance(scenario):
    db, _, _ = scenario
    enc = _sql(db, "select * from crs_encoder where panel = 'p'").set_index("encoder_id")
    assert enc.loc["e2", "crs"] == enc.loc["e6", "crs"]
    assert enc.loc["e2", "dominance"] == enc.loc["e6", "dominance"]
    pairs = _sql(db, "select * from pareto_pairs where panel = 'p'")
    twins = pairs[pairs.encoder_id.isin(["e2", "e6"]) & pairs.dominated_id.isin(["e2", "e6"])]
    assert twins.empty  # equal vectors: neither dominates the other
    assert enc.loc["e2", "crs_rank"] == enc.loc["e6", "crs_rank"]


def test_pareto_pairs_count_is_the_dominance_term(scenario):
    db, _, _ = scenario
    counts = _sql(
        db,
        """
        select c.scope, c.encoder_id, c.in_panel, count(p.dominated_id) as n_dominated,
               (select count(*) from crs_candidates r where r.panel = 'p' and r.scope = c.scope
                  and r.in_panel and r.encoder_id <> c.encoder_id) as n_ref
        from crs_candidates c
        left join pareto_pairs p on p.panel = c.panel and p.scope = c.scope and p.encoder_id = c.encoder_id
        where c.panel = 'p' group by all""",
    )
    scores = pd.concat(
        [
            _sql(db, "select 'global' as scope, encoder_id, dominance from crs_encoder where panel = 'p'"),
            _sql(db, "select dataset_id as scope, encoder_id, dominance from crs_cell where panel = 'p'"),
        ]
    )
    merged = counts.merge(scores, on=["scope", "encoder_id"], validate="one_to_one")
    assert len(merged) == len(counts) == len(scores)
    np.testing.assert_allclose(merged.dominance, merged.n_dominated / merged.n_ref, atol=1e-15)
    assert merged.n_dominated.sum() > 0


def test_cohort_mode_recomputes_panel_and_anchors_over_everyone(scenario):
    db, cells, enc = scenario
    everyone = list(enc.encoder_id)
    want = reference_crs(enc, everyone, reference_anchors(enc, everyone))
    _assert_scores(_sql(db, "select * from crs_cohort_encoder"), want)
    for ds, table in cells.groupby("dataset_id"):
        observed = list(table.encoder_id)
        want = reference_crs(table, observed, reference_anchors(table, observed))
        got = _sql(db, "select * from crs_cohort_cell where dataset_id = ?", [ds])
        _assert_scores(got.drop(columns="dataset_id"), want)


def test_macro_hand_worked_example():
    import duckdb

    from crsbench.warehouse.schema import MIGRATIONS, SCHEMA_INFO
    from crsbench.warehouse.shipped_sql import sql_files

    con = duckdb.connect()
    con.execute(SCHEMA_INFO.create_sql(1))
    for statement in [s for migration in MIGRATIONS for s in migration]:  # DuckDB binds macros to tables
        con.execute(statement)
    for name, text in sql_files():
        if name.startswith("macros/"):  # macros only, on an empty schema
            con.execute(text)
    con.execute("""create table ax as select * from (values
        ('g', 's', 'a', true, 1.0, 1.0, 1.0, 1.0),
        ('g', 's', 'b', true, 0.0, 0.0, 0.0, 0.0),
        ('g', 's', 'c', false, 0.5, 2.0, -1.0, 0.5)) t(grp, scope, encoder_id, in_panel,
        discrimination, calibration, label_efficiency, robustness)""")
    con.execute("""create table an as select 'g' as grp, 's' as scope, unnest(['discrimination',
        'calibration', 'label_efficiency', 'robustness']) as axis, 0.0 as lo, 1.0 as hi""")
    got = con.execute("select * from fn_crs_scores('ax', 'an') order by encoder_id").df().set_index("encoder_id")
    # a: dominates b (1/1), ideal 1, worst 1 -> 0.6 + 0.25 + 0.15 = 1
    assert got.loc["a"].tolist()[2:] == pytest.approx([1.0, 1.0, 1.0, 1.0])
    # b: dominates nothing, ideal 1 - sqrt(4 * 0.25 * 1) = 0, worst 0 -> 0
    assert got.loc["b"].tolist()[2:] == pytest.approx([0.0, 0.0, 0.0, 0.0])
    # c: normalised (0.5, 1, 0, 0.5) after the clip; dominates b (>= everywhere, > on three)
    # but not a: 1 of 2; ideal = 1 - sqrt(0.25 * (0.25 + 0 + 1 + 0.25)); worst = 0
    ideal = 1 - np.sqrt(0.25 * 1.5)
    assert got.loc["c"].tolist()[2:] == pytest.approx([0.5, ideal, 0.0, 0.6 * 0.5 + 0.25 * ideal])
    # weights are parameters
    w = con.execute(
        "select crs from fn_crs_scores('ax', 'an', w_d := 1.0, w_c := 0.0, w_le := 0.0, "
        "w_r := 0.0, w_dom := 0.0, w_ideal := 1.0, w_worst := 0.0) where encoder_id = 'c'"
    ).fetchone()[0]
    assert w == pytest.approx(0.5)


def test_macro_with_two_groups_equals_the_views(scenario):
    db, _, enc = scenario
    with Warehouse.open(db, read_only=True) as wh:
        wh.con.execute("""create temp table two_axes as
            select g.grp, c.scope, c.candidate as encoder_id, c.in_panel, c.discrimination,
                   c.calibration, c.label_efficiency, c.robustness
            from crs_candidates c cross join (values (1), (2)) g(grp)
            where c.panel = 'p' and c.scope = 'global'""")
        # group 1: the frozen anchors; group 2: anchors widened by 0.05 on each side
        wh.con.execute("""create temp table two_anchors as
            select 1 as grp, scope, axis, lo, hi from reference_anchors where panel = 'p' and scope = 'global'
            union all
            select 2, scope, axis, lo - 0.05, hi + 0.05 from reference_anchors
            where panel = 'p' and scope = 'global'""")
        g = wh.sql("select * from fn_crs_scores('two_axes', 'two_anchors') order by grp, encoder_id")
        g_w = wh.sql(
            "select * from fn_crs_scores('two_axes', 'two_anchors', w_d := 0.4, w_c := 0.1, "
            "w_le := 0.1, w_r := 0.4, w_dom := 0.5, w_ideal := 0.3, w_worst := 0.2) "
            "where grp = 2"
        )
        view = wh.sql("select * from crs_encoder where panel = 'p' order by encoder_id")
    one = g[g.grp == 1].reset_index(drop=True)
    for col in ("dominance", "ideal", "worst", "crs"):
        assert one[col].tolist() == view[col].tolist()  # bit for bit: one definition
    anchors = reference_anchors(enc, MEMBERS)
    widened = {a: (lo - 0.05, hi + 0.05) for a, (lo, hi) in anchors.items()}
    _assert_scores(g[g.grp == 2].drop(columns="grp"), reference_crs(enc, MEMBERS, widened))
    _assert_scores(g_w.drop(columns="grp"), reference_crs(enc, MEMBERS, widened, (0.4, 0.1, 0.1, 0.4), (0.5, 0.3, 0.2)))


def test_axes_normalised_are_clipped_to_unit_interval(scenario):
    db, _, _ = scenario
    got = _sql(db, "select * from axes_normalised where panel = 'p'")
    values = got[list(AXES)].to_numpy()
    assert np.nanmin(values) == 0.0 and np.nanmax(values) == 1.0
    members = got[got.in_panel & (got.scope == "global")]
    assert (members[list(AXES)].min() == 0.0).all() and (members[list(AXES)].max() == 1.0).all()
