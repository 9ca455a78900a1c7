"""Are two warehouses' results identical? `crs_encoder` and every stored analysis table, compared
with `DataFrame.equals` after sorting rows (a refactor that changes no behaviour leaves them equal).

    python scripts/compare_warehouses.py before/crsbench.duckdb after/crsbench.duckdb

Columns that record when or how fast something ran (timestamps, durations, run ids) are left out:
they differ between any two runs. Exit 0 when every table is equal, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import duckdb
import pandas as pd

# Columns that differ between two runs of the same computation.
VOLATILE = ("created_at", "computed_at", "frozen_at", "started_at", "finished_at", "seconds", "run_id", "fit_id")


def tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute(
        "select table_name from information_schema.tables where table_name like 'analysis\\_%' escape '\\' "
        "and table_type = 'BASE TABLE' order by 1"
    ).fetchall()
    return ["crs_encoder", *(r[0] for r in rows)]


def frame(con: duckdb.DuckDBPyConnection, name: str) -> pd.DataFrame:
    data = con.execute(f'select * from "{name}"').df()
    data = data.drop(columns=[c for c in data.columns if c in VOLATILE])
    for column in data.select_dtypes(include="object").columns:  # list cells (arrays) as tuples: sortable, comparable
        data[column] = data[column].map(lambda v: tuple(v.tolist()) if hasattr(v, "tolist") else v)
    return data.sort_values(list(data.columns), kind="stable").reset_index(drop=True) if len(data) else data


def compare(before: Path, after: Path) -> list[tuple[str, str]]:
    """(table, 'equal' | what differs) for every table either file holds."""
    with duckdb.connect(str(before), read_only=True) as a, duckdb.connect(str(after), read_only=True) as b:
        names = sorted(set(tables(a)) | set(tables(b)), key=lambda n: (n != "crs_encoder", n))
        out = []
        for name in names:
            if name not in tables(a) or name not in tables(b):
                out.append((name, "only in " + ("after" if name not in tables(a) else "before")))
                continue
            left, right = frame(a, name), frame(b, name)
            out.append((name, "equal" if left.equals(right) else f"differs ({len(left)} vs {len(right)} rows)"))
        return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    results = compare(args.before, args.after)
    for name, verdict in results:
        print(f"{name}: {verdict}")
    same = sum(v == "equal" for _, v in results)
    print(f"{same} of {len(results)} tables equal")
    return 0 if same == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
