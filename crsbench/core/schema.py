"""Declared schemas: a table's columns, types and documentation, written once.

A `Schema` generates everything that used to repeat its column list:
* the DuckDB DDL (`create_sql`, `add_column_sql` for columns added by a later migration),
* the Arrow schema of Parquet parts (`arrow`),
* the data dictionary inside the warehouse (`comment_sql`: COMMENT ON TABLE/VIEW/COLUMN).

The run record and the per-image predictions are declared here (`run_schema`,
`PREDICTIONS`): a run record is its identity columns, then one column per registered
metric (the metric's registration supplies the column, see `crsbench.probes.metrics`),
then its context columns. Column documentation says what the value is, its unit or
range, which way is better, and the docs/METHODS.md section that defines it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # pyarrow is imported lazily: the CLI's --help should not pay for it
    import pyarrow as pa

ObjectKind = Literal["table", "view"]

# DuckDB type -> Arrow type of a Parquet part column (the types the parts use).
_ARROW_TYPES: dict[str, str] = {
    "VARCHAR": "string",
    "DOUBLE": "float64",
    "FLOAT": "float32",
    "INTEGER": "int32",
    "BIGINT": "int64",
    "TINYINT": "int8",
    "BOOLEAN": "bool_",
}


@dataclasses.dataclass(frozen=True)
class Column:
    """One column: its name, DuckDB type and documentation.

    `since` is the schema version that added it (1 = the first); a column with since > 1 is
    added to existing warehouses by an ALTER TABLE in that version's migration.
    """

    name: str
    type: str
    doc: str
    primary_key: bool = False
    since: int = 1

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name != self.name.lower():
            raise ValueError(f"column name {self.name!r} must be a lower-case identifier")
        if not self.doc.strip():
            raise ValueError(f"column {self.name!r} needs documentation")

    def ddl(self) -> str:
        return f"{sql_identifier(self.name)} {self.type}" + (" primary key" if self.primary_key else "")

    def arrow_type(self) -> pa.DataType:
        import pyarrow as pa

        kind = self.type.upper()
        if kind.endswith("[]"):
            return pa.list_(Column(self.name, kind[:-2], self.doc).arrow_type())
        if kind in ("TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE"):
            return pa.timestamp("us", tz="UTC")
        if kind == "TIMESTAMP":
            return pa.timestamp("us")
        try:
            return getattr(pa, _ARROW_TYPES[kind])()
        except KeyError:
            raise ValueError(f"column {self.name!r}: no Arrow type for DuckDB type {self.type!r}") from None


@dataclasses.dataclass(frozen=True)
class Schema:
    """A table (or a view over Parquet parts): name, what one row is, and its columns.

    `since` is the schema version whose migration creates the table (1 = the first).
    """

    name: str
    doc: str
    columns: tuple[Column, ...]
    since: int = 1

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"schema {self.name!r} declares {', '.join(duplicates)} twice")

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name == name:
                return c
        raise KeyError(f"schema {self.name!r} has no column {name!r}")

    def with_columns(self, columns: Iterable[Column]) -> Schema:
        return dataclasses.replace(self, columns=(*self.columns, *columns))

    def create_sql(self, version: int | None = None) -> str:
        """`create table if not exists` with the columns present at `version` (None: all)."""
        cols = [c for c in self.columns if version is None or c.since <= version]
        body = ",\n    ".join(c.ddl() for c in cols)
        return f"create table if not exists {sql_identifier(self.name)}(\n    {body})"

    def add_column_sql(self, version: int) -> list[str]:
        """The ALTER TABLE statements that bring a version - 1 table to `version`."""
        return [
            f"alter table {sql_identifier(self.name)} add column if not exists {c.ddl()}"
            for c in self.columns
            if c.since == version
        ]

    def arrow(self) -> pa.Schema:
        import pyarrow as pa

        return pa.schema([(c.name, c.arrow_type()) for c in self.columns])

    def comment_sql(
        self, kind: ObjectKind = "table", present: Sequence[str] | None = None, catalog: str | None = None
    ) -> list[str]:
        """COMMENT ON statements for the object and each column (those in `present`, if given).

        `catalog` qualifies the name (`catalog.main.name`), e.g. so a persisted view is meant
        and not a temporary one that shadows it. Comments are literals because DuckDB's COMMENT
        ON takes no bound parameters; the text is this package's own documentation.
        """
        table = sql_identifier(self.name)
        if catalog is not None:
            table = f"{sql_identifier(catalog)}.main.{table}"
        statements = [f"comment on {kind} {table} is {sql_literal(self.doc)}"]
        statements += [
            f"comment on column {table}.{sql_identifier(c.name)} is {sql_literal(c.doc)}"
            for c in self.columns
            if present is None or c.name in present
        ]
        return statements


def sql_identifier(name: str) -> str:
    """A quoted SQL identifier (a column may be called `at` or `options`)."""
    return '"' + name.replace('"', '""') + '"'


def sql_literal(text: str) -> str:
    """A SQL string literal (single quotes doubled) for DDL, which takes no parameters."""
    return "'" + text.replace("'", "''") + "'"


# -- the run record -----------------------------------------------------------------------

_M = "docs/METHODS.md"
RUN_DOC = (
    f"One row per evaluation of one fitted probe on one condition (a run record): the fit's "
    f"key, the metrics and the context. Append-only Parquet parts. {_M} §3, §4."
)

RUN_IDENTITY: tuple[Column, ...] = (
    Column(
        "run_id",
        "VARCHAR",
        f"Id of this evaluation: hash of (fit_id, eval_dataset_id, condition), so reruns produce the same id. {_M} §3.",
    ),
    Column(
        "fit_id",
        "VARCHAR",
        f"Id of the probe fit: hash of (encoder, dataset, depth, probe, label fraction, seed, regime). {_M} §3.",
    ),
    Column("encoder_id", "VARCHAR", f"Encoder id (registry name) whose features were probed. {_M} §2."),
    Column("dataset_id", "VARCHAR", f"Dataset the probe was trained on (the source). {_M} §1."),
    Column(
        "eval_dataset_id",
        "VARCHAR",
        f"Dataset evaluated: the source itself, or a shift target (condition shift). {_M} §3.",
    ),
    Column("regime", "VARCHAR", f"Encoder regime: frozen, or an adapted variant such as lora-s0. {_M} §13."),
    Column("probe", "VARCHAR", f"Probe estimator: logreg (primary), mlp or knn. {_M} §3."),
    Column("depth", "DOUBLE", f"Relative encoder depth of the features: 0.25, 0.5, 0.75 or 1.0 (last block). {_M} §2."),
    Column(
        "label_fraction",
        "DOUBLE",
        f"Fraction of the training split the probe was fitted on: 0.01, 0.05, 0.10, 0.25 or 1.0. {_M} §1.",
    ),
    Column("seed", "INTEGER", f"Seed of the label-fraction subset and of a seeded probe: 0..4. {_M} §1."),
    Column(
        "condition",
        "VARCHAR",
        f"Evaluation condition: clean, <perturbation>-s<severity 1..3>, calib "
        f"(the clean calibration split) or shift (the target's clean test "
        f"split). {_M} §2, §3.",
    ),
)

RUN_CONTEXT: tuple[Column, ...] = (
    Column("n_train", "INTEGER", f"Training images the probe was fitted on; count. {_M} §1."),
    Column("n_test", "INTEGER", f"Images evaluated; count. {_M} §3."),
    Column(
        "fit_seconds",
        "DOUBLE",
        f"Wall-clock seconds of the probe fit (shared fits report the one fit's time); lower is cheaper. {_M} §3.",
    ),
    Column(
        "pretrained",
        "BOOLEAN",
        f"Whether the encoder used pretrained weights; false marks tiny random-initialised stand-ins. {_M} §2.",
    ),
    Column("code_version", "VARCHAR", f"crsbench version that wrote the record. {_M} §4."),
    Column("created_at", "TIMESTAMPTZ", f"When the record was written (UTC). {_M} §4."),
)


def run_schema(metrics: Sequence[Column]) -> Schema:
    """The run record: identity, one column per metric (in registration order), context."""
    return Schema("runs", RUN_DOC, (*RUN_IDENTITY, *metrics, *RUN_CONTEXT))


PREDICTIONS = Schema(
    "predictions",
    f"One row per (run, evaluated image): the probe's predicted probabilities, kept so "
    f"recalibration and later analyses need no refit. Append-only Parquet parts; a batch's "
    f"predictions appear with its runs. {_M} §4.",
    (
        Column("run_id", "VARCHAR", f"The run record these predictions belong to (runs.run_id). {_M} §3."),
        Column("fit_id", "VARCHAR", f"The probe fit (runs.fit_id). {_M} §3."),
        Column("eval_dataset_id", "VARCHAR", f"Dataset of the image (the source or a shift target). {_M} §3."),
        Column("condition", "VARCHAR", f"Evaluation condition, as runs.condition. {_M} §2, §3."),
        Column("row_index", "INTEGER", f"Row of the image in its dataset's image table (images.row_index). {_M} §1."),
        Column(
            "image_id",
            "VARCHAR",
            f"Image the probabilities are for: its stable id within the dataset (images.image_id). {_M} §1.",
        ),
        Column(
            "probs",
            "FLOAT[]",
            f"Predicted probabilities, float32: one per class summing to 1 "
            f"(multiclass/ordinal) or one per label, p(label = 1) (multilabel); "
            f"each in [0, 1]. {_M} §4.",
        ),
    ),
)

COEFFICIENTS = Schema(
    "coefficients",
    f"One row per (fit, seed) of the primary logreg probe at full labels: its fitted output "
    f"weights and the train-split standardisation it was fitted on, so a later analysis applies "
    f"the probe without a refit (classifier transfer, {_M} §17). Append-only Parquet parts; a "
    f"batch's coefficients appear with its runs.",
    (
        Column("fit_id", "VARCHAR", f"The probe fit (runs.fit_id). {_M} §3."),
        Column("encoder_id", "VARCHAR", f"Encoder id (registry name). {_M} §2."),
        Column("dataset_id", "VARCHAR", f"Dataset the probe was trained on. {_M} §1."),
        Column("regime", "VARCHAR", f"frozen, or the adapted variant's regime (lora-s<seed>). {_M} §13."),
        Column("depth", "DOUBLE", f"Relative encoder depth of the features: 0.25, 0.5, 0.75 or 1.0. {_M} §2.2."),
        Column("seed", "INTEGER", f"Seed of the label-fraction family: 0..4. {_M} §1."),
        Column("label_fraction", "DOUBLE", f"Fraction of the training split the probe was fitted on (1.0). {_M} §1."),
        Column("dim", "INTEGER", f"Feature dimension D. {_M} §2."),
        Column("n_outputs", "INTEGER", f"Outputs K: classes (softmax) or labels (sigmoid). {_M} §3."),
        Column(
            "weights",
            "DOUBLE[]",
            f"Output weights W, D x K row-major: logits = ((x - mean) / std) W + bias. {_M} §17.",
        ),
        Column("bias", "DOUBLE[]", f"Output bias, K values. {_M} §17."),
        Column("mean", "DOUBLE[]", f"Per-dimension train-split mean the features were standardised with. {_M} §3."),
        Column("std", "DOUBLE[]", f"Per-dimension train-split standard deviation (0 -> 1). {_M} §3."),
    ),
)
