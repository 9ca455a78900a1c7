"""The warehouse's bookkeeping tables, declared outside `schema.TABLES` (each with its own
`since`): the ledger of Parquet parts, the feature chunks' content manifest, the retired fits and
feature sets, and the batch records; `EXTRA_TABLES` lists those the migrations create.
"""

from __future__ import annotations

from crsbench.core.schema import Column, Schema
from crsbench.warehouse.schema_columns import DATASET as _DATASET
from crsbench.warehouse.schema_columns import ENCODER as _ENCODER
from crsbench.warehouse.schema_columns import IMAGE as _IMAGE
from crsbench.warehouse.schema_columns import METHODS as _M
from crsbench.warehouse.zeroshot import ZEROSHOT_GRID, ZEROSHOT_PROMPTS

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
        Column("kind", "VARCHAR", f"Part kind: runs, predictions, batches or coefficients. {_M} §4.2."),
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

IMAGE_PROPERTIES = Schema(
    "image_properties",
    f"One row per (dataset, image): properties of the image file read from its header, without "
    f"decoding pixels (crsbench analyze shortcuts caches them here). {_M} §19.",
    (
        _DATASET,
        _IMAGE,
        Column("sha256", "VARCHAR", f"images.sha256 when the row was read; a changed image is read again. {_M} §19."),
        Column("bytes", "BIGINT", f"File size on disk in bytes; a file of another size is read again. {_M} §19."),
        Column("width", "INTEGER", f"Width in pixels, from the header. {_M} §19."),
        Column("height", "INTEGER", f"Height in pixels, from the header. {_M} §19."),
        Column("aspect", "DOUBLE", f"Aspect ratio width / height. {_M} §19."),
        Column("mode", "VARCHAR", f"Pillow mode: L, RGB, RGBA, P, I;16, ... {_M} §19."),
        Column("bit_depth", "INTEGER", f"Bits per sample of the mode (1, 8, 16 or 32). {_M} §19."),
        Column("format", "VARCHAR", f"File format from the file's signature (JPEG, PNG, TIFF, ...). {_M} §19."),
        Column(
            "jpeg_quality",
            "DOUBLE",
            f"IJG quality (1-100) estimated from the luminance quantisation table; NULL unless JPEG. {_M} §19.",
        ),
        Column(
            "chroma_subsampling",
            "VARCHAR",
            f"JPEG chroma subsampling 4:4:4, 4:2:2, 4:2:0 or other; none for greyscale or other formats. {_M} §19.",
        ),
        Column("exif", "BOOLEAN", f"True when the file carries EXIF data. {_M} §19."),
        Column("icc", "BOOLEAN", f"True when the file carries an ICC colour profile. {_M} §19."),
        Column("read_at", "TIMESTAMP", f"When the header was read. {_M} §19."),
    ),
    since=12,
)


# The tables declared outside TABLES (each with its own `since`), for migrations and the dictionary.
EXTRA_TABLES: tuple[Schema, ...] = (
    PARTS_LEDGER,
    RETIRED_FITS,
    RETIRED_FEATURE_SETS,
    FEATURE_CHUNKS,
    ZEROSHOT_PROMPTS,
    IMAGE_PROPERTIES,  # since 12: file header properties (METHODS.md §19)
    ZEROSHOT_GRID,
)
