"""What a stored analysis read, for its freshness (view analysis_freshness, METHODS.md §10).

An analysis declares the inputs it reads (`register_analysis(..., reads=...)`, `READS`):
"runs", the probe runs of the encoders its tables name (every encoder's when they name none), or
"images", the images and labels of the datasets its tables name (every dataset's when none), keyed
images:<dataset>. Its `analyses` row records the digest over those inputs, taken before it ran;
the view recomputes it now and calls the table stale once they differ. A result that reads
images only (the shortcut audit) thus stays fresh while encoders are probed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from crsbench.analyses.merge import IMAGES_PREFIX, dataset_column, digest_over

READS = ("runs", "images")


def current_digests(con: Any) -> dict[str, str]:
    """Every input's digest now: each encoder's runs, and each dataset's images (images:<dataset>)."""
    rows = con.execute(
        "select encoder_id, digest from encoder_run_digest union all "
        f"select '{IMAGES_PREFIX}' || dataset_id, digest from dataset_image_digest"
    ).fetchall()
    return {str(k): str(d) for k, d in rows}


def described_inputs(
    frames: Sequence[pd.DataFrame], digests: Mapping[str, str], reads: Sequence[str]
) -> tuple[str | None, list[str] | None]:
    """(digest, inputs) of what `frames` describe, as view analysis_freshness recomputes it. Runs:
    the encoders named in an encoder_id column (None: every encoder). Images: the datasets named in
    a dataset column, as images:<dataset> (every dataset's when none)."""
    inputs: list[str] | None = []
    if "runs" in reads:
        named = {str(e) for f in frames if "encoder_id" in f.columns for e in f["encoder_id"].dropna().unique()}
        inputs = sorted(named) if named else None
    if "images" in reads:
        located = [(f, dataset_column([str(c) for c in f.columns])) for f in frames]
        datasets = {str(d) for f, c in located if c is not None for d in f[c].dropna().unique()}
        images = [IMAGES_PREFIX + d for d in datasets] or [k for k in digests if k.startswith(IMAGES_PREFIX)]
        every_run = [k for k in digests if not k.startswith(IMAGES_PREFIX)]
        inputs = sorted({*(every_run if inputs is None else inputs), *images})
    return digest_over(digests, inputs), inputs
