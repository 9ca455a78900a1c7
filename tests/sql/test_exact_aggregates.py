"""fn_exact_sum and fn_rank_correlation: the same bits whatever order the rows come in (DuckDB's
sum() and corr() over doubles are not), and equal to independent computations (math.fsum,
scipy.stats.spearmanr, a hand-worked case)."""

from __future__ import annotations

import math
import re

import duckdb
import numpy as np
import pandas as pd
import pytest
from scipy.stats import rankdata, spearmanr

from crsbench.warehouse.shipped_sql import sql_files

PERMUTATIONS = 12


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    out = duckdb.connect()
    out.execute("set threads = 4")
    shipped = dict(sql_files())
    for name in ("macros/012_fn_exact_sum.sql", "macros/014_fn_rank_correlation.sql"):
        out.execute(shipped[name])
    return out


def _per_order(con: duckdb.DuckDBPyConnection, frame: pd.DataFrame, select: str) -> list[tuple]:
    """`select ... from t group by g order by g` over PERMUTATIONS row orders of `frame`."""
    rng = np.random.default_rng(0)
    results = []
    for _ in range(PERMUTATIONS):
        con.register("shuffled", frame.iloc[rng.permutation(len(frame))].reset_index(drop=True))
        con.execute("create or replace temp table t as select * from shuffled")
        results.append(tuple(con.execute(f"select {select} from t group by g order by g").fetchall()))
    return results


def test_exact_sum_is_the_correctly_rounded_sum_in_every_row_order(con):
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {"g": rng.integers(0, 3, 3000), "x": rng.normal(size=3000) * 10.0 ** rng.integers(-2, 3, 3000)}
    )
    exact = _per_order(con, frame, "g, fn_exact_sum(x)")
    assert len(set(exact)) == 1
    for g, got in exact[0]:
        # each value rounded to 1e-18, the exact sum converted to a double: within an ulp or two
        assert got == pytest.approx(math.fsum(frame.loc[frame["g"] == g, "x"]), rel=1e-15, abs=1e-15)
    plain = _per_order(con, frame, "g, sum(x)")
    assert len(set(plain)) > 1, "control: a plain sum() of these doubles depends on the row order"


def test_exact_sum_refuses_a_non_finite_value(con):
    with pytest.raises(duckdb.Error):
        con.execute("select fn_exact_sum(x) from (values (1.0), ('nan'::double)) v(x)").fetchall()


def _ranked(n_groups: int, n: int, rng: np.random.Generator) -> pd.DataFrame:
    frames = []
    for g in range(n_groups):
        a, b = rng.integers(0, 6, n), rng.integers(0, 9, n)  # many ties: half-integer average ranks
        frames.append(pd.DataFrame({"g": g, "x": rankdata(a), "y": rankdata(b), "a": a, "b": b}))
    return pd.concat(frames, ignore_index=True)


def test_rank_correlation_is_spearman_s_rho_in_every_row_order(con):
    frame = _ranked(4, 400, np.random.default_rng(2))
    exact = _per_order(con, frame, "g, fn_rank_correlation(x, y)")
    assert len(set(exact)) == 1
    for g, got in exact[0]:
        part = frame[frame["g"] == g]
        assert got == pytest.approx(spearmanr(part["a"], part["b"]).statistic, rel=1e-13)
    plain = _per_order(con, frame, "g, corr(x, y)")
    assert len(set(plain)) > 1, "control: corr() of these ranks depends on the row order"


def test_rank_correlation_hand_worked_and_constant_rankings(con):
    # ranks (1, 2, 3) against (1, 3, 2): 6 sum d^2 / (n (n^2 - 1)) = 6 * 2 / 24, rho = 1 - 0.5 = 0.5
    got = con.execute("select fn_rank_correlation(x, y) from (values (1, 1), (2, 3), (3, 2)) v(x, y)").fetchone()
    assert got == (0.5,)
    tied = con.execute("select fn_rank_correlation(x, y) from (values (1.5, 1), (1.5, 2)) v(x, y)").fetchone()
    assert tied == (None,)


ORDER_DEPENDENT = re.compile(
    r"(?<!\w)(corr|covar_pop|covar_samp|stddev|stddev_samp|stddev_pop|var_samp|var_pop|variance|regr_\w+"
    r"|kurtosis|skewness|fsum|kahan_sum)\s*\(",
    re.IGNORECASE,
)


def _code(text: str) -> str:
    """SQL without its comments and string literals (they may name the functions)."""
    return re.sub(r"--[^\n]*|'(?:[^']|'')*'", " ", text)


def test_no_shipped_sql_uses_an_order_dependent_floating_aggregate():
    found = {name: ORDER_DEPENDENT.findall(_code(text)) for name, text in sql_files()}
    assert {name: hits for name, hits in found.items() if hits} == {}
    assert ORDER_DEPENDENT.findall(_code("select corr(x, y), list_stddev_samp(l) -- stddev(x)\n")) == ["corr"]
