"""The tables of pretraining overlap (METHODS.md §20), declared for the schema; the code that
fills and reads them is `warehouse.overlap`."""

from __future__ import annotations

from crsbench.core.schema import Column, Schema
from crsbench.warehouse.schema_columns import DATASET as _DATASET
from crsbench.warehouse.schema_columns import ENCODER as _ENCODER

_S = "docs/METHODS.md §20"

ENCODER_PRETRAINING = Schema(
    "encoder_pretraining",
    "One row per (encoder, declared pretraining dataset), written from the registry entry when the encoder's "
    "row is; an encoder that declares no dataset, or whose pretraining data is unknown, has one row with "
    f"dataset NULL. Encoders upserted before schema v16 have no rows (unknown). {_S}.",
    (
        _ENCODER,
        Column(
            "dataset",
            "VARCHAR",
            f"A dataset name the encoder was pretrained on (ingest.known_datasets' names); NULL on the one row "
            f"of an encoder declaring none or unknown. {_S}.",
        ),
        Column(
            "source",
            "VARCHAR",
            f"Where the statement is made (a model card's URL, a paper); NULL when nobody has said. {_S}.",
        ),
        Column(
            "known",
            "BOOLEAN",
            f"True when `dataset` is one of the known dataset names (a typo would never match); NULL without "
            f"a dataset. {_S}.",
        ),
        Column(
            "declared",
            "BOOLEAN",
            f"True when the encoder's pretraining data is declared (possibly as none), false when unknown: "
            f"unknown is never read as no overlap. {_S}.",
        ),
    ),
    since=16,
)

DATASET_OVERLAP = Schema(
    "dataset_overlap",
    "One row per (encoder, dataset, split) measured against a list of pretraining image hashes "
    f"(crsbench overlap --manifest FILE --encoder E): images of the split found in the list. {_S}.",
    (
        _ENCODER,
        _DATASET,
        Column("split", "VARCHAR", f"train, calib or test. {_S}."),
        Column("n_images", "INTEGER", f"Images of the split; count. {_S}."),
        Column("n_found", "INTEGER", f"Images of the split whose SHA-256 is in the list; count. {_S}."),
        Column("share", "DOUBLE", f"n_found / n_images; [0, 1]. {_S}."),
        Column("manifest", "VARCHAR", f"File name of the hash list the overlap was measured with. {_S}."),
        Column("n_hashes", "INTEGER", f"Distinct hashes in that list; count. {_S}."),
        Column(
            "measured_at", "TIMESTAMP", f"When crsbench overlap matched the list against the images (local time). {_S}."
        ),
    ),
    since=16,
)
