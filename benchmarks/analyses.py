"""Time the 10,000-replicate paired-seed bootstrap (`--resample seeds`) against a per-replicate loop.

Synthetic warehouse: 15 encoders x 3 datasets x 5 seeds, the paper-sized run table of
benchmarks/crs_query.py (158,175 run rows, compacted into one Parquet part), panel = all 15.

* batched: `crsbench analyze bootstrap` as the CLI runs it (run_analysis: one SQL query for all
  replicates, the summaries, and storing the tables incl. the 150k-row replicates table); the
  query alone and the summaries are also timed.
* loop: the straightforward alternative, one SQL query per replicate (the same macros with a
  single replicate each), timed over --loop-replicates replicates and extrapolated linearly to
  10,000 (said so in the output). Its scores are checked to equal the batched ones bit for bit.

    .venv/bin/python benchmarks/analyses.py [--replicates 10000] [--loop-replicates 50] [--threads 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from crs_query import ENCODERS, build  # the paper-sized synthetic run table (same folder)

from crsbench.analyses import run_analysis
from crsbench.analyses.uncertainty.bootstrap import dataset_seeds, replicate_scores, stored_metrics, summarise
from crsbench.analyses.uncertainty.resample import SeedDraws, draw_seeds
from crsbench.analyses.uncertainty.rescore import scored_runs
from crsbench.warehouse.connection import Warehouse


def single(resamples: SeedDraws, replicate: int) -> SeedDraws:
    """The draws of one replicate alone (renumbered as replicate 0)."""
    rows = resamples.combos[resamples.combos["replicate"] == replicate]
    draws = resamples.draws[resamples.draws["combo"].isin(rows["combo"])]
    return SeedDraws(draws.reset_index(drop=True), rows.assign(replicate=0).reset_index(drop=True))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=10_000)
    parser.add_argument("--loop-replicates", type=int, default=50)
    parser.add_argument("--threads", type=int, default=2, help="DuckDB threads (the target is for 2 cores)")
    parser.add_argument("--keep", type=Path, help="build the warehouse in this folder and keep it")
    return parser.parse_args(argv)


def build_warehouse(folder: Path) -> Path:
    """The paper-sized synthetic run table, compacted into one Parquet part; returns the database."""
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "bench.duckdb"
    start = time.perf_counter()
    rows = build(db, full=False)
    with Warehouse.open(db) as wh:
        wh.compact_parts()
    print(
        f"built {rows:,} run rows ({len(ENCODERS)} encoders x 3 datasets x 5 seeds), "
        f"{time.perf_counter() - start:.1f} s"
    )
    return db


SEEDS_ONLY = {"resample": "seeds"}  # the paper's paired-seed bootstrap (no predictions here)


@dataclasses.dataclass
class Timings:
    """Seconds of each measured part, with what the report and the bit-for-bit check need."""

    end_to_end: float = 0.0
    query: float = 0.0
    summary: float = 0.0
    loop: float = 0.0
    tables: list[str] = dataclasses.field(default_factory=list)  # the stored tables' suffixes
    batched: pd.DataFrame | None = None  # global scores of every replicate, one query
    looped: list[pd.DataFrame] = dataclasses.field(default_factory=list)  # one query per replicate


def time_end_to_end(wh: Warehouse, replicates: int, timings: Timings) -> None:
    """`crsbench analyze bootstrap` as the CLI runs it, after an unstored warm-up."""
    run_analysis(wh, "bootstrap", {"replicates": 100, **SEEDS_ONLY}, store=False)  # warm-up
    start = time.perf_counter()
    result = run_analysis(wh, "bootstrap", {"replicates": replicates, "seed": 0, **SEEDS_ONLY})
    timings.end_to_end = time.perf_counter() - start
    timings.tables = list(result.tables)


def time_batched_and_loop(wh: Warehouse, members: list[str], args: argparse.Namespace, timings: Timings) -> None:
    """The one SQL query and the summaries apart, then the same scores one query per replicate."""
    resamples = draw_seeds(dataset_seeds(wh, members), args.replicates, np.random.default_rng(0))
    keyed = scored_runs(wh, members)
    metrics = stored_metrics(keyed)
    start = time.perf_counter()
    scores = replicate_scores(wh, keyed, metrics, resamples)
    timings.batched = scores[scores["scope"] == "global"].rename(columns={"discrimination": "auroc"})
    timings.query = time.perf_counter() - start
    start = time.perf_counter()
    summarise(timings.batched, "paper")
    timings.summary = time.perf_counter() - start

    start = time.perf_counter()
    for r in range(1, args.loop_replicates + 1):
        one = replicate_scores(wh, keyed, metrics, single(resamples, r))
        timings.looped.append(one[one["scope"] == "global"].assign(replicate=r))
    timings.loop = time.perf_counter() - start


def loop_matches_batched(timings: Timings) -> bool:
    """Whether every looped replicate's CRS equals the batched one bit for bit."""
    assert timings.batched is not None
    looped = pd.concat(timings.looped, ignore_index=True).set_index(["replicate", "encoder_id"])["crs"]
    same = timings.batched.set_index(["replicate", "encoder_id"])["crs"].loc[looped.index]
    return bool((same.to_numpy() == looped.to_numpy()).all())


def report(args: argparse.Namespace, members: list[str], timings: Timings, identical: bool) -> None:
    end_to_end = timings.end_to_end
    per_replicate = timings.loop / args.loop_replicates
    extrapolated = per_replicate * args.replicates
    stored = ", ".join(f"analysis_bootstrap_{p}" for p in timings.tables)
    print(f"batched bootstrap, {args.replicates:,} replicates, {args.threads} DuckDB threads:")
    print(f"  crsbench analyze bootstrap end to end (query + summaries + storing {stored}): {end_to_end:.2f} s")
    print(
        f"  of which the one SQL query: {timings.query:.2f} s; summaries (ranks, percentiles, "
        f"{len(members) * (len(members) - 1) // 2} pair intervals): {timings.summary:.2f} s"
    )
    print(
        f"per-replicate loop: {args.loop_replicates} replicates (one SQL query each) took "
        f"{timings.loop:.2f} s = {per_replicate * 1000:.1f} ms/replicate; extrapolated linearly to "
        f"{args.replicates:,} replicates: {extrapolated:.0f} s "
        f"({extrapolated / end_to_end:.0f}x the batched run)"
    )
    print(f"loop scores identical to the batched ones (bit for bit): {identical}")
    print(f"target <= 5 s on 2 cores: {'met' if end_to_end <= 5 else 'NOT met'} ({end_to_end:.2f} s)")
    print(
        f"command: .venv/bin/python benchmarks/analyses.py --replicates {args.replicates} "
        f"--loop-replicates {args.loop_replicates} --threads {args.threads}"
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    db = build_warehouse(args.keep or Path(tempfile.mkdtemp(prefix="crs-bench-analyses-")))
    members = list(ENCODERS)
    timings = Timings()
    with Warehouse.open(db) as wh:
        wh.con.execute(f"set threads = {int(args.threads)}")
        time_end_to_end(wh, args.replicates, timings)
        time_batched_and_loop(wh, members, args, timings)
    identical = loop_matches_batched(timings)
    report(args, members, timings, identical)
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
