"""Each dataset's declared evaluation grid: the fits and conditions its cells must hold.

The grid of a dataset is declared when it is ingested (the protocol's grid: the primary probe
at every depth, the check probes at full depth, each at every label fraction x seed of the
dataset's subsets, evaluated on the clean and every registered perturbed test condition (15 in
the protocol; `features.conditions`), the calib split when there is one, and each declared
shift target). It lives in the table `dataset_grid` (one row per probe, depth, label_fraction,
seed and condition), and changes only by
`extend_grid` (`crsbench grid extend`), for every encoder at once. Completeness, the axes and
the CRS read it through the views `grid_declared` and `runs_grid`; a run outside it is *extra*:
stored and queryable, never part of a score.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import duckdb
import pandas as pd

from crsbench.core import CALIB, CONDITIONS, DEPTHS, PROTOCOL_PROBE_DEPTHS, SHIFT, SUITE_SEPARATOR, CrsbenchError
from crsbench.core.schema import Column, Schema, sql_literal
from crsbench.features.conditions import registered_conditions
from crsbench.warehouse.grid_suites import SuiteAdded, check_each_declared, declare_suites, suites_of_domain

_M = "docs/METHODS.md §3"
_DATASET = Column("dataset_id", "VARCHAR", f"Dataset the probes are fitted on (datasets.dataset_id). {_M}.")

DATASET_GRID = Schema(
    "dataset_grid",
    "One row per run key of a dataset's declared evaluation grid: a fit (probe, depth, label "
    "fraction, seed) and a condition it is evaluated on; every encoder's cell on the dataset must "
    "hold all of them to be complete. Declared at ingest (the protocol's grid), widened only by "
    f"'crsbench grid extend'. {_M}.",
    (
        _DATASET,
        Column("probe", "VARCHAR", f"Probe estimator of the fit: logreg (primary), mlp or knn. {_M}."),
        Column(
            "depth",
            "DOUBLE",
            f"Relative encoder depth the fit reads features at: 0.25, 0.5, 0.75 or 1.0 (last block). {_M}.",
        ),
        Column(
            "label_fraction",
            "DOUBLE",
            f"Share of the training split the fit uses (a nested, stratified subset): 0.01 to 1.0. {_M}.",
        ),
        Column("seed", "INTEGER", f"Seed of the label-fraction subset family (0-4 in the protocol). {_M}."),
        Column(
            "condition",
            "VARCHAR",
            "Test condition the fit is evaluated on: clean, <perturbation>-s<severity 1..3>, calib (the "
            "clean calibration split), shift (the clean test split of each declared shift target) or a "
            f"corruption suite's <suite>.<corruption>-s<severity> (full-label fits only). {_M}; §25.",
        ),
        Column(
            "origin",
            "VARCHAR",
            "'protocol' (declared at ingest or by migration), 'extend' (added later) or 'suite <name> (<source>; "
            "severities s1=<package severity>, ...)' for a corruption suite's conditions, recording how the grid's "
            f"severities map onto the package's. {_M}; §25.",
        ),
        Column("declared_at", "TIMESTAMP", f"When this key entered the grid. {_M}."),
    ),
    since=5,
)
GridKey = tuple[str, float, float, int, str]  # probe, depth, label_fraction, seed, condition
_INSERT = (
    "insert into dataset_grid (dataset_id, probe, depth, label_fraction, seed, condition, origin, declared_at) "
    "values (?, ?, ?, ?, ?, ?, ?, current_timestamp)"
)


def fill_protocol_sql(test_conditions: Sequence[str] = CONDITIONS) -> list[str]:
    """The statement giving every dataset without a declared grid the protocol's grid: the
    (probe, depth) pairs of PROTOCOL_PROBE_DEPTHS x the dataset's label-fraction subsets x the
    `test_conditions` (clean and the perturbed ones), calib when the dataset has a calib split,
    and shift. The migration to schema v5 runs it with the protocol's conditions (what the sets
    of that time held); `declare_grid` without explicit keys with the registered ones."""
    pairs = ", ".join(f"('{p}', {d!r})" for p, d in PROTOCOL_PROBE_DEPTHS)
    conditions = ", ".join(f"({sql_literal(c)})" for c in (*test_conditions, SHIFT))
    return [
        f"""insert into dataset_grid (dataset_id, probe, depth, label_fraction, seed, condition, origin, declared_at)
            with subsets as (
                select distinct dataset_id, fraction, seed from label_fractions
                where dataset_id in (select dataset_id from datasets)
                  and dataset_id not in (select dataset_id from dataset_grid)
            ),
            conditions as (
                select s.dataset_id, c.condition
                from (select distinct dataset_id from subsets) s cross join (values {conditions}) c(condition)
                union all
                select distinct dataset_id, '{CALIB}' from images
                where split = 'calib' and dataset_id in (select dataset_id from subsets)
            )
            select f.dataset_id, p.probe, p.depth, f.fraction, f.seed, c.condition, 'protocol', current_timestamp
            from subsets f
            cross join (values {pairs}) p(probe, depth)
            join conditions c on c.dataset_id = f.dataset_id"""
    ]


def declare_grid(con: duckdb.DuckDBPyConnection, dataset_id: str, keys: Sequence[GridKey] | None = None) -> None:
    """Declare the grid of a just-loaded dataset (inside the load's transaction): the protocol's,
    or exactly `keys` (small studies, tests). A dataset that already has one (replaced) keeps it."""
    if con.execute("select count(*) from dataset_grid where dataset_id = ?", [dataset_id]).fetchall() != [(0,)]:
        return
    if keys is None:
        for statement in fill_protocol_sql(registered_conditions()):
            con.execute(statement)
        return
    con.executemany(
        _INSERT, [(dataset_id, p, float(d), float(f), int(s), c, "protocol") for p, d, f, s, c in sorted(set(keys))]
    )


def grid_fits(con: duckdb.DuckDBPyConnection, dataset_id: str) -> pd.DataFrame:
    """The declared fits of one dataset: probe, depth, label_fraction, seed (empty: none declared)."""
    return con.execute(
        "select distinct probe, depth, label_fraction, seed from dataset_grid where dataset_id = ? order by all",
        [dataset_id],
    ).df()


def grid_summary(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """One row per dataset: its declared probes x depths, fractions, seeds, conditions (a corruption
    suite's apart, by suite name: `grid_suites`) and fit count, and the image-text encoders with a
    declared zero-shot cell there (`zeroshot_grid`, §3.5)."""
    return con.execute(
        """with zs as (
               select dataset_id, list(encoder_id order by encoder_id) as zeroshot_encoders
               from zeroshot_grid group by dataset_id
           )
           select g.*, coalesce(zs.zeroshot_encoders, []::varchar[]) as zeroshot_encoders
           from (
               select dataset_id,
                      list(distinct probe || '@' || depth::varchar order by probe || '@' || depth::varchar)
                          as probe_depths,
                      list(distinct label_fraction order by label_fraction) as fractions,
                      list(distinct seed order by seed) as seeds,
                      list(distinct condition order by condition) filter (where not contains(condition, '.'))
                          as conditions,
                      coalesce(list(distinct split_part(condition, '.', 1) order by split_part(condition, '.', 1))
                                   filter (where contains(condition, '.')), []::varchar[]) as suites,
                      count(distinct (probe, depth, label_fraction, seed)) as n_fits,
                      count(*) filter (where origin <> 'protocol') > 0 as extended
               from dataset_grid group by dataset_id
           ) g
           left join zs using (dataset_id)
           order by g.dataset_id"""
    ).df()


# The view runs_grid (sql/views/006_runs_grid.sql) is every runs column plus in_grid; its column
# comments come from the run declaration and this one (warehouse.dictionary).
IN_GRID = Column(
    "in_grid",
    "BOOLEAN",
    "True when the run's (probe, depth, label fraction, seed, condition, eval dataset) is in the "
    "declared grid of its dataset and regime (grid_declared); false marks an extra run that enters "
    f"no score and never makes a cell incomplete. {_M}.",
)
RUNS_GRID_DOC = (
    "One row per run record (every column of runs) plus in_grid: whether the run belongs to its "
    "dataset's declared grid (grid_declared). Scores read only runs with in_grid true; the others "
    f"are extras, kept for inspection. {_M}."
)


@dataclasses.dataclass(frozen=True)
class Extension:
    """What `extend_grid` added: new fits per dataset, and the encoders whose cells they open."""

    added: dict[str, int]
    encoders: dict[str, list[str]]
    suites: dict[str, list[SuiteAdded]] = dataclasses.field(default_factory=dict)  # per dataset (grid_suites)

    @property
    def n_added(self) -> int:
        return sum(self.added.values())


def _axis_values(declared: pd.DataFrame, column: str) -> list[Any]:
    return sorted(set(declared[column].tolist()))


def _check_supported(
    con: duckdb.DuckDBPyConnection,
    dataset_id: str,
    probes: Sequence[str],
    depths: Sequence[float],
    fractions: Sequence[float],
    seeds: Sequence[int],
    known_probes: Sequence[str],
) -> None:
    for probe in probes:
        if probe not in known_probes:
            raise CrsbenchError(f"grid extend: unknown probe {probe!r}; supported: {', '.join(known_probes)}")
    for depth in depths:
        if not any(math.isclose(depth, d) for d in DEPTHS):
            raise CrsbenchError(
                f"grid extend: depth {depth:g} is not supported; choose from {', '.join(map(str, DEPTHS))}"
            )
    subsets = con.execute(
        "select distinct fraction, seed from label_fractions where dataset_id = ?", [dataset_id]
    ).fetchall()
    have_f = sorted({f for f, _ in subsets})
    have_s = sorted({s for _, s in subsets})
    for fraction in fractions:
        if not any(math.isclose(fraction, f) for f in have_f):
            raise CrsbenchError(
                f"grid extend: dataset {dataset_id!r} has no label-fraction subset {fraction:g} "
                f"(it has {', '.join(f'{f:g}' for f in have_f)})"
            )
    for seed in seeds:
        if seed not in have_s:
            raise CrsbenchError(
                f"grid extend: dataset {dataset_id!r} has no subset seed {seed} (it has {', '.join(map(str, have_s))})"
            )


def extend_grid(
    con: duckdb.DuckDBPyConnection,
    datasets: Sequence[str],
    *,
    probes: Sequence[str] = (),
    depths: Sequence[float] = (),
    fractions: Sequence[float] = (),
    seeds: Sequence[int] = (),
    suites: Sequence[str] = (),
    named: bool = True,
    known_probes: Sequence[str],
) -> Extension:
    """Widen each dataset's grid: every axis named takes the values given, the others every value the
    grid has; the product's fits not yet declared are added (for every encoder). Each suite named
    adds its conditions to the full-label fits (`grid_suites.declare_suites`): of every dataset named,
    or, with none `named`, of each dataset of the suite's domain. Nothing else changes."""
    if not (probes or depths or fractions or seeds or suites):
        raise CrsbenchError("grid extend: name at least one of --probe, --depth, --fraction, --seed or --suite to add")
    added: dict[str, int] = {}
    encoders: dict[str, list[str]] = {}
    by_suite: dict[str, list[SuiteAdded]] = {}
    for dataset_id in datasets:
        declared = grid_fits(con, dataset_id)
        if declared.empty:
            raise CrsbenchError(f"grid extend: dataset {dataset_id!r} has no declared grid; ingest it first")
        _check_supported(con, dataset_id, probes, depths, fractions, seeds, known_probes)
        chosen = suites if named else suites_of_domain(con, dataset_id, suites)
        if not (probes or depths or fractions or seeds):
            by_suite[dataset_id] = declare_suites(con, dataset_id, chosen)
            added[dataset_id], encoders[dataset_id] = 0, []
            continue
        have = {(p, round(d, 9), round(f, 9), int(s)) for p, d, f, s in declared.itertuples(index=False, name=None)}
        new = [
            (dataset_id, p, float(d), float(f), int(s))
            for p in (probes or _axis_values(declared, "probe"))
            for d in (depths or _axis_values(declared, "depth"))
            for f in (fractions or _axis_values(declared, "label_fraction"))
            for s in (seeds or _axis_values(declared, "seed"))
            if (p, round(float(d), 9), round(float(f), 9), int(s)) not in have
        ]
        if new:
            conditions = [
                r[0]
                for r in con.execute(
                    "select distinct condition from dataset_grid where dataset_id = ? order by 1", [dataset_id]
                ).fetchall()
            ]
            # A suite's conditions are declared for full-label fits only (grid_suites).
            con.executemany(
                _INSERT,
                [(*fit, c, "extend") for fit in new for c in conditions if SUITE_SEPARATOR not in c or fit[3] == 1.0],
            )
        added[dataset_id] = len(new)
        encoders[dataset_id] = (
            [
                r[0]
                for r in con.execute(
                    "select distinct encoder_id from runs where dataset_id = ? order by 1", [dataset_id]
                ).fetchall()
            ]
            if new
            else []
        )
        if chosen:
            by_suite[dataset_id] = declare_suites(con, dataset_id, chosen)
    check_each_declared(con, suites, by_suite)
    return Extension(added, encoders, by_suite)


def restrict_grid(
    con: duckdb.DuckDBPyConnection,
    datasets: Sequence[str],
    *,
    probes: Sequence[str] = (),
    depths: Sequence[float] = (),
    fractions: Sequence[float] = (),
    seeds: Sequence[int] = (),
) -> dict[str, int]:
    """Narrow each dataset's grid to the fits matching every axis given (a small study's grid).
    Refused once a panel is frozen: narrowing would complete cells and move published scores.
    Returns the fits removed per dataset."""
    if not (probes or depths or fractions or seeds):
        raise CrsbenchError("grid restrict: name at least one of --probe, --depth, --fraction or --seed to keep")
    frozen = [r[0] for r in con.execute("select panel from panels order by panel").fetchall()]
    if frozen:
        raise CrsbenchError(
            f"grid restrict: panel(s) {', '.join(frozen)} are frozen; narrowing the grid would move their "
            "scores (only 'crsbench grid extend' is allowed now)"
        )
    removed: dict[str, int] = {}
    for dataset_id in datasets:
        declared = grid_fits(con, dataset_id)
        keep = declared.apply(
            lambda r: (
                (not probes or r["probe"] in probes)
                and (not depths or any(math.isclose(r["depth"], d) for d in depths))
                and (not fractions or any(math.isclose(r["label_fraction"], f) for f in fractions))
                and (not seeds or int(r["seed"]) in seeds)
            ),
            axis=1,
        )
        if declared.empty or not keep.any():
            raise CrsbenchError(f"grid restrict: nothing of the declared grid of {dataset_id!r} would remain")
        gone = declared[~keep]
        # One statement per dataset: on the team warehouse each statement is a catalog commit.
        con.execute(
            "delete from dataset_grid g using (select unnest($1::varchar[]) probe, unnest($2::double[]) depth, "
            "unnest($3::double[]) label_fraction, unnest($4::integer[]) seed) r where g.dataset_id = $5 "
            "and g.probe = r.probe and g.depth = r.depth and g.label_fraction = r.label_fraction and g.seed = r.seed",
            [
                gone["probe"].tolist(),
                gone["depth"].astype(float).tolist(),
                gone["label_fraction"].astype(float).tolist(),
                gone["seed"].astype(int).tolist(),
                dataset_id,
            ],
        )
        removed[dataset_id] = int((~keep).sum())
    return removed
