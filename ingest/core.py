"""The one ingest path every adapter shares: records -> validated, split `Dataset`.

Order of work: the adapter parses its layout into records; duplicate ids, unsafe
paths and unreadable images are bad rows (an error, or skipped and recorded with
`skip_bad`); every class/label must keep an example; splits and label-fraction
subsets are then derived deterministically. Nothing is written here: the warehouse
loader stores the finished `Dataset` in one transaction.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.core import SPLITS, CrsbenchError, InputError, ProgressFn, no_progress
from crsbench.ingest.duplicates import DUPLICATE_CHOICES, check_no_leak, split_groups
from crsbench.ingest.images import check_image_size, npz_member
from crsbench.ingest.known_datasets import unknown_names_message
from crsbench.ingest.labels import (
    RARE_CHOICES,
    check_label_count,
    check_splits,
    check_two_classes,
    merge_classes,
    split_gaps,
)
from crsbench.ingest.metadata import metadata_frame, parse_bins
from crsbench.ingest.registry import ADAPTERS, AdapterEntry, get_adapter
from crsbench.ingest.sizes import mixed_sizes_note
from crsbench.ingest.source import Record, RowLog, Source, resolve_path, safe_rel_path
from crsbench.ingest.splits import assign_splits, check_group_safe, label_fraction_subsets, one_hot
from crsbench.ingest.strata import split_warning
from crsbench.ingest.types import Dataset, Task

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
DOMAIN_PATTERN = re.compile(r"^[a-z][a-z_]{0,31}$")


def check_name(name: str) -> str:
    # Dataset names become Zarr group names and file-name parts downstream.
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):  # fullmatch: no trailing newline
        raise CrsbenchError(
            f"invalid dataset name {name!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return name


@dataclass(frozen=True)
class _SharedOptions:
    """The options every adapter takes, beside its own (see `ingest`)."""

    domain: str
    rare: str
    bins: dict[str, tuple[float, ...]]
    duplicates: str
    unlabeled: bool
    source: str | None


@dataclass(frozen=True)
class _Split:
    """Labels after any rare-class merge, and the split of every image."""

    labels: np.ndarray
    names: list[str]
    splits: np.ndarray
    merged: bool


def ingest(
    adapter: str,
    path: Path,
    name: str,
    *,
    skip_bad: bool = False,
    progress: ProgressFn | None = None,
    **options: object,
) -> Dataset:
    """Read a dataset in its published layout into a validated, split `Dataset`.

    `options` are the adapter's own (e.g. uncertainty='ones' for chexpert); see
    `crsbench.ingest.ADAPTERS.get(adapter).options`. Bad rows raise an InputError naming
    the file and line, unless `skip_bad`, which records them in `Dataset.errors`.
    Every adapter also takes `domain`, `rare_classes` ('refuse', or 'merge' to fold
    multiclass classes that cannot reach every split into one class; see ingest.labels),
    `duplicates` ('refuse' byte-identical images in two splits, 'group' them into one split,
    or 'keep'; see ingest.duplicates) and `bins` (edges of numeric metadata keys,
    'age=0,40,60,80;...'; see ingest.metadata) and `source` (what the data is, a name of
    ingest.known_datasets; default the adapter's `dataset`; an unknown name is kept with a
    warning). A dataset of one class is refused.
    """
    entry = get_adapter(adapter)
    check_name(name)
    shared = _pop_shared_options(entry, options)  # leaves the adapter's own in `options`
    if shared.unlabeled:
        options = _unlabeled_options(entry, options)
    resolved = entry.resolve_options(options)
    log = RowLog(skip_bad)
    source, records = _read_records(entry, Path(path), resolved, log, progress or no_progress)
    resolved = {**resolved, **source.kept_options}
    labels = _label_array(records, source.task, len(source.label_names))
    split = _split_images(records, labels, list(source.label_names), source.task, name, shared)
    if shared.duplicates != "refuse":
        resolved = {**resolved, "duplicates": shared.duplicates}
    if split.merged:
        resolved = {**resolved, "rare_classes": shared.rare}
    metadata = metadata_frame(records, shared.bins)
    images, labels = _image_table(records, split.splits, split.labels)
    return Dataset(
        name=name,
        adapter=adapter,
        root=resolve_path(source.root),
        task=source.task,
        label_names=split.names,
        images=images,
        labels=labels,
        fractions=_label_fractions(images, labels, split.names),
        errors=log.frame(),
        domain=shared.domain,
        options=resolved,
        metadata=metadata,
        source=shared.source,
        warnings=_source_warnings(name, shared.source)
        + _bootstrap_warnings(name, source.task, split.names, labels, images),
    )


def _source_warnings(name: str, source: str | None) -> list[str]:
    """A source outside the known names is kept, with a warning naming the closest known ones."""
    message = unknown_names_message([source], f"dataset {name!r}") if source is not None else None
    return [message] if message else []


def _pop_shared_options(entry: AdapterEntry, options: dict[str, object]) -> _SharedOptions:
    """Take the options every adapter accepts out of `options`, validated in a fixed order."""
    # 'domain' overrides the adapter's default domain.
    domain = str(options.pop("domain", entry.domain))
    if not DOMAIN_PATTERN.match(domain):
        raise CrsbenchError(f"invalid domain {domain!r}: use lower-case letters, e.g. derm, eye, rad or none")
    rare = str(options.pop("rare_classes", "refuse"))
    if rare not in RARE_CHOICES:
        raise CrsbenchError(f"invalid rare_classes {rare!r}: expected one of {', '.join(RARE_CHOICES)}")
    bins = parse_bins(str(options.pop("bins", "")))
    duplicates = str(options.pop("duplicates", "refuse"))
    if duplicates not in DUPLICATE_CHOICES:
        raise CrsbenchError(f"invalid duplicates {duplicates!r}: expected one of {', '.join(DUPLICATE_CHOICES)}")
    unlabeled = bool(options.pop("unlabeled", False))
    # 'source' names what the data is (pretraining overlap), over the adapter's own name.
    given = options.pop("source", None)
    source = str(given).strip().lower() if given is not None and str(given).strip() else entry.dataset
    return _SharedOptions(domain, rare, bins, duplicates, unlabeled, source)


def _read_records(
    entry: AdapterEntry, path: Path, resolved: dict[str, str], log: RowLog, report: ProgressFn
) -> tuple[Source, list[Record]]:
    """The adapter's parse of `path`, keeping records with a unique id and a readable image."""
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    source = entry.read(path, log, resolved, report)
    check_label_count(len(source.label_names), len(source.records), path.name)
    records = _unique_ids(source.records, log)
    records = _checked_images(source.root, records, log, report)
    if not records:
        raise InputError(f"{path}: no usable images")
    return source, records


def _split_images(
    records: Sequence[Record], labels: np.ndarray, names: list[str], task: Task, name: str, shared: _SharedOptions
) -> _Split:
    """Assign every image a split, group-safe and leak-checked, merging rare classes when asked."""
    y = one_hot(labels, len(names))
    _require_examples(y, names, "in the dataset")
    check_two_classes(y, names, task, name)
    groups = [r.group_id for r in records]
    hashes = [r.sha256 for r in records]
    fixed = [r.split for r in records]
    joined = split_groups(groups, hashes) if shared.duplicates == "group" else groups
    splits = assign_splits(y, joined, fixed)
    gaps = split_gaps(y, splits, names)
    merged = bool(gaps) and shared.rare == "merge"
    if merged:
        labels, names, y = _merge_rare_classes(labels, names, list(gaps), task, name)
        splits = assign_splits(y, joined, fixed)
    check_splits(y, splits, names, task, merged=shared.rare == "merge")
    check_group_safe(groups, splits)
    if shared.duplicates != "keep":
        check_no_leak([r.rel_path for r in records], hashes, splits, f"dataset {name!r}")
    return _Split(labels, names, splits, merged)


def _merge_rare_classes(
    labels: np.ndarray, names: list[str], gaps: list[str], task: Task, name: str
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """rare_classes=merge: fold the classes that cannot reach every split into one."""
    if task is not Task.MULTICLASS:
        raise InputError(
            f"rare_classes=merge applies to multiclass datasets only ({task.value} labels cannot be merged); add images"
        )
    labels, names = merge_classes(labels, names, gaps)
    y = one_hot(labels, len(names))
    check_two_classes(y, names, task, name)
    return labels, names, y


def _image_table(records: Sequence[Record], splits: np.ndarray, labels: np.ndarray) -> tuple[pd.DataFrame, np.ndarray]:
    """The images frame and its labels, in store order: by split, then image id."""
    images = pd.DataFrame(
        {
            "image_id": [r.image_id for r in records],
            "rel_path": [r.rel_path for r in records],
            "sha256": [r.sha256 for r in records],
            "group_id": [r.group_id for r in records],
            "split": splits,
        }
    )
    order = np.lexsort((images["image_id"].to_numpy(), images["split"].map(SPLITS.index).to_numpy()))
    return images.iloc[order].reset_index(drop=True), labels[order]


def _label_fractions(images: pd.DataFrame, labels: np.ndarray, names: list[str]) -> pd.DataFrame:
    """The label-fraction subsets of the train split."""
    if not names:  # no labels: nothing to fit a probe on, so no label fractions
        return pd.DataFrame(
            {
                "seed": pd.Series(dtype="int64"),
                "fraction": pd.Series(dtype="float64"),
                "image_id": pd.Series(dtype="object"),
            }
        )
    train = images.index[images["split"] == "train"].to_numpy()
    return label_fraction_subsets(one_hot(labels[train], len(names)), images["image_id"].to_numpy()[train])


def _bootstrap_warnings(name: str, task: Task, names: list[str], labels: np.ndarray, images: pd.DataFrame) -> list[str]:
    """One line when the test split cannot support the image-level bootstrap (ingest.strata)."""
    test = (images["split"] == "test").to_numpy()
    line = split_warning(name, "test", labels[test], images["group_id"][test].tolist(), names, task is Task.MULTILABEL)
    return [line] if line else []


def _unlabeled_options(entry: AdapterEntry, options: dict[str, object]) -> dict[str, object]:
    """--unlabeled: option labels=none for an adapter that can read its layout without labels."""
    from crsbench.ingest.adapter_folder import UNLABELED

    if "labels" not in entry.options:
        able = ", ".join(name for name, e in ADAPTERS.items() if "labels" in e.options)
        raise CrsbenchError(f"adapter {entry.name!r} reads labelled layouts only; --unlabeled works with: {able}")
    out = {**options, "labels": UNLABELED}
    if "task" in entry.options and "task" not in out:
        out["task"] = "multilabel"  # an unlabelled dataset is stored as multilabel over zero labels
    return out


def _unique_ids(records: Sequence[Record], log: RowLog) -> list[Record]:
    first: dict[str, Record] = {}
    kept = []
    for rec in records:
        prev = first.get(rec.image_id)
        if prev is not None:
            log.bad(rec.file, rec.line, f"duplicate image id {rec.image_id!r} (first at {prev.file} line {prev.line})")
            continue
        first[rec.image_id] = rec
        kept.append(rec)
    return kept


def _checked_images(root: Path, records: Sequence[Record], log: RowLog, report: ProgressFn) -> list[Record]:
    """Safe paths, readable images, and their SHA-256; bad ones go through the log."""

    def check(rec: Record) -> tuple[str, tuple[int, int]]:
        member = npz_member(rec.rel_path)
        safe_rel_path(root, member[0] if member else rec.rel_path)
        return check_image_size(root, rec.rel_path)

    def attempt(rec: Record) -> tuple[tuple[str, tuple[int, int]] | None, str | None]:
        try:
            return check(rec), None
        except InputError as exc:
            return None, str(exc)

    kept: list[Record] = []
    sizes: dict[str, tuple[int, int]] = {}
    total = len(records)
    workers = min(8, (os.cpu_count() or 1) + 2)
    with ThreadPoolExecutor(max_workers=workers) as pool:  # decoding releases the GIL
        for done, (rec, (found, error)) in enumerate(zip(records, pool.map(attempt, records), strict=True), start=1):
            if found is None:
                log.bad(rec.file, rec.line, error or "unreadable image")
            else:
                rec.sha256, sizes[rec.rel_path] = found
                kept.append(rec)
            if done % 32 == 0 or done == total:
                report("checking images", done, total)
    note = mixed_sizes_note(sizes)
    if note:
        warnings.warn(note, stacklevel=3)
    return kept


def _label_array(records: Sequence[Record], task: Task, n_labels: int) -> np.ndarray:
    if task is Task.MULTILABEL:
        rows = [np.asarray(r.label, dtype=np.int8) for r in records]
        return np.asarray(rows, dtype=np.int8).reshape(len(rows), n_labels)
    return np.asarray([int(r.label) for r in records], dtype=np.int64)


def _require_examples(y: np.ndarray, names: Sequence[str], where: str) -> None:
    counts = y.sum(axis=0)
    empty = [names[int(k)] for k in np.flatnonzero(counts == 0)]
    if empty:
        raise InputError(
            f"class {empty[0]!r} has no examples {where}"
            + (f" (also: {', '.join(map(repr, empty[1:]))})" if len(empty) > 1 else "")
        )
