"""Adapter `folder`: every image file under a folder, with no labels (`crsbench ingest folder DIR
--unlabeled`), enough for extraction and representation agreement (METHODS.md §17).

Image ids are the paths relative to the folder; each image is its own group; splits are drawn
as for any dataset (group-safe, seeded). An unlabelled dataset is stored with no label names and
no label rows, and probing it is refused.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from crsbench.core import InputError, ProgressFn
from crsbench.ingest.registry import AdapterOption, register_adapter
from crsbench.ingest.source import Record, RowLog, Source
from crsbench.ingest.types import Task

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp")
UNLABELED = "none"  # the value of option `labels` that --unlabeled sets
_NO_LABELS = np.zeros(0, dtype=np.int8)
LABELS_OPTION = AdapterOption("required", "'none' (set by --unlabeled): ingest without labels", ("required", "none"))


def _file_like(path: Path) -> bool:
    """A regular file, or anything else that is not a folder (FIFO, device, socket)."""
    return path.is_file() or (path.exists() and not path.is_dir())


def unlabeled_source(root: Path, records: list[Record]) -> Source:
    """A Source with no labels: task multilabel over zero labels (no label rows are stored)."""
    empty = [Record(r.image_id, r.rel_path, _NO_LABELS.copy(), r.group_id, r.split, r.file, r.line) for r in records]
    return Source(root, Task.MULTILABEL, [], empty, notes=["ingested without labels (--unlabeled)"])


@register_adapter(
    "folder",
    task=None,
    description="every image file under a folder (png, jpg, tif, bmp, webp; subfolders included), "
    "with no labels: needs --unlabeled; enough for extraction and agreement, not for probes",
    options={"labels": LABELS_OPTION},
)
def read_folder(path: Path, log: RowLog, options: dict[str, str], progress: ProgressFn) -> Source:
    if options["labels"] != UNLABELED:
        raise InputError(f"{path}: a folder of images carries no labels; pass --unlabeled to ingest it without them")
    if not path.is_dir():
        raise InputError(f"{path}: not a folder (the folder adapter reads every image file under a folder)")
    # Not only regular files: a FIFO or device named like an image is refused by the common path
    # (ingest.images), never skipped in silence.
    files = sorted(p for p in path.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and _file_like(p))
    if not files:
        raise InputError(f"{path}: no image files found (looked for {', '.join(IMAGE_SUFFIXES)})")
    records = []
    for p in files:
        rel = p.relative_to(path).as_posix()
        records.append(Record(rel, rel, _NO_LABELS.copy(), rel, None, file=rel))
    return unlabeled_source(path, records)
