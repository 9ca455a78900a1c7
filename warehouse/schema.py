"""The warehouse schema: DuckDB tables, the Parquet part schemas and their migrations.

Tables that change rarely (datasets, images, panels, ...) live in the DuckDB file.
Run records and per-image predictions are append-only Parquet parts beside it
(`<db>.parts/runs/*.parquet`, `<db>.parts/predictions/*.parquet`) exposed as the
views `runs` and `predictions`: a probe sweep never holds the DuckDB file's write
lock, so analysts can query it read-only at any moment, and each part appears by an
atomic rename, so no reader ever sees half a batch.

Every table is declared once, as a `crsbench.core.schema.Schema` in `TABLES`: its DDL,
and the COMMENTs of the data dictionary, come from that declaration. A column added later
is declared with `since=<version>` and its migration is `Schema.add_column_sql(version)`;
a migration never edits the version-1 DDL, which `TABLES` generates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from crsbench.core.schema import PREDICTIONS, Column, Schema
from crsbench.probes.records import runs_schema
from crsbench.warehouse.grid import DATASET_GRID, fill_protocol_sql

if TYPE_CHECKING:
    import pyarrow as pa

SCHEMA_VERSION = 6

_M = "docs/METHODS.md"


_DATASET = Column("dataset_id", "VARCHAR", f"Dataset id, the name given at ingest. {_M} §1.")
_ENCODER = Column("encoder_id", "VARCHAR", f"Encoder id (registry name). {_M} §2.")
_IMAGE = Column("image_id", "VARCHAR", f"Stable image id within its dataset. {_M} §1.")
_PANEL = Column("panel", "VARCHAR", f"Reference panel name. {_M} §8.1.")

TABLES: tuple[Schema, ...] = (
    Schema(
        "datasets",
        f"One row per ingested dataset: where it came from, its task and labels. {_M} §1.",
        (
            Column("dataset_id", "VARCHAR", f"Dataset id, the name given at ingest. {_M} §1.", primary_key=True),
            Column(
                "adapter",
                "VARCHAR",
                f"Adapter that read the source layout (isic2019, aptos2019, chexpert, "
                f"mimic-cxr, medmnist, manifest). {_M} §1.",
            ),
            Column("root", "VARCHAR", f"Folder the images were read from. {_M} §1."),
            Column("task", "VARCHAR", f"Task type: multiclass, ordinal or multilabel. {_M} §1."),
            Column("label_names", "VARCHAR[]", f"Class or label names, in label index order. {_M} §1."),
            Column("n_images", "INTEGER", f"Images ingested; count. {_M} §1."),
            Column(
                "image_digest",
                "VARCHAR",
                f"SHA-256 over the ordered (image id, image SHA-256) pairs: changes if any image changes. {_M} §1.",
            ),
            Column(
                "domain",
                "VARCHAR",
                f"Clinical domain: derm, eye, rad or none (matches encoders.domain for E1). {_M} §12.",
            ),
            Column("created_at", "TIMESTAMP", f"When the dataset was ingested. {_M} §1."),
            Column(
                "options",
                "VARCHAR",
                f"Adapter options the labels were derived with, as JSON (e.g. the "
                f"CheXpert uncertainty policy). {_M} §1.",
            ),
        ),
    ),
    Schema(
        "images",
        f"One row per (dataset, image): its file, content hash, group and split. {_M} §1.",
        (
            _DATASET,
            Column(
                "row_index",
                "INTEGER",
                f"Row of the image in its dataset (0-based), the row order of the feature store. {_M} §1.",
            ),
            _IMAGE,
            Column("rel_path", "VARCHAR", f"Image path relative to datasets.root. {_M} §1."),
            Column("sha256", "VARCHAR", f"SHA-256 of the image file's bytes. {_M} §1."),
            Column("group_id", "VARCHAR", f"Patient or lesion id; a group never crosses splits. {_M} §1."),
            Column("split", "VARCHAR", f"train, calib or test. {_M} §1."),
        ),
    ),
    Schema(
        "labels",
        f"One row per (dataset, image, label index): the long one-hot / multi-hot labels. {_M} §1.",
        (
            _DATASET,
            _IMAGE,
            Column("label_idx", "INTEGER", f"Index into datasets.label_names. {_M} §1."),
            Column("value", "TINYINT", f"1 if the image has this class/label, else 0. {_M} §1."),
        ),
    ),
    Schema(
        "label_fractions",
        f"One row per (dataset, seed, fraction, training image): the nested, "
        f"stratified label-fraction subsets. {_M} §1.",
        (
            _DATASET,
            Column("seed", "INTEGER", f"Subset family seed: 0..4. {_M} §1."),
            Column(
                "fraction", "DOUBLE", f"Label fraction: 0.01, 0.05, 0.10, 0.25 or 1.0 of the training split. {_M} §1."
            ),
            _IMAGE,
        ),
    ),
    Schema(
        "shift_pairs",
        f"One row per declared shift pair: probes trained on the source are also "
        f"evaluated on the target's test split, without retraining. {_M} §3.",
        (
            Column("source_id", "VARCHAR", f"Dataset the probes are trained on. {_M} §3."),
            Column("target_id", "VARCHAR", f"Dataset evaluated as the shift (condition shift). {_M} §3."),
            Column(
                "declared_at", "TIMESTAMP", f"When the source -> target pair was declared (ingest or shift). {_M} §3."
            ),
        ),
    ),
    Schema(
        "ingest_errors",
        f"One row per source row skipped at ingest with --skip-bad. {_M} §1.",
        (
            _DATASET,
            Column(
                "row_number",
                "INTEGER",
                f"Line of the file the problem was found on (0 when it concerns the whole file). {_M} §1.",
            ),
            Column("file", "VARCHAR", f"File the problem was found in. {_M} §1."),
            Column("message", "VARCHAR", f"What was wrong. {_M} §1."),
            Column("recorded_at", "TIMESTAMP", f"When the ingest that skipped the row ran. {_M} §1."),
        ),
    ),
    Schema(
        "encoders",
        f"One row per registered encoder used in this warehouse. {_M} §2.",
        (
            Column("encoder_id", "VARCHAR", f"Encoder id (registry name). {_M} §2.", primary_key=True),
            Column("family", "VARCHAR", f"Encoder family (e.g. DINOv2, RAD-DINO). {_M} §2."),
            Column("scope", "VARCHAR", f"Pretraining scope: general, broad_medical or specialty. {_M} §2."),
            Column("domain", "VARCHAR", f"Matched clinical domain: derm, eye, rad or none. {_M} §2."),
            Column("loader", "VARCHAR", f"Loader: timm, transformers, open_clip (or the tiny stand-ins'). {_M} §2."),
            Column("checkpoint", "VARCHAR", f"Public checkpoint id the weights resolve from. {_M} §2."),
            Column("pretrained", "BOOLEAN", f"False for tiny random-initialised stand-ins. {_M} §2."),
            Column("input_size", "INTEGER", f"Released input size in pixels (square). {_M} §2."),
            Column("pooling", "VARCHAR", f"Feature pooling: cls, mean or projection. {_M} §2."),
            Column("registered_at", "TIMESTAMP", f"When the row was written. {_M} §2."),
            Column(
                "origin",
                "VARCHAR",
                f"Where the entry came from: built-in, id (timm:/hf:/open_clip: named "
                f"on the command line), toml:<file> or plugin:<dist>. {_M} §2.1.",
                since=2,
            ),
            Column(
                "spec",
                "JSON",
                f"The resolved entry (preprocessing, hooked layers, pooling, key conversion) as JSON. {_M} §2.1.",
                since=2,
            ),
            Column(
                "weights_hash",
                "VARCHAR",
                f"SHA-256 of the weight tensors loaded into the encoder (empty for random init). {_M} §2.1.",
                since=2,
            ),
        ),
    ),
    Schema(
        "feature_sets",
        f"One row per (dataset, encoder, regime, store): the catalog of extracted features in the Zarr store. {_M} §2.",
        (
            _DATASET,
            _ENCODER,
            Column("regime", "VARCHAR", f"frozen, or an adapted variant such as lora-s0. {_M} §13."),
            Column("store_url", "VARCHAR", f"Feature store (fsspec URL) holding the arrays. {_M} §2."),
            Column("depths", "VARCHAR[]", f"Depth keys extracted (d025, d050, d075, d100). {_M} §2."),
            Column("conditions", "VARCHAR[]", f"Conditions extracted: clean and the 15 perturbed ones. {_M} §2."),
            Column("dim", "INTEGER", f"Feature dimension. {_M} §2."),
            Column("dtype", "VARCHAR", f"Stored feature dtype (float16 by default). {_M} §2."),
            Column("n_images", "INTEGER", f"Images (rows) in the feature set; count. {_M} §2."),
            Column("image_digest", "VARCHAR", f"datasets.image_digest the features were extracted from. {_M} §1."),
            Column("complete", "BOOLEAN", f"True once every depth and condition is written. {_M} §2."),
            Column("pretrained", "BOOLEAN", f"False for tiny random-initialised stand-ins. {_M} §2."),
            Column("checkpoint", "VARCHAR", f"Checkpoint the weights came from. {_M} §2."),
            Column(
                "weights_hash", "VARCHAR", f"SHA-256 of the weight tensors the features were computed with. {_M} §2."
            ),
            Column("code_version", "VARCHAR", f"crsbench version that extracted the features. {_M} §2."),
            Column("updated_at", "TIMESTAMP", f"When the catalog row was written. {_M} §2."),
            Column(
                "provenance",
                "VARCHAR",
                f"JSON: crsbench version and git commit, library versions, CPU "
                f"instruction set, threads and device of the extraction (view "
                f"provenance). {_M} §2.4.",
                since=3,
            ),
        ),
    ),
    Schema(
        "panels",
        f"One row per frozen reference panel. {_M} §8.1.",
        (
            Column("panel", "VARCHAR", f"Reference panel name ('cohort' is reserved). {_M} §8.1.", primary_key=True),
            Column("mode", "VARCHAR", f"Anchoring mode: fixed (anchors frozen with the panel). {_M} §8.1."),
            Column(
                "frozen_at",
                "TIMESTAMP",
                f"When the panel's members and anchors were fixed (crsbench panel freeze). {_M} §8.1.",
            ),
            Column("code_version", "VARCHAR", f"crsbench version that froze it. {_M} §8.1."),
        ),
    ),
    Schema("reference_panels", f"One row per (panel, member encoder). {_M} §8.1.", (_PANEL, _ENCODER)),
    Schema(
        "reference_anchors",
        f"One row per (panel, scope, axis): the anchors frozen with the panel, "
        f"lo = min and hi = max of the axis over its members. {_M} §8.1.",
        (
            _PANEL,
            Column("scope", "VARCHAR", f"A dataset id (per-dataset anchors) or 'global' (aggregate). {_M} §8.4."),
            Column("axis", "VARCHAR", f"discrimination, calibration, label_efficiency or robustness. {_M} §6."),
            Column("lo", "DOUBLE", f"Lower anchor (maps to 0): the members' minimum of the raw axis. {_M} §8.1."),
            Column("hi", "DOUBLE", f"Upper anchor (maps to 1): the members' maximum; hi > lo is enforced. {_M} §8.1."),
            Column("frozen_at", "TIMESTAMP", f"When the anchors were frozen. {_M} §8.1."),
        ),
    ),
    Schema(
        "analyses",
        f"One row per stored analysis output table (analysis_<name>_<part>). {_M} §10-§12.",
        (
            Column("analysis", "VARCHAR", f"Registered analysis name (crsbench analyze NAME). {_M} §10-§12."),
            Column("table_name", "VARCHAR", f"Output table written. {_M} §10-§12."),
            Column("params", "VARCHAR", f"Parameters the analysis ran with, as JSON. {_M} §10-§12."),
            Column("code_version", "VARCHAR", f"crsbench version that ran it. {_M} §10-§12."),
            Column(
                "created_at",
                "TIMESTAMP",
                f"When the analysis finished and stored this table (local time). {_M} §10-§12.",
            ),
            Column(
                "input_digest",
                "VARCHAR",
                "Digest of the runs the analysis read: MD5 over the encoder_run_digest of the "
                "encoders in input_encoders (encoder=digest, sorted), taken before it ran; view "
                "analysis_freshness flags the row stale once the runs differ (NULL: stored before "
                f"digests were kept). {_M} §10.",
                since=5,
            ),
            Column(
                "input_encoders",
                "VARCHAR[]",
                "Encoders whose runs the digest covers: those the output tables name (column "
                f"encoder_id), or NULL for every encoder of the warehouse. {_M} §10.",
                since=5,
            ),
        ),
    ),
    DATASET_GRID,
)

# Created by the migration step itself (before any numbered migration), with all its columns.
SCHEMA_INFO = Schema(
    "schema_info",
    "One row per applied schema migration.",
    (
        Column("version", "INTEGER", "Schema version reached."),
        Column("applied_at", "TIMESTAMP", "When a read-write open brought the file to this schema version."),
        Column("crsbench_version", "VARCHAR", "Version of the crsbench package that migrated the file to it.", since=3),
    ),
)

# The parts' in-file twins: compaction folds parts into `<kind>_compacted`, so the file alone
# answers every view. A migration creates them with `part` only; a read-write open adds the
# declared part columns (`warehouse.upgrade`).
PART = Column(
    "part",
    "VARCHAR",
    f"Parquet part the row was written in (<db>.parts/<kind>/part-*.parquet); compaction keeps the name. {_M} §4.2.",
)
PARTS_LEDGER = Schema(
    "parts_ledger",
    f"One row per Parquet part a read-write open has seen (state "
    f"'pending') or compaction folded into the file ('compacted'): a "
    f"pending part that disappears is reported missing. {_M} §4.2.",
    (
        Column("kind", "VARCHAR", f"Part kind: runs, predictions or batches. {_M} §4.2."),
        Column("part", "VARCHAR", f"Part file name. {_M} §4.2."),
        Column(
            "state",
            "VARCHAR",
            f"pending (read from its file) or compacted (its rows are in <kind>_compacted). {_M} §4.2.",
        ),
        Column("recorded_at", "TIMESTAMP", f"When the part was last seen pending or folded into the file. {_M} §4.2."),
        Column(
            "digest",
            "VARCHAR",
            f"SHA-256 of the part file's bytes, taken when it was written (null: written before "
            f"digests; 'crsbench verify' reports it unverifiable). {_M} §4.2.",
            since=6,
        ),
    ),
    since=3,
)

# The content manifest of the feature store, mirrored from the Zarr attrs (features/integrity.py).
FEATURE_CHUNKS = Schema(
    "feature_chunks",
    f"One row per (feature set, array, row chunk): the CRC-32C of the chunk's decoded bytes taken "
    f"at extraction, which probe reads and 'crsbench verify' check. {_M} §2.6.",
    (
        _DATASET,
        _ENCODER,
        Column("regime", "VARCHAR", f"Regime of the feature set. {_M} §13."),
        Column("store_url", "VARCHAR", f"Feature store (fsspec URL), as in feature_sets.store_url. {_M} §2."),
        Column("array_name", "VARCHAR", f"Depth and condition of the array, e.g. d100/clean. {_M} §2."),
        Column("chunk", "INTEGER", f"Row chunk index (rows chunk*chunk_rows onwards). {_M} §2.6."),
        Column(
            "crc32c", "BIGINT", f"CRC-32C of the decoded chunk (stored dtype, C order, NaN fill included). {_M} §2.6."
        ),
    ),
    since=6,
)

# Retiring what a replaced dataset made stale (warehouse/retire.py): nothing is deleted.
RETIRED_FITS = Schema(
    "retired_fits",
    f"One row per retired probe fit: its runs and predictions leave the "
    f"`runs`/`predictions` views (kept in retired_runs / "
    f"retired_predictions). {_M} §1.",
    (
        Column("fit_id", "VARCHAR", f"The retired fit (runs.fit_id). {_M} §3."),
        Column("dataset_id", "VARCHAR", f"Dataset whose replacement (or new shift target) retired it. {_M} §1."),
        Column(
            "data_digest",
            "VARCHAR",
            f"Digest of the data the fit was made with ('shift:<target>' when a new shift target retired it, "
            f"'weights:<weights hash>' when its feature set was re-extracted with other weights). {_M} §1.",
        ),
        Column("reason", "VARCHAR", f"'dataset replaced', 'shift target declared' or 'weights replaced'. {_M} §1."),
        Column(
            "retired_at",
            "TIMESTAMP",
            f"When crsbench took the fit out of the views (the replacement or declaration that made it stale). {_M} §1.",
        ),
    ),
    since=4,
)
RETIRED_FEATURE_SETS = Schema(
    "retired_feature_sets",
    f"One row per feature set retired because its dataset's images were replaced or it was "
    f"re-extracted with other weights. {_M} §2.4.",
    (
        Column("dataset_id", "VARCHAR", f"Dataset of the feature set. {_M} §1."),
        Column("encoder_id", "VARCHAR", f"Encoder of the feature set. {_M} §2."),
        Column("regime", "VARCHAR", f"Regime of the feature set. {_M} §13."),
        Column("image_digest", "VARCHAR", f"Image digest the features were extracted from. {_M} §1."),
        Column("record", "JSON", f"The retired feature_sets row, as JSON. {_M} §2.4."),
        Column(
            "retired_at", "TIMESTAMP", f"When the replacement of its dataset's images retired the features. {_M} §2.4."
        ),
    ),
    since=4,
)

BATCHES = Schema(
    "batches",
    f"One row per appended probe batch: the software and machine that computed it (view provenance). {_M} §4.",
    (
        Column("batch", "VARCHAR", f"Batch id: the name of its runs part. {_M} §4."),
        Column("created_at", "TIMESTAMPTZ", f"When the batch was written (UTC). {_M} §4."),
        Column(
            "provenance",
            "VARCHAR",
            f"JSON: crsbench version and git commit, library versions, CPU "
            f"instruction set, threads and device. {_M} §4.",
        ),
    ),
)

# The tables declared outside TABLES (each with its own `since`), for migrations and the dictionary.
EXTRA_TABLES: tuple[Schema, ...] = (PARTS_LEDGER, RETIRED_FITS, RETIRED_FEATURE_SETS, FEATURE_CHUNKS)

# kind -> its declaration, read at each use: a metric registered after import still reaches
# the parts, the views and their comments.
PARTS: dict[str, Callable[[], Schema]] = {
    "runs": runs_schema,
    "predictions": lambda: PREDICTIONS,
    "batches": lambda: BATCHES,
}
COMPACTED: tuple[Schema, ...] = tuple(Schema(f"{kind}_compacted", "", (PART,), since=3) for kind in PARTS)


def _migration(version: int) -> list[str]:
    created = [t for t in (*TABLES, *EXTRA_TABLES, *COMPACTED) if t.since == version]
    grown = [t for t in (*TABLES, *EXTRA_TABLES, SCHEMA_INFO) if t.since < version]
    statements = [t.create_sql(version) for t in created] + [s for t in grown for s in t.add_column_sql(version)]
    if version == 5:
        # Datasets ingested before grids were declared get the protocol's grid.
        statements += fill_protocol_sql()
    return statements


# Each entry migrates from version i to i + 1; applied in order on a read-write open: the tables
# declared with that `since`, then the columns declared with it.
MIGRATIONS: list[list[str]] = [_migration(v) for v in range(1, SCHEMA_VERSION + 1)]


class _PartSchemas(Mapping[str, "pa.Schema"]):
    """kind -> Arrow schema of its Parquet parts, generated from `PARTS` at each lookup."""

    def __getitem__(self, kind: str) -> pa.Schema:
        return PARTS[kind]().arrow()

    def __iter__(self) -> Iterator[str]:
        return iter(PARTS)

    def __len__(self) -> int:
        return len(PARTS)


PART_SCHEMAS: Mapping[str, pa.Schema] = _PartSchemas()


def duckdb_type(field: pa.Field) -> str:
    """The DuckDB column type of one part-schema field."""
    import pyarrow as pa

    types = {
        pa.string(): "varchar",
        pa.float64(): "double",
        pa.float32(): "float",
        pa.int32(): "integer",
        pa.int64(): "bigint",
        pa.bool_(): "boolean",
        pa.timestamp("us", tz="UTC"): "timestamptz",
        pa.list_(pa.float32()): "float[]",
        pa.list_(pa.float64()): "double[]",
    }
    try:
        return types[field.type]
    except KeyError:
        raise TypeError(f"part column {field.name} has type {field.type}, which has no DuckDB mapping") from None
