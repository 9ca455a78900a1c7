"""Provenance: which software and machine computed a probe batch or a feature set.

Recorded with every probe batch (the `batches` parts) and every feature set (its Zarr attributes and
the `feature_sets.provenance` column); the `provenance` view shows both, and the report footer prints it.
Library versions come from the installed distributions, so collecting them imports nothing but torch
(whose dispatched CPU instruction set and thread count are facts of the running process).
"""

from __future__ import annotations

import functools
import json
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from crsbench.core.numerics import canonical

# The distributions whose versions can change a number; keys are the `provenance` view's columns.
LIBRARIES = {
    "torch": "torch",
    "timm": "timm",
    "transformers": "transformers",
    "duckdb": "duckdb",
    "numpy": "numpy",
    "scikit_learn": "scikit-learn",
}
FIELDS = ("crsbench_version", "git_commit", *LIBRARIES, "cpu_capability", "numerics", "threads", "device")


@functools.lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The commit of the crsbench checkout this code runs from, or None outside a git checkout."""
    here = Path(__file__).resolve().parent
    try:
        proc = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = proc.stdout.strip()
    return commit if proc.returncode == 0 and len(commit) == 40 else None


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=1)
def _static() -> dict[str, Any]:
    from crsbench.core.version import __version__

    return {
        "crsbench_version": __version__,
        "git_commit": git_commit(),
        **{key: _version(dist) for key, dist in LIBRARIES.items()},
    }


def collect(device: str = "cpu", threads: int | None = None) -> dict[str, Any]:
    """Every provenance field for work done now on `device` with `threads` (default: torch's count)."""
    import torch

    return {
        **_static(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "numerics": "canonical" if canonical() else "native",
        "threads": int(threads if threads is not None else torch.get_num_threads()),
        "device": device,
    }


def to_json(record: dict[str, Any]) -> str:
    return json.dumps({key: record.get(key) for key in FIELDS}, sort_keys=True)
