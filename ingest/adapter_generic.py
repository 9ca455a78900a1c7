"""MedMNIST (.npz, official splits) and manifest (CSV of image paths + labels) adapters."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.core import InputError, ProgressFn
from crsbench.ingest.adapter_folder import LABELS_OPTION, UNLABELED, unlabeled_source
from crsbench.ingest.images import NPZ_SEPARATOR, read_npz
from crsbench.ingest.labels import MAX_LABELS, check_label_count, clean_label, clean_names, is_missing
from crsbench.ingest.manifest_columns import (
    COLUMN_OPTIONS,
    MANIFEST_FILE,
    MANIFEST_RESERVED,
    column_hint,
    likely_column,
    named_columns,
    warn_unread_columns,
)
from crsbench.ingest.metadata import check_key
from crsbench.ingest.registry import AdapterOption, register_adapter
from crsbench.ingest.source import Record, RowLog, Source, csv_line, parse_binary, read_csv, safe_rel_path
from crsbench.ingest.types import Task

MEDMNIST_SPLITS = {"train": "train", "val": "calib", "test": "test"}
TASK_CHOICES = tuple(t.value for t in Task)


def _names(option: str, where: str = "--option") -> list[str] | None:
    names = [n for n in option.split(",") if clean_label(n)] if option else []
    return clean_names(names, where) or None


@register_adapter(
    "medmnist",
    task=None,
    licence=(
        "CC BY 4.0 (the MedMNIST v2 collection; each subset keeps its source dataset's terms); https://medmnist.com/"
    ),
    citation=(
        "Yang J. et al. MedMNIST v2: A large-scale lightweight benchmark for 2D and 3D biomedical "
        "image classification. Scientific Data 10, 41 (2023)"
    ),
    description="MedMNIST .npz with {train,val,test}_{images,labels}; official splits (val -> calib)",
    options={
        "task": AdapterOption(
            "auto",
            "task type; 'auto': multilabel if labels have several columns, else multiclass",
            ("auto", *TASK_CHOICES),
        ),
        "labels": AdapterOption("", "comma-separated label names in index order (default: 0, 1, ...)"),
    },
)
def read_medmnist(path: Path, log: RowLog, options: dict[str, str], progress: ProgressFn) -> Source:
    if path.is_dir():
        found = sorted(path.glob("*.npz"))
        if len(found) != 1:
            raise InputError(f"{path}: expected exactly one .npz file, found {len(found)}; pass the file itself")
        path = found[0]
    arrays = read_npz(path, [f"{split}_{kind}" for split in MEDMNIST_SPLITS for kind in ("images", "labels")])
    for split in MEDMNIST_SPLITS:
        _check_npz_arrays(path.name, split, arrays[f"{split}_images"], arrays[f"{split}_labels"])
    shapes = {_label_rows(arrays[f"{s}_labels"]).shape[1] for s in MEDMNIST_SPLITS}
    if len(shapes) != 1:
        raise InputError(f"{path.name}: label arrays have different widths across splits: {sorted(shapes)}")
    width = shapes.pop()
    task = (
        Task.parse(options["task"])
        if options["task"] != "auto"
        else (Task.MULTILABEL if width > 1 else Task.MULTICLASS)
    )
    names = _names(options["labels"])
    n_images = sum(len(arrays[f"{s}_labels"]) for s in MEDMNIST_SPLITS)
    if task is Task.MULTILABEL:
        n_labels = width
    else:
        if width != 1:
            raise InputError(f"{path.name}: a {task.value} task needs one label column, found {width}")
        # Bounded before anything is sized from it: one stray value of 1e9 must not allocate.
        top = max(_largest_label(arrays[f"{s}_labels"]) for s in MEDMNIST_SPLITS)
        n_labels = len(names) if names else top + 1
        if not names and top >= min(MAX_LABELS, n_images):
            check_label_count(top + 1, n_images, f"{path.name} (largest label value {top})")
    check_label_count(n_labels, n_images, path.name)
    names = names or [str(k) for k in range(n_labels)]
    if len(names) != n_labels:
        raise InputError(f"{path.name}: {len(names)} label names given for {n_labels} labels")
    records = []
    for split, ours in MEDMNIST_SPLITS.items():
        labels = _label_rows(arrays[f"{split}_labels"])
        for i, row in enumerate(labels):
            with log.row(f"{path.name}:{split}_labels", i):
                label = _medmnist_label(row, task, n_labels)
                image_id = f"{split}-{i:06d}"
                rel = f"{path.name}{NPZ_SEPARATOR}{split}_images/{i}"
                records.append(Record(image_id, rel, label, image_id, ours, file=f"{path.name}:{split}_labels", line=i))
    return Source(path.parent, task, names, records)


def _check_npz_arrays(file: str, split: str, images: np.ndarray, labels: np.ndarray) -> None:
    """Whole-array checks, before any row: dtype, shape, channel count, label type."""
    if len(images) != len(labels):
        raise InputError(f"{file}: {split}_images has {len(images)} rows but {split}_labels {len(labels)}")
    if images.dtype != np.uint8 or images.ndim not in (3, 4):
        raise InputError(f"{file}: {split}_images must be uint8 (N, H, W[, C]), got {images.dtype} {images.shape}")
    if images.shape[1] < 1 or images.shape[2] < 1:
        raise InputError(f"{file}: {split}_images has empty images (shape {images.shape})")
    if images.ndim == 4 and images.shape[3] not in (1, 3, 4):
        raise InputError(f"{file}: {split}_images has {images.shape[3]} channels (expected 1, 3 or 4)")
    if labels.dtype.kind not in "biuf":
        raise InputError(f"{file}: {split}_labels must be numeric, got {labels.dtype}")


def _label_rows(labels: np.ndarray) -> np.ndarray:
    """(n, width) view of a label array; an empty split keeps its declared width."""
    width = int(np.prod(labels.shape[1:])) if labels.ndim > 1 else 1
    return labels.reshape(len(labels), width)


def _largest_label(labels: np.ndarray) -> int:
    values = labels[np.isfinite(labels)] if labels.dtype.kind == "f" else labels
    return int(values.max(initial=0)) if values.size else 0


def _medmnist_label(row: np.ndarray, task: Task, n_labels: int) -> int | np.ndarray:
    if task is Task.MULTILABEL:
        if not np.isin(row, (0, 1)).all():  # NaN is not in (0, 1) either
            raise InputError(f"malformed multilabel value {row.tolist()} (expected 0/1)")
        return row.astype(np.int8)
    value = row[0]
    if not np.isfinite(value) or float(value) != int(value) or int(value) < 0:
        raise InputError(f"malformed label value {value.item() if hasattr(value, 'item') else value!r}")
    if int(value) >= n_labels:
        raise InputError(f"unknown class {int(value)} (expected 0-{n_labels - 1})")
    return int(value)


META_PREFIX = "meta:"  # a manifest column meta:<key> is per-image metadata (ingest.metadata)
MANIFEST_SPLITS = {
    "train": "train",
    "calib": "calib",
    "val": "calib",
    "valid": "calib",
    "validate": "calib",
    "validation": "calib",
    "test": "test",
    "": None,
}


@register_adapter(
    "manifest",
    task=None,
    licence="unknown (the user's own data)",
    citation="unknown (the user's own data)",
    description="a CSV of image paths relative to its folder: 'path,label' or 'path,<one 0/1 column per label>'; "
    "optional image_id, group and split (train/calib/test) columns and meta:<key> metadata columns; "
    "columns named otherwise are named with the *_column options (-o label_column=diagnosis); "
    "the task type is declared",
    options={
        "task": AdapterOption(None, "task type: multiclass, ordinal or multilabel", TASK_CHOICES),
        "classes": AdapterOption(
            "",
            "for a 'label' column: comma-separated class names in index order "
            "(default: sorted values; ordinal: integers 0..K-1)",
        ),
        "missing": AdapterOption(
            "refuse",
            "a missing multilabel cell (empty, nan, NA, null): refuse the row, or read it as 0 ('zeros')",
            ("refuse", "zeros"),
        ),
        "labels": LABELS_OPTION,
        **{
            option: AdapterOption(column, f"the column of {what} (default {column!r})")
            for option, (column, what) in COLUMN_OPTIONS.items()
        },
    },
)
def read_manifest(path: Path, log: RowLog, options: dict[str, str], progress: ProgressFn) -> Source:
    if path.is_dir():  # a dataset's source re-read: the file it was ingested from
        path = path / options.get(MANIFEST_FILE, "manifest.csv")
    root, name = path.parent, path.name
    frame = read_csv(path, [])
    meta_columns = {
        c: check_key(c[len(META_PREFIX) :].strip(), f"{name}: column {c!r}")
        for c in frame.columns
        if c.startswith(META_PREFIX)
    }
    meta_cells = {key: frame[c].to_numpy() for c, key in meta_columns.items()}
    frame = named_columns(frame.drop(columns=list(meta_columns)), options, name)
    if options.get("labels") == UNLABELED:
        warn_unread_columns(frame, name)
        return _unlabeled_manifest(frame, root, name, log, meta_cells)
    task = Task.parse(options["task"])
    if "label" not in frame.columns and task is not Task.MULTILABEL:
        _explain_missing_label_column(frame, name)
    parse: Callable[[dict[str, Any]], int | np.ndarray]
    if "label" in frame.columns:
        if task is Task.MULTILABEL:
            raise InputError(f"{name}: a multilabel manifest needs one 0/1 column per label, not a 'label' column")
        names = _names(options["classes"], f"{name}: option classes") or _class_names(frame["label"], task, name)
        warn_unread_columns(frame, name)
        parse = lambda row: _class_index(row["label"], names)  # noqa: E731
    else:
        columns = [c for c in frame.columns if c not in MANIFEST_RESERVED]
        if not columns:
            raise InputError(f"{name}: missing required column 'label' (or one 0/1 column per label)")
        names = clean_names(columns, name)
        allowed = {**BINARY, **({m: 0 for m in MISSING_CELLS} if options.get("missing") == "zeros" else {})}
        parse = lambda row: _one_hot_row(row, columns, task, allowed)  # noqa: E731
    records = []
    for i, row in enumerate(frame.to_dict("records")):
        with log.row(name, csv_line(i)):
            label = parse(row)
            rel = safe_rel_path(root, row["path"])
            image_id = (row.get("image_id") or "").strip() or rel
            split = (row.get("split") or "").strip().lower()
            if split not in MANIFEST_SPLITS:
                raise InputError(f"unknown split {row['split']!r} (expected train, calib or test)")
            rec = Record(
                image_id,
                rel,
                label,
                (row.get("group") or "").strip() or image_id,
                MANIFEST_SPLITS[split],
                file=name,
                line=csv_line(i),
            )
            rec.meta = {key: str(meta_cells[key][i]) for key in meta_cells}
            records.append(rec)
    return Source(root, task, names, records, kept_options={MANIFEST_FILE: name})


def _unlabeled_manifest(
    frame: pd.DataFrame, root: Path, name: str, log: RowLog, meta_cells: dict[str, np.ndarray]
) -> Source:
    """--unlabeled: only path (and image_id, group, split) are read; label columns are refused."""
    labelled = [c for c in frame.columns if c not in MANIFEST_RESERVED or c == "label"]
    if labelled:
        raise InputError(
            f"{name}: --unlabeled, but the manifest has label column(s) {', '.join(labelled)}; "
            f"drop them or ingest without --unlabeled"
        )
    records = []
    for i, row in enumerate(frame.to_dict("records")):
        with log.row(name, csv_line(i)):
            rel = safe_rel_path(root, row["path"])
            image_id = (row.get("image_id") or "").strip() or rel
            split = (row.get("split") or "").strip().lower()
            if split not in MANIFEST_SPLITS:
                raise InputError(f"unknown split {row['split']!r} (expected train, calib or test)")
            group = (row.get("group") or "").strip() or image_id
            rec = Record(image_id, rel, np.zeros(0, np.int8), group, MANIFEST_SPLITS[split], name, csv_line(i))
            rec.meta = {key: str(meta_cells[key][i]) for key in meta_cells}
            records.append(rec)
    source = unlabeled_source(root, records)
    source.kept_options[MANIFEST_FILE] = name
    return source


def _explain_missing_label_column(frame: pd.DataFrame, name: str) -> None:
    """A multiclass/ordinal manifest without 'label': say so, not 'malformed value in column X'."""
    others = [c for c in frame.columns if c not in MANIFEST_RESERVED]
    binary = all(clean_label(v) in BINARY for c in others for v in frame[c])
    if likely_column(frame, "label") or not others or not binary:
        hint = column_hint(frame, "label", "or give one 0/1 column per class")
        raise InputError(f"{name}: missing required column 'label'{hint} (found: {', '.join(frame.columns)})")


def _class_names(values: pd.Series, task: Task, name: str) -> list[str]:
    distinct = sorted({clean_label(v) for v in values} - {""})
    distinct = [v for v in distinct if not is_missing(v)]
    if task is Task.ORDINAL:
        if not all(v.isdigit() for v in distinct):
            bad = next(v for v in distinct if not v.isdigit())
            raise InputError(
                f"{name}: malformed ordinal label {bad!r} (expected integers 0..K-1, or give --option classes=...)"
            )
        return [str(k) for k in range(max(int(v) for v in distinct) + 1)] if distinct else []
    return distinct


def _class_index(value: str, names: list[str]) -> int:
    text = clean_label(value)
    if is_missing(text):
        raise InputError(
            f"missing label {value!r} in column 'label' (a class cannot be spelled empty, nan, NA or null)"
        )
    if text not in names:
        raise InputError(f"unknown class {text!r} (expected one of: {', '.join(names)})")
    return names.index(text)


BINARY = {"1": 1, "1.0": 1, "0": 0, "0.0": 0}
MISSING_CELLS = ("", "nan", "NaN", "NAN", "NA", "na", "N/A", "n/a", "null", "NULL", "None", "none")


def _one_hot_row(row: dict[str, Any], columns: list[str], task: Task, allowed: dict[str, int]) -> int | np.ndarray:
    values = np.array([parse_binary(clean_label(row[c]), c, allowed) for c in columns], dtype=np.int8)
    if task is Task.MULTILABEL:
        return values
    if values.sum() != 1:
        raise InputError(f"malformed one-hot row: {int(values.sum())} classes set")
    return int(values.argmax())
