"""Adapter `folder`: image files in class folders, as torchvision's ImageFolder reads them, or
every image under a folder without labels (`--unlabeled`).

* Labelled (the default): `root/<class>/<image>`; the classes are the sorted folder names (the
  first folder under the root; deeper folders belong to that class), the task is multiclass.
  Where the root holds split folders (`train`, `val` / `valid` / `validation` / `calib`,
  `test`), the layout is `root/<split>/<class>/<image>` and the folders are the splits; a
  split without a folder is carved from `train` (stratified, seeded), as CheXpert's calib is.
  Without split folders, splits are drawn as for any dataset (stratified, seeded).
* Unlabelled (`--unlabeled`, METHODS.md §17): every image file under the folder; stored with no
  label names and no label rows, enough for extraction and agreement; probing it is refused.

Image ids are the paths relative to the root; each image is its own group. Hidden files and
folders (a name starting with '.', such as `.ipynb_checkpoints`) are not read in the labelled
layout, so they never become a class.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from crsbench.core import InputError, ProgressFn
from crsbench.ingest.labels import clean_names
from crsbench.ingest.registry import AdapterOption, register_adapter
from crsbench.ingest.source import Record, RowLog, Source
from crsbench.ingest.types import Task

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp")
UNLABELED = "none"  # the value of option `labels` that --unlabeled sets
CLASS_FOLDERS = "folders"
_NO_LABELS = np.zeros(0, dtype=np.int8)
LABELS_OPTION = AdapterOption("required", "'none' (set by --unlabeled): ingest without labels", ("required", "none"))
SPLIT_FOLDERS = {
    "train": "train",
    "val": "calib",
    "valid": "calib",
    "validation": "calib",
    "calib": "calib",
    "test": "test",
}


def _file_like(path: Path) -> bool:
    """A regular file, or anything else that is not a folder (FIFO, device, socket)."""
    return path.is_file() or (path.exists() and not path.is_dir())


def unlabeled_source(root: Path, records: list[Record]) -> Source:
    """A Source with no labels: task multilabel over zero labels (no label rows are stored)."""
    empty = [Record(r.image_id, r.rel_path, _NO_LABELS.copy(), r.group_id, r.split, r.file, r.line) for r in records]
    for new, old in zip(empty, records, strict=True):
        new.meta = old.meta
    return Source(root, Task.MULTILABEL, [], empty, notes=["ingested without labels (--unlabeled)"])


@register_adapter(
    "folder",
    task=None,
    licence="unknown (the user's own data)",
    citation="unknown (the user's own data)",
    description="image files in class folders, as torchvision's ImageFolder reads them: root/<class>/<image> "
    "(classes: the sorted folder names; multiclass), or root/<split>/<class>/<image> with split folders "
    "train, val|calib, test (a missing one is carved from train); png, jpg, tif, bmp, webp. With --unlabeled: "
    "every image file under the folder, no labels (extraction and agreement, not probes)",
    options={
        "labels": AdapterOption(
            CLASS_FOLDERS,
            "'folders': each image's class is its folder under the root (or under its split folder); "
            "'none' (set by --unlabeled): no labels",
            (CLASS_FOLDERS, UNLABELED),
        )
    },
)
def read_folder(path: Path, log: RowLog, options: dict[str, str], progress: ProgressFn) -> Source:
    if not path.is_dir():
        raise InputError(f"{path}: not a folder (the folder adapter reads the image files under a folder)")
    if options["labels"] == UNLABELED:
        return _unlabeled_folder(path)
    splits = _split_folders(path)
    bases: dict[Path, str | None] = {**splits} if splits else {path: None}
    found: list[tuple[str, str, str | None]] = []  # (rel path, class, split)
    for base, split in bases.items():
        found += [(rel, cls, split) for rel, cls in _class_images(path, base)]
    if not found:
        raise InputError(f"{path}: no image files in class folders (looked for {', '.join(IMAGE_SUFFIXES)})")
    folders = sorted({cls for _, cls, _ in found})  # ImageFolder's class order
    names = clean_names(folders, f"{path}: class folders")
    index = {cls: k for k, cls in enumerate(folders)}
    carve = set(SPLIT_FOLDERS.values()) - set(splits.values()) if splits else set()
    records = [
        Record(rel, rel, index[cls], rel, None if split == "train" and carve else split, file=rel)
        for rel, cls, split in found
    ]
    return Source(path, Task.MULTICLASS, names, records, notes=_notes(names, splits, carve))


def _unlabeled_folder(path: Path) -> Source:
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


def _visible(base: Path) -> list[Path]:
    return sorted(p for p in base.iterdir() if not p.name.startswith("."))


def _split_folders(root: Path) -> dict[Path, str]:
    """{split folder: split} when the root holds split folders; other folders beside them are refused."""
    folders = [p for p in _visible(root) if p.is_dir()]
    splits = {p: SPLIT_FOLDERS[p.name.lower()] for p in folders if p.name.lower() in SPLIT_FOLDERS}
    others = [p.name for p in folders if p not in splits]
    if splits and others:
        raise InputError(
            f"{root}: split folders ({', '.join(p.name for p in splits)}) beside other folders "
            f"({', '.join(others[:3])}); put every class folder under a split folder "
            f"(root/<split>/<class>/<image>), or move the split folders out for root/<class>/<image>"
        )
    return splits


def _class_images(root: Path, base: Path) -> list[tuple[str, str]]:
    """(path relative to root, class) of every image under `base`'s class folders."""
    out = []
    for p in sorted(base.rglob("*")):
        parts = p.relative_to(base).parts
        hidden = any(part.startswith(".") for part in parts)
        if p.suffix.lower() not in IMAGE_SUFFIXES or hidden or not _file_like(p):
            continue
        if len(parts) < 2:
            raise InputError(
                f"{p.relative_to(root).as_posix()}: an image directly under {base}, not in a class folder; "
                f"a labelled folder holds <folder>/<class>/<image> (or pass --unlabeled to ingest without labels)"
            )
        out.append((p.relative_to(root).as_posix(), parts[0]))
    return out


def _notes(names: list[str], splits: dict[Path, str], carve: set[str]) -> list[str]:
    notes = [f"{len(names)} classes from the folder names"]
    if splits:
        notes.append(f"splits from the folders {', '.join(p.name for p in splits)}")
    if carve:
        notes.append(f"{', '.join(sorted(carve))} carved from train")
    return notes
