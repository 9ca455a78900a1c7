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

from crsbench.core.schema import COEFFICIENTS, PREDICTIONS, Column, Schema
from crsbench.probes.records import runs_schema
from crsbench.warehouse.conditions import PANEL_CONDITIONS
from crsbench.warehouse.grid import DATASET_GRID, fill_protocol_sql
from crsbench.warehouse.lake_schema import PANEL_PUBLICATIONS
from crsbench.warehouse.overlap_schema import DATASET_OVERLAP, ENCODER_PRETRAINING
from crsbench.warehouse.schema_columns import DATASET as _DATASET
from crsbench.warehouse.schema_columns import ENCODER as _ENCODER
from crsbench.warehouse.schema_columns import IMAGE as _IMAGE
from crsbench.warehouse.schema_columns import METHODS as _M
from crsbench.warehouse.schema_columns import PANEL as _PANEL
from crsbench.warehouse.schema_ledger import BATCHES, EXTRA_TABLES, PART
from crsbench.warehouse.sites_schema import SITE_TABLES
from crsbench.warehouse.zeroshot import backfill_grid_sql

if TYPE_CHECKING:
    import pyarrow as pa

SCHEMA_VERSION = 20

# Cost, measured once when a feature set is created (crsbench.features.cost); NULL when not measured.
_NOT_MEASURED = f"NULL when not measured (a set extracted before cost was measured), never zero. {_M} §2.8."
_COST_COLUMNS = (
    Column("params", "BIGINT", f"Parameters of the model as extracted; count. {_NOT_MEASURED}", since=17),
    Column(
        "flops_per_image",
        "BIGINT",
        "FLOPs of one forward of one image at the entry's input size, counted by torch's "
        f"FlopCounterMode (a multiply-add is 2 FLOPs); FLOPs. {_NOT_MEASURED}",
        since=17,
    ),
    Column(
        "images_per_s",
        "DOUBLE",
        "Images per second of the model's forward alone (a batch of up to 8 images, median of 3 timed "
        f"forwards after a warm-up; no decode or IO) on cost_device in cost_dtype. {_NOT_MEASURED}",
        since=17,
    ),
    Column(
        "peak_memory_bytes",
        "BIGINT",
        "Peak CUDA memory allocated over the timed forwards, weights included; bytes. NULL on a CPU "
        f"(torch keeps no peak of host allocations); {_NOT_MEASURED}",
        since=17,
    ),
    Column(
        "peak_memory_note",
        "VARCHAR",
        "Why peak_memory_bytes is NULL for a measured set ('not measured on cpu'); NULL when it was "
        f"measured or when nothing was. {_M} §2.8.",
        since=17,
    ),
    Column(
        "stored_bytes_per_image",
        "DOUBLE",
        f"Bytes of every array of the set as stored (compressed), per image; bytes. {_NOT_MEASURED}",
        since=17,
    ),
    Column("widths", "VARCHAR", f"JSON: embedding width per depth key. {_NOT_MEASURED}", since=17),
    Column("cost_device", "VARCHAR", f"Device the cost was measured on (cpu, cuda:0). {_NOT_MEASURED}", since=17),
    Column(
        "cost_dtype", "VARCHAR", f"Compute dtype the cost was measured in (float32, ...). {_NOT_MEASURED}", since=17
    ),
)

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
            Column(
                "source",
                "VARCHAR",
                "What the data is, a known dataset name (the adapter's, e.g. chexpert, or crsbench ingest "
                "--source), matched against encoders' declared pretraining data (view encoder_dataset_overlap); "
                f"NULL: unknown (generic adapters without --source, datasets ingested before schema v16). {_M} §20.",
                since=16,
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
        "image_metadata",
        f"One row per (dataset, image, metadata key) the source publishes: age, sex, site, view, "
        f"projection, or a manifest's meta:<key> columns; numeric keys binned. Datasets ingested "
        f"before it existed have no rows. {_M} §16.",
        (
            _DATASET,
            _IMAGE,
            Column(
                "key",
                "VARCHAR",
                f"Metadata key: age, sex, site (ISIC), view (Frontal/Lateral), projection (AP/PA, "
                f"MIMIC ViewPosition), or a manifest's own. {_M} §16.",
            ),
            Column(
                "value",
                "VARCHAR",
                f"The subgroup: the category as spelled (spellings differing only in case stored "
                f"as the most frequent one), or for a binned numeric key its bin "
                f"'lo-hi' (lo <= value < hi) or 'last+' (age default edges 0, 40, 60, 80). {_M} §16.",
            ),
        ),
        since=8,
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
            Column(
                "conditions",
                "VARCHAR[]",
                "Conditions extracted: clean and each registered perturbation x severity when extracted "
                f"(the protocol's 15 perturbed ones without plugins); robustness and CRS compare encoders "
                f"only over one condition set (view cell_conditions). {_M} §2.3.",
            ),
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
            Column(
                "degenerate",
                "VARCHAR",
                "Why the clean features are degenerate (constant, or a numerical rank under 10 % of "
                "the attainable), checked at extraction; NULL when sound. An unconfirmed degenerate "
                f"set flags its cells and leaves its encoder out of ranks. {_M} §2.7.",
                since=10,
            ),
            Column(
                "degenerate_confirmed_at",
                "TIMESTAMP",
                "When a user confirmed the degenerate set as it is (crsbench feature-sets --confirm), "
                f"which lets its encoder be ranked again (UTC); NULL when not confirmed. {_M} §2.7.",
                since=10,
            ),
            *_COST_COLUMNS,
            Column(
                "screened",
                "BOOLEAN",
                "True when the clean condition of every row is written at every depth: a screened set "
                "(crsbench extract --screen; complete false, its perturbed conditions not yet) or a complete "
                f"one. Only a pre-screen reads a set that is screened but not complete; probes never do. {_M} §2.9.",
                since=18,
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
            Column(
                "params",
                "VARCHAR",
                "Parameters the analysis ran with, as JSON. A table kept across runs restricted to "
                "datasets (crsbench analyze NAME -d X) adds stored_datasets: per dataset, the params, "
                f"input_digest and input_encoders of the run that wrote its rows. {_M} §10-§12.",
            ),
            Column("code_version", "VARCHAR", f"crsbench version that ran it. {_M} §10-§12."),
            Column(
                "created_at",
                "TIMESTAMP",
                f"When the analysis finished and stored this table (local time). {_M} §10-§12.",
            ),
            Column(
                "input_digest",
                "VARCHAR",
                "Digest of the inputs the analysis read: MD5 over the encoder_run_digest of the "
                "encoders in input_encoders (encoder=digest, sorted), and the dataset_image_digest of "
                "each images:<dataset> there, taken before it ran; view analysis_freshness flags the "
                f"row stale once they differ (NULL: stored before digests were kept). {_M} §10.",
                since=5,
            ),
            Column(
                "input_encoders",
                "VARCHAR[]",
                "Encoders whose runs the digest covers: those the output tables name (column "
                "encoder_id), or NULL for every encoder of the warehouse; an analysis that reads image "
                "files rather than runs (shortcuts) names images:<dataset> for each dataset it read "
                f"instead. {_M} §10.",
                since=5,
            ),
        ),
    ),
    DATASET_GRID,
    PANEL_CONDITIONS,
    ENCODER_PRETRAINING,  # since 16: pretraining overlap (METHODS.md §20)
    DATASET_OVERLAP,
    *SITE_TABLES,  # since 19: results imported from other sites (METHODS.md §22)
    PANEL_PUBLICATIONS,  # since 20: the snapshot a panel was published at (METHODS.md §23)
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

# kind -> its declaration, read at each use: a metric registered after import still reaches
# the parts, the views and their comments.
PARTS: dict[str, Callable[[], Schema]] = {
    "runs": runs_schema,
    "predictions": lambda: PREDICTIONS,
    "batches": lambda: BATCHES,
    "coefficients": lambda: COEFFICIENTS,  # since 7: fitted logreg probes (METHODS.md §17)
}
_PART_SINCE = {"coefficients": 7}  # the other kinds' compacted tables date from version 3
COMPACTED: tuple[Schema, ...] = tuple(
    Schema(f"{kind}_compacted", "", (PART,), since=_PART_SINCE.get(kind, 3)) for kind in PARTS
)


def _migration(version: int) -> list[str]:
    created = [t for t in (*TABLES, *EXTRA_TABLES, *COMPACTED) if t.since == version]
    grown = [t for t in (*TABLES, *EXTRA_TABLES, SCHEMA_INFO) if t.since < version]
    statements = [t.create_sql(version) for t in created] + [s for t in grown for s in t.add_column_sql(version)]
    if version == 5:
        # Datasets ingested before grids were declared get the protocol's grid.
        statements += fill_protocol_sql()
    if version == 18:
        # Sets catalogued before screening existed hold their clean features exactly when complete.
        statements += ["update feature_sets set screened = coalesce(complete, false)"]
    if version == 15:
        # Zero-shot cells run before they were declared are declared with their latest prompt set.
        statements += backfill_grid_sql()
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
