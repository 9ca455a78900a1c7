"""A dataset's corruption suites in its declared grid (METHODS.md §25).

`crsbench grid extend --suite medmnistc-derm` declares the suite's conditions
('<suite>.<corruption>-s<severity>', `features.suites`) for every full-label fit of the dataset's
grid: robustness is measured at full labels (§6), so that is where the suite's conditions are read.
Each is evaluated by a fit of its own (`probes.records.FitKey.suite`), so fits done before the grid
gained the suite keep their runs, and the dot in their names keeps them out of the paper's
robustness axis: a frozen panel's scores never move. A suite is declared only for datasets of its
domain; the mapping of the grid's severities onto the package's is stored with each condition's
origin.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import duckdb
import pandas as pd

from crsbench.core import SUITE_SEPARATOR, CrsbenchError

_INSERT = (
    "insert into dataset_grid (dataset_id, probe, depth, label_fraction, seed, condition, origin, declared_at) "
    "values (?, ?, ?, ?, ?, ?, ?, current_timestamp)"
)


@dataclasses.dataclass(frozen=True)
class SuiteAdded:
    """What declaring one suite on one dataset added."""

    suite: str
    conditions: int  # conditions newly declared
    fits: int  # full-label fits they are declared for
    severities: Mapping[int, int]  # grid severity -> the package's own
    unavailable: Mapping[str, str]  # corruptions left out here, and why
    source: str  # e.g. 'medmnistc 0.1.0, dermamnist'


def origin(suite: str, severities: Mapping[int, int], source: str) -> str:
    """The `dataset_grid.origin` of a suite's rows: the suite, its source and the severity mapping."""
    mapping = ", ".join(f"s{grid}={own}" for grid, own in sorted(severities.items()))
    return f"suite {suite} ({source}; severities {mapping})"


def dataset_domain(con: duckdb.DuckDBPyConnection, dataset_id: str) -> str:
    row = con.execute("select domain from datasets where dataset_id = ?", [dataset_id]).fetchone()
    if row is None:
        raise CrsbenchError(f"grid extend: no dataset {dataset_id!r} in this warehouse")
    return str(row[0] or "none")


def declare_suites(con: duckdb.DuckDBPyConnection, dataset_id: str, suites: Sequence[str]) -> list[SuiteAdded]:
    """Declare each suite's conditions for the dataset's full-label fits (inside the caller's
    transaction). Every suite is checked against the dataset's domain before any is loaded."""
    from crsbench.features.suites import check_suite_for, load_suite, suite_conditions  # torch: only when asked

    domain = dataset_domain(con, dataset_id)
    for name in suites:
        check_suite_for(name, dataset_id, domain)
    fits = con.execute(
        "select distinct probe, depth, label_fraction, seed from dataset_grid "
        "where dataset_id = ? and label_fraction = 1.0 order by all",
        [dataset_id],
    ).fetchall()
    if not fits:
        raise CrsbenchError(f"grid extend: dataset {dataset_id!r} has no declared full-label fit; ingest it first")
    have = set(
        con.execute(
            "select probe, depth, label_fraction, seed, condition from dataset_grid where dataset_id = ?", [dataset_id]
        ).fetchall()
    )
    added: list[SuiteAdded] = []
    for name in suites:
        loaded = load_suite(name)
        how = origin(name, loaded.severities, loaded.source)
        rows = [
            (dataset_id, *fit, condition, how)
            for condition in suite_conditions(name)
            for fit in fits
            if (*fit, condition) not in have
        ]
        con.executemany(_INSERT, rows)
        new = len({r[5] for r in rows})
        added.append(SuiteAdded(name, new, len(fits), loaded.severities, loaded.unavailable, loaded.source))
    return added


def grid_suite_fits(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """(probe, depth, label_fraction, seed, suite) of every fit the dataset's grid declares a
    suite's conditions for (empty: no suite declared)."""
    return con.execute(
        "select distinct probe, depth, label_fraction, seed, split_part(condition, ?, 1) as suite "
        "from dataset_grid where dataset_id = ? and contains(condition, ?) order by all",
        [SUITE_SEPARATOR, dataset_id, SUITE_SEPARATOR],
    ).df()


def declared_suite_conditions(con: duckdb.DuckDBPyConnection, dataset_id: str) -> list[str]:
    """Every suite condition the dataset's grid declares, sorted (what its feature sets must hold)."""
    rows = con.execute(
        "select distinct condition from dataset_grid where dataset_id = ? and contains(condition, ?) order by 1",
        [dataset_id, SUITE_SEPARATOR],
    ).fetchall()
    return [str(r[0]) for r in rows]


def suites_of_domain(con: duckdb.DuckDBPyConnection, dataset_id: str, suites: Sequence[str]) -> list[str]:
    """Those of `suites` declared for the dataset's domain (unknown names are refused, listing them)."""
    from crsbench.features.suites import SUITES

    domain = dataset_domain(con, dataset_id)
    return [name for name in suites if SUITES.get(name).domain == domain]


def check_each_declared(
    con: duckdb.DuckDBPyConnection, suites: Sequence[str], by_dataset: Mapping[str, Sequence[SuiteAdded]]
) -> None:
    """A one-line error for a suite no dataset took (no dataset of its domain), listing the datasets
    with their domains and the suites."""
    from crsbench.features.suites import SUITES

    taken = {a.suite for added in by_dataset.values() for a in added}
    for name in suites:
        if name not in taken:
            domains = con.execute("select dataset_id, domain from datasets order by dataset_id").fetchall()
            have = ", ".join(f"{d} ({dom})" for d, dom in domains)
            every = ", ".join(f"{n} ({s.domain})" for n, s in sorted(SUITES.items()))
            raise CrsbenchError(
                f"grid extend: suite {name!r} is for domain {SUITES.get(name).domain!r}, and no dataset here is "
                f"(datasets: {have}); suites: {every}"
            )
