"""Columns and a reference shared by the warehouse's table declarations (`schema`, `schema_ledger`)."""

from __future__ import annotations

from crsbench.core.schema import Column

METHODS = "docs/METHODS.md"


DATASET = Column("dataset_id", "VARCHAR", f"Dataset id, the name given at ingest. {METHODS} §1.")
ENCODER = Column("encoder_id", "VARCHAR", f"Encoder id (registry name). {METHODS} §2.")
IMAGE = Column("image_id", "VARCHAR", f"Stable image id within its dataset. {METHODS} §1.")
PANEL = Column("panel", "VARCHAR", f"Reference panel name. {METHODS} §8.1.")
