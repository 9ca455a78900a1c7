"""The public view over analysis `bootstrap`'s per-dataset CRS replicates (sql/views/195..196_*.sql
are generated from this and the analysis's registration: `crsbench.analyses.views`). The pre-screen's
trust view reads it for its CRS-target intervals. docs/METHODS.md §10, §21.5."""

from __future__ import annotations

from crsbench.analyses.views import declare_view

declare_view(
    "dataset_crs_replicates",
    analysis="bootstrap",
    numbers=(195, 196),
    doc="One row per (panel, dataset, bootstrap replicate, member encoder): the member's per-dataset CRS "
    "under one draw of `crsbench analyze bootstrap` (replicate 0: every seed and test image once). The stored "
    "output of the panel's last bootstrap run with keep_replicates (empty until one runs). docs/METHODS.md §10.",
    types={
        **dict.fromkeys(("panel", "dataset_id", "encoder_id"), "VARCHAR"),
        "replicate": "BIGINT",
        "crs": "DOUBLE",
    },
)
