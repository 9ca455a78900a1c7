"""How one feature set is extracted: the options `features.extract` takes whole.

The defaults live here and nowhere else: `crsbench.pipeline.extract.ExtractConfig` carries one
`ExtractOptions`, the CLI builds one, and `extract(..., **overrides)` replaces fields of one.
Every flag is a boolean; environment variables (CRSBENCH_ALLOW_DOWNLOAD) are read at the edge
(`with_environment`), never here.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from crsbench.features.weights import ALLOW_ENV


@dataclasses.dataclass(frozen=True)
class ExtractOptions:
    """`device` cpu or cuda[:N]; `batch_size` images per forward; `dtype` stored (float16 or
    float32), `compute_dtype` the model's (float32, bfloat16 or float16); `chunk_rows` rows per
    Zarr chunk (the resume and distribution unit); `weights` a local file or model folder for one
    encoder; `force` redoes a complete set; `repair` re-extracts only its damaged chunks;
    `allow_download` lets hub ids fetch missing weights; `trust_pickle` loads checkpoints holding
    pickled objects; `threads` (CPU) one-thread forwards at once (None: torch's thread count, one per core);
    `workers` decode threads; `perturb_backend` auto, numpy or torch; `pixel_processes` decodes
    and perturbs in worker processes when several forwards run at once; `screen` writes only
    the clean condition and leaves the set screened, for a later plain run to complete by reusing
    it (METHODS.md §2.9). Stored bytes depend only
    on the model, `dtype`, `compute_dtype`, `batch_size`, `chunk_rows`, the device type and the
    perturbation backend."""

    device: str = "cpu"
    batch_size: int = 64
    dtype: str = "float16"
    compute_dtype: str = "float32"
    chunk_rows: int = 256
    weights: Path | str | None = None
    force: bool = False
    repair: bool = False
    allow_download: bool = False
    trust_pickle: bool = False
    threads: int | None = None
    workers: int = 4
    perturb_backend: str = "auto"
    pixel_processes: bool = True
    screen: bool = False


def downloads_from_environment(flag: bool = False) -> bool:
    """--allow-download, else $CRSBENCH_ALLOW_DOWNLOAD=1: read at the edge and passed down."""
    return flag or os.environ.get(ALLOW_ENV, "").strip().lower() in ("1", "true", "yes")


def with_environment(options: ExtractOptions) -> ExtractOptions:
    """`options` with the environment's download permission folded into its boolean flag."""
    return dataclasses.replace(options, allow_download=downloads_from_environment(options.allow_download))
