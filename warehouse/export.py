"""Export any view, table or read-only query of the warehouse as CSV, Parquet, JSON, Markdown or LaTeX.

The query runs in the read-only sandbox (`Warehouse.open(..., sandbox=True)`); the file is written by Python,
to a temporary name renamed into place, so an existing file is never half-overwritten and, without
`force`, never touched at all.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pyarrow as pa

from crsbench.core import CrsbenchError, check_write_target
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.snapshot import inputs_read_by

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def relation_sql(wh: Warehouse, name_or_query: str) -> str:
    """A SELECT for `name_or_query`: a view or table name (checked against the catalog), else the query."""
    text = name_or_query.strip().rstrip(";")
    if _NAME.fullmatch(text):
        known = {
            r[0]
            for r in wh.con.execute(
                "select table_name from information_schema.tables where table_schema = 'main'"
            ).fetchall()
        }
        if text not in known:
            close = difflib.get_close_matches(text, sorted(known), n=3)
            hint = f"; did you mean {', '.join(close)}" if close else "; 'crsbench describe' lists them"
            raise CrsbenchError(f"no view or table {text!r} in {wh.path}{hint}")
        return f'select * from "{text}"'
    return text


def query_table(wh: Warehouse, name_or_query: str) -> pa.Table:
    """The rows of a view, table or query as Arrow (the query's errors as one CrsbenchError line)."""
    sql = relation_sql(wh, name_or_query)
    wh.check_query(sql)
    try:
        with wh.snapshot(inputs_read_by(wh.con, sql)):  # a lean open then peaks far lower
            relation = wh.con.sql(sql)
            if relation is None:
                raise CrsbenchError("export needs a view, a table or a query that returns rows")
            return relation.to_arrow_table()
    except CrsbenchError:
        raise
    except Exception as exc:  # duckdb raises many error types; all are the user's query
        raise CrsbenchError(f"query failed: {str(exc).splitlines()[0]}") from exc


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_cell(v) for v in value) + "]"
    return str(value)


def to_markdown(table: pa.Table) -> str:
    """A GitHub-flavoured Markdown table; numbers right-aligned, `|` escaped."""
    rows = table.to_pylist()
    numeric = [pa.types.is_integer(f.type) or pa.types.is_floating(f.type) for f in table.schema]

    def esc(text: str) -> str:
        return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")

    lines = [
        "| " + " | ".join(esc(n) for n in table.column_names) + " |",
        "|" + "|".join("---:" if num else "---" for num in numeric) + "|",
    ]
    lines += ["| " + " | ".join(esc(_cell(row[n])) for n in table.column_names) + " |" for row in rows]
    return "\n".join(lines) + "\n"


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def to_latex(table: pa.Table) -> str:
    """A `tabular` (booktabs rules) with every LaTeX special character escaped."""

    def esc(text: str) -> str:
        return "".join(_LATEX_SPECIAL.get(c, c) for c in text)

    numeric = [pa.types.is_integer(f.type) or pa.types.is_floating(f.type) for f in table.schema]
    lines = [
        r"\begin{tabular}{" + "".join("r" if num else "l" for num in numeric) + "}",
        r"\toprule",
        " & ".join(esc(n) for n in table.column_names) + r" \\",
        r"\midrule",
    ]
    lines += [" & ".join(esc(_cell(row[n])) for n in table.column_names) + r" \\" for row in table.to_pylist()]
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def to_json(table: pa.Table) -> str:
    frame = table.to_pandas()
    return json.dumps(json.loads(frame.to_json(orient="records", date_format="iso")), indent=1) + "\n"


def to_csv(table: pa.Table) -> str:
    return cast(str, table.to_pandas().to_csv(index=False))  # pandas is untyped here: Any


TEXT_FORMATS: dict[str, Callable[[pa.Table], str]] = {
    "csv": to_csv,
    "json": to_json,
    "markdown": to_markdown,
    "latex": to_latex,
}
FORMATS = (*TEXT_FORMATS, "parquet")


def render(table: pa.Table, fmt: str) -> str:
    """`table` as text in one of the text formats."""
    if fmt not in TEXT_FORMATS:
        raise CrsbenchError(f"format {fmt!r} is not a text format; choose one of {', '.join(TEXT_FORMATS)}")
    return TEXT_FORMATS[fmt](table)


def export(
    wh: Warehouse, name_or_query: str, fmt: str, out: Path | None = None, force: bool = False
) -> tuple[int, str | None]:
    """Export a view, table or query; returns (rows, text), text None when written to `out`.

    An existing `out` is refused unless `force`, a folder, device or FIFO always; parquet needs `out`.
    """
    if fmt not in FORMATS:
        raise CrsbenchError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if out is not None:
        check_write_target(out, force=force)  # the caller adds the warehouse's own paths (Bench.export)
    if out is None and fmt == "parquet":
        raise CrsbenchError("parquet is binary: give --out FILE")
    if not wh.sandbox:
        raise ValueError("export needs a warehouse opened with sandbox=True")
    table = query_table(wh, name_or_query)
    if out is None:
        return table.num_rows, render(table, fmt)
    tmp = out.with_name(f".tmp-{uuid.uuid4().hex}-{out.name}")
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            pq.write_table(table, tmp)
        else:
            tmp.write_text(render(table, fmt), encoding="utf-8")
        os.replace(tmp, out)
    except OSError as exc:
        raise CrsbenchError(f"cannot write {out}: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return table.num_rows, None
