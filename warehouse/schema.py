"""The warehouse schema: DuckDB tables, the Parquet part schemas and their migrations.

Tables that change rarely (datasets, images, panels, ...) live in the DuckDB file.
Run records and per-image predictions are append-only Parquet parts beside it
(`<db>.parts/runs/*.parquet`, `<db>.parts/predictions/*.parquet`) exposed as the
views `runs` and `predictions`: a probe sweep never holds the DuckDB file's write
lock, so analysts can query it read-only at any moment, and each part appears by an
atomic rename, so no reader ever sees half a batch.
"""

from __future__ import annotations

import pyarrow as pa

from crsbench.warehouse.retire import RETIRE_DDL

SCHEMA_VERSION = 4

# Each entry migrates from version i to i + 1; applied in order on a read-write open.
MIGRATIONS: list[list[str]] = [
    [
        """create table if not exists datasets(
            dataset_id varchar primary key, adapter varchar, root varchar, task varchar,
            label_names varchar[], n_images integer, image_digest varchar,
            domain varchar, created_at timestamp, options varchar)""",
        """create table if not exists images(
            dataset_id varchar, row_index integer, image_id varchar, rel_path varchar,
            sha256 varchar, group_id varchar, split varchar)""",
        """create table if not exists labels(
            dataset_id varchar, image_id varchar, label_idx integer, value tinyint)""",
        """create table if not exists label_fractions(
            dataset_id varchar, seed integer, fraction double, image_id varchar)""",
        """create table if not exists shift_pairs(
            source_id varchar, target_id varchar, declared_at timestamp)""",
        """create table if not exists ingest_errors(
            dataset_id varchar, row_number integer, file varchar, message varchar,
            recorded_at timestamp)""",
        """create table if not exists encoders(
            encoder_id varchar primary key, family varchar, scope varchar, domain varchar,
            loader varchar, checkpoint varchar, pretrained boolean, input_size integer,
            pooling varchar, registered_at timestamp)""",
        """create table if not exists feature_sets(
            dataset_id varchar, encoder_id varchar, regime varchar, store_url varchar,
            depths varchar[], conditions varchar[], dim integer, dtype varchar,
            n_images integer, image_digest varchar, complete boolean, pretrained boolean,
            checkpoint varchar, weights_hash varchar, code_version varchar,
            updated_at timestamp)""",
        """create table if not exists panels(
            panel varchar primary key, mode varchar, frozen_at timestamp,
            code_version varchar)""",
        """create table if not exists reference_panels(panel varchar, encoder_id varchar)""",
        """create table if not exists reference_anchors(
            panel varchar, scope varchar, axis varchar, lo double, hi double,
            frozen_at timestamp)""",
        """create table if not exists analyses(
            analysis varchar, table_name varchar, params varchar, code_version varchar,
            created_at timestamp)""",
    ],
    [
        # Encoders from ids, TOML files and plugins: where each came from, its resolved spec
        # (preprocessing, hooked layers, pooling, key conversion) and the weights that ran.
        "alter table encoders add column if not exists origin varchar",
        "alter table encoders add column if not exists spec json",
        "alter table encoders add column if not exists weights_hash varchar",
    ],
    [
        # Compaction folds parts into these in-file tables, so the file alone answers every view.
        # Their columns follow PART_SCHEMAS (added by the read-write open); `part` names the source part.
        "create table if not exists runs_compacted(part varchar)",
        "create table if not exists predictions_compacted(part varchar)",
        "create table if not exists batches_compacted(part varchar)",
        # Every part a read-write open has seen (state 'pending') or that compaction folded in
        # ('compacted'): a pending part that later disappears is named as missing.
        """create table if not exists parts_ledger(
            kind varchar, part varchar, state varchar, recorded_at timestamp)""",
        "alter table schema_info add column if not exists crsbench_version varchar",
        "alter table feature_sets add column if not exists provenance varchar",
    ],
    # Retiring what a replaced dataset made stale (warehouse/retire.py): nothing is deleted.
    list(RETIRE_DDL),
]

RUNS_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("fit_id", pa.string()),
        ("encoder_id", pa.string()),
        ("dataset_id", pa.string()),
        ("eval_dataset_id", pa.string()),
        ("regime", pa.string()),
        ("probe", pa.string()),
        ("depth", pa.float64()),
        ("label_fraction", pa.float64()),
        ("seed", pa.int32()),
        ("condition", pa.string()),
        ("auroc", pa.float64()),
        ("ece", pa.float64()),
        ("ece_adaptive", pa.float64()),
        ("brier", pa.float64()),
        ("nll", pa.float64()),
        ("accuracy", pa.float64()),
        ("mean_confidence", pa.float64()),
        ("qwk", pa.float64()),
        ("ordinal_mae", pa.float64()),
        ("n_train", pa.int32()),
        ("n_test", pa.int32()),
        ("fit_seconds", pa.float64()),
        ("pretrained", pa.bool_()),
        ("code_version", pa.string()),
        ("created_at", pa.timestamp("us", tz="UTC")),
    ]
)

PREDICTIONS_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("fit_id", pa.string()),
        ("eval_dataset_id", pa.string()),
        ("condition", pa.string()),
        ("row_index", pa.int32()),
        ("image_id", pa.string()),
        ("probs", pa.list_(pa.float32())),
    ]
)

# One row per probe batch: the software and machine that computed it (see warehouse/provenance.py).
BATCHES_SCHEMA = pa.schema(
    [
        ("batch", pa.string()),
        ("created_at", pa.timestamp("us", tz="UTC")),
        ("provenance", pa.string()),
    ]
)

PART_SCHEMAS: dict[str, pa.Schema] = {"runs": RUNS_SCHEMA, "predictions": PREDICTIONS_SCHEMA,
                                      "batches": BATCHES_SCHEMA}

_DUCKDB_TYPES = {pa.string(): "varchar", pa.float64(): "double", pa.float32(): "float", pa.int32(): "integer",
                 pa.int64(): "bigint", pa.bool_(): "boolean", pa.timestamp("us", tz="UTC"): "timestamptz",
                 pa.list_(pa.float32()): "float[]", pa.list_(pa.float64()): "double[]"}


def duckdb_type(field: pa.Field) -> str:
    """The DuckDB column type of one part-schema field."""
    try:
        return _DUCKDB_TYPES[field.type]
    except KeyError:
        raise TypeError(f"part column {field.name} has type {field.type}, which has no DuckDB mapping") from None
