"""Benchmark: the demo's analyses computed at once in child processes (`Bench.analyze_many`) against the
same analyses run one after the other (`Bench.analyze`), on two copies of one demo warehouse, in one run.

    .venv/bin/python benchmarks/analyses_parallel.py DEMO_OUT [--workers 2]

DEMO_OUT is a `crsbench demo --out` folder (read only: the script works on copies). Both sides run the
demo's analyses with the demo's params; the copies are made before either side runs, and the script
checks that every table of the two copies is equal afterwards (timestamps aside).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import _canonical  # noqa: F401  (canonical numerics before numpy and torch load)
import duckdb

from crsbench import Bench
from crsbench.cli.commands.demo import DEMO_ANALYSES, DEMO_PARAMS


def tables(db: Path) -> dict[str, object]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        out = {}
        for (name,) in con.execute("select table_name from duckdb_tables() order by 1").fetchall():
            columns = con.execute(
                "select column_name from duckdb_columns() where table_name = ? and data_type not like 'TIMESTAMP%'",
                [name],
            ).fetchall()
            listed = ", ".join(f'"{c}"' for (c,) in columns)
            out[name] = con.execute(f'select {listed} from "{name}" order by all').df()
        return out
    finally:
        con.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("demo_out", type=Path)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    requests: list[tuple[str, dict[str, Any]]] = [(name, dict(DEMO_PARAMS.get(name, {}))) for name in DEMO_ANALYSES]
    with tempfile.TemporaryDirectory() as tmp:
        copies = [Path(tmp) / side for side in ("one_by_one", "at_once")]
        for copy in copies:
            shutil.copytree(args.demo_out, copy, ignore=shutil.ignore_patterns("*.html"))
        dbs = [copy / "crsbench.duckdb" for copy in copies]
        start = time.perf_counter()
        for name, params in requests:
            Bench(dbs[0]).analyze(name, **params)
        one_by_one = time.perf_counter() - start
        start = time.perf_counter()
        Bench(dbs[1]).analyze_many(requests, workers=args.workers)
        at_once = time.perf_counter() - start
        a, b = tables(dbs[0]), tables(dbs[1])
        unequal = [n for n in a if n not in b or not a[n].equals(b[n])]  # type: ignore[attr-defined]
    print(f"command: benchmarks/analyses_parallel.py DEMO_OUT --workers {args.workers}")
    print(f"{len(requests)} analyses ({', '.join(DEMO_ANALYSES)})")
    print(f"one after the other: {one_by_one:6.1f} s wall")
    print(f"at once, {args.workers} workers: {at_once:6.1f} s wall  ({one_by_one / at_once:.2f}x)")
    print(f"tables equal: {not unequal} ({len(a)} tables){'' if not unequal else ': ' + ', '.join(unequal)}")
    return 0 if not unequal else 1


if __name__ == "__main__":
    raise SystemExit(main())
