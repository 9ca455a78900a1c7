"""The tables of results imported from other sites (docs/METHODS.md §22), declared for the schema;
`crsbench.exchange` fills them and the views `site_scores` and `site_replicate_scores` read them.

Imported rows are kept apart from the warehouse's own: no view that scores this warehouse's
encoders (axes_cell, crs_encoder, a panel's anchors) reads these tables."""

from __future__ import annotations

from crsbench.core import AXES
from crsbench.core.schema import Column, Schema
from crsbench.warehouse.schema_columns import DATASET as _DATASET
from crsbench.warehouse.schema_columns import ENCODER as _ENCODER
from crsbench.warehouse.schema_columns import PANEL as _PANEL

_S = "docs/METHODS.md §22"
_VERSION = 19
_BUNDLE = Column("bundle_digest", "VARCHAR", f"SHA-256 of the bundle's manifest: the bundle the row came from. {_S}.")
_SITE = Column("site", "VARCHAR", f"The site that exported the bundle, as it named itself (--site). {_S}.")
_AXES = tuple(
    Column(axis, "DOUBLE", f"The {axis.replace('_', ' ')} axis at the exporting site. docs/METHODS.md §6.")
    for axis in AXES
)

SITE_BUNDLES = Schema(
    "site_bundles",
    f"One row per imported results bundle (crsbench results import): where it came from and how it was checked. {_S}.",
    (
        _BUNDLE,
        _SITE,
        _PANEL,
        Column(
            "signed_by",
            "VARCHAR",
            f"Key id (first 16 hex digits of SHA-256 of the Ed25519 public key) that "
            f"signed the bundle; NULL when unsigned. {_S}.",
        ),
        Column(
            "trusted",
            "BOOLEAN",
            f"True when the signature verified against a trusted public key; false for a "
            f"bundle accepted with --allow-unsigned (unsigned or unknown key). {_S}.",
        ),
        Column("crsbench_version", "VARCHAR", f"crsbench version that exported the bundle. {_S}."),
        Column("exported_at", "TIMESTAMP", f"When the site exported the bundle (UTC). {_S}."),
        Column("imported_at", "TIMESTAMP", f"When this warehouse imported it (UTC). {_S}."),
        Column("manifest", "VARCHAR", f"The bundle's manifest as JSON: versions, site, protocol, part digests. {_S}."),
    ),
    since=_VERSION,
)

SITE_RUNS = Schema(
    "site_runs",
    f"One row per imported seed-level run record (a site's runs, without run ids, image ids or predictions). {_S}.",
    (
        _BUNDLE,
        _SITE,
        _ENCODER,
        _DATASET,
        Column(
            "eval_dataset_id",
            "VARCHAR",
            f"Dataset the run was evaluated on at the site: the source itself, or a shift target. {_S}.",
        ),
        Column(
            "regime",
            "VARCHAR",
            f"Encoder regime at the site; frozen weights as loaded (only frozen runs are exported). {_S}.",
        ),
        Column(
            "probe",
            "VARCHAR",
            "Probe estimator fitted on the features: logreg (primary), mlp or knn. docs/METHODS.md §3.",
        ),
        Column(
            "depth",
            "DOUBLE",
            "Relative depth of the layer the features were read from; 1.0 = the last. docs/METHODS.md §2.2.",
        ),
        Column(
            "label_fraction",
            "DOUBLE",
            "Share of the training labels the probe was fitted on; (0, 1]. docs/METHODS.md §1.",
        ),
        Column(
            "seed",
            "INTEGER",
            "Seed of the label-fraction subset family the fit used (0-4 in the protocol). docs/METHODS.md §1.",
        ),
        Column(
            "condition",
            "VARCHAR",
            "Evaluation condition: clean, a perturbation at a severity, calib or shift. docs/METHODS.md §2.3.",
        ),
        Column(
            "auroc", "DOUBLE", "Macro-averaged area under the ROC curve the site measured; [0, 1]. docs/METHODS.md §4."
        ),
        Column(
            "ece",
            "DOUBLE",
            "Expected calibration error the site measured (15 equal-width bins); [0, 1]. docs/METHODS.md §4.",
        ),
        Column("metrics", "VARCHAR", f"Every other metric of the run record, as a JSON object. {_S}."),
        Column("n_train", "INTEGER", f"Training images of the fit; count. {_S}."),
        Column("n_test", "INTEGER", f"Images evaluated; count. {_S}."),
        Column("pretrained", "BOOLEAN", f"False for a random-init encoder. {_S}."),
    ),
    since=_VERSION,
)

SITE_CELLS = Schema(
    "site_cells",
    f"One row per imported (site, encoder, dataset) cell: the four axes as the site's axes_cell gave them. {_S}.",
    (
        _BUNDLE,
        _SITE,
        _ENCODER,
        _DATASET,
        Column(
            "regime",
            "VARCHAR",
            f"Encoder regime at the site; frozen weights as loaded (only frozen runs are exported). {_S}.",
        ),
        *_AXES,
        Column("aulc", "DOUBLE", "Area under the label-efficiency curve at the site. docs/METHODS.md §6."),
        Column("n_perturbed", "INTEGER", f"Perturbed conditions behind robustness; count. {_S}."),
        Column("n_shift", "INTEGER", f"Shift targets behind robustness; count. {_S}."),
        Column("complete", "BOOLEAN", f"All four axes observed. {_S}."),
        Column("pretrained", "BOOLEAN", f"False for a random-init encoder. {_S}."),
    ),
    since=_VERSION,
)

SITE_REPLICATES = Schema(
    "site_replicates",
    f"One row per imported (site, bootstrap replicate, encoder, dataset): the cell's axes under one image-and-seed "
    f"bootstrap draw at the site (replicate 0: every seed and image once). {_S}.",
    (
        _BUNDLE,
        _SITE,
        Column("replicate", "INTEGER", f"Replicate id; 0 is the point estimate. {_S}."),
        _ENCODER,
        _DATASET,
        *_AXES,
    ),
    since=_VERSION,
)

SITE_DATASETS = Schema(
    "site_datasets",
    f"One row per dataset of an imported bundle: its identity as counts and a digest, never image ids. {_S}.",
    (
        _BUNDLE,
        _SITE,
        _DATASET,
        Column("task", "VARCHAR", f"multiclass, multilabel or ordinal. {_S}."),
        Column("n_images", "INTEGER", f"Images of the dataset at the site; count. {_S}."),
        Column("n_test", "INTEGER", f"Test images; count. {_S}."),
        Column("image_digest", "VARCHAR", f"The site's dataset_image_digest (MD5 over its image hashes). {_S}."),
    ),
    since=_VERSION,
)

SITE_TABLES = (SITE_BUNDLES, SITE_RUNS, SITE_CELLS, SITE_REPLICATES, SITE_DATASETS)
