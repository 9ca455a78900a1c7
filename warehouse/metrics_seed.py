"""The metric columns of view `metrics_seed`, generated from the metric registry.

`sql/views/010_metrics_seed.sql` holds the view's grouping, its context columns and their
comments; the line `-- @metric_aggregates` in its select list stands for `<m>_mean`, `<m>_sd`
and `<m>_n` of every metric registered in `crsbench.probes.metrics` (in registration order), and
their COMMENTs, which quote each metric's own description, are appended after the file's. So a
registered metric reaches the seed means with no SQL edit, as it reaches the run record.
"""

from __future__ import annotations

from crsbench.core.schema import sql_identifier, sql_literal
from crsbench.probes.metrics import METRICS

VIEW = "metrics_seed"
FILE = f"views/010_{VIEW}.sql"
MARKER = "-- @metric_aggregates"


def aggregates_sql() -> str:
    """The select-list lines of every registered metric: mean (exact), sample sd (in sorted order)
    and count over the seeds with a finite value."""
    lines = []
    for name in METRICS.names():
        col = sql_identifier(name)
        finite = f"case when isfinite({col}) then {col} end"
        lines += [
            f"    fn_exact_mean({col}) as {sql_identifier(name + '_mean')},",
            # the sd of the sorted values: stddev_samp() runs a Welford update in the order threads
            # feed rows, so its last bits could differ between two runs of one query
            f"    list_stddev_samp(list({col} order by {col}) filter (where isfinite({col}))) "
            f"as {sql_identifier(name + '_sd')},",
            f"    count({finite}) as {sql_identifier(name + '_n')},",
        ]
    return "\n".join(lines)


def comments_sql() -> str:
    """COMMENT ON each generated column, from the metric's registered description."""
    statements = []
    for name, metric in METRICS.items():
        docs = {
            "mean": f"Mean over seeds (fn_exact_mean, finite values; docs/METHODS.md §5) of runs.{name}: "
            f"{metric.column.doc}",
            "sd": f"Sample standard deviation over seeds of the finite runs.{name} values (NULL with one seed); "
            f"same unit as {name}_mean; computed over the values in sorted order, so bit-for-bit independent of "
            f"row order; feeds no score. docs/METHODS.md §5.",
            "n": f"Number of seeds with a finite runs.{name} value behind {name}_mean; count. docs/METHODS.md §5.",
        }
        statements += [
            f"comment on column {VIEW}.{sql_identifier(f'{name}_{suffix}')} is {sql_literal(doc)};"
            for suffix, doc in docs.items()
        ]
    return "\n".join(statements) + "\n"


def render(text: str) -> str:
    """The shipped file's text with the marker line replaced by the metric aggregates and the
    metric columns' comments appended."""
    lines = text.splitlines()
    at = [i for i, line in enumerate(lines) if line.strip() == MARKER]
    if len(at) != 1:
        raise RuntimeError(f"sql/{FILE} must hold the line {MARKER!r} exactly once")
    lines[at[0]] = aggregates_sql()
    return "\n".join(lines) + "\n" + comments_sql()
