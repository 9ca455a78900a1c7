"""The encoder listing of `Bench.encoders` (`crsbench encoders`): one row per registered encoder."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crsbench.features.lookup import list_encoders
from crsbench.pipeline.extract import use_encoder_files


def encoder_rows(
    db: Path, files: Sequence[Path] = (), allow_code: bool = False, check_weights: bool = False
) -> list[dict[str, Any]]:
    """Every encoder (built-in, TOML, plugin) once the `files` and the warehouse's crsbench.toml are
    registered: origin, family, scope, loader, input size, ...; with `check_weights` also whether its
    weights and text tower are available locally (which imports what the check needs)."""
    use_encoder_files(list(files), db, allow_code)
    rows = []
    for e in list_encoders():
        row: dict[str, Any] = {
            "id": e.id,
            "origin": e.origin,
            "family": e.family,
            "scope": e.scope,
            "domain": e.domain,
            "loader": e.loader,
            "checkpoint": e.checkpoint,
            "input_size": e.input_size,
            "pooling": e.pooling,
            "pretrained": e.pretrained,
            "chest_only": e.chest_only,
            "pretraining": e.pretraining.describe(),
            "pretraining_source": e.pretraining.source,
        }
        if check_weights:
            from crsbench.features.text import text_tower_status
            from crsbench.features.weights import weights_status, where_to_put

            row["weights"] = weights_status(e)
            row["text_tower"] = text_tower_status(e)
            row["weights_needed"] = where_to_put(e) if row["weights"] == "missing" else None
        rows.append(row)
    return rows


def missing_weights_hint() -> str:
    """Where missing weights go, in one line (the footer of `crsbench encoders --check-weights`):
    the places `resolve_weights` looks, in its order, and how to fill the Hugging Face cache."""
    from huggingface_hub import constants

    from crsbench.features.weights import ALLOW_ENV, WEIGHTS_ENV

    folder = os.environ.get(WEIGHTS_ENV)
    target = f"{Path(folder) / '<id>'}/" if folder else f"${WEIGHTS_ENV}/<id>/ (set {WEIGHTS_ENV} to a folder)"
    return (
        f"missing weights: put an encoder's files in {target}, or give extract --weights PATH, or fetch "
        f"hub checkpoints into the Hugging Face cache ({constants.HF_HUB_CACHE}) with extract --allow-download "
        f"({ALLOW_ENV}=1); 'crsbench --json encoders --check-weights' names each encoder's files (weights_needed)"
    )
