"""Labels validated at the edge: one spelling per class, no invented classes, every split covered.

* Text labels are NFC-normalised with zero-width characters removed and surrounding
  whitespace stripped, so `Nevus`, ` Nevus` and its NFD spelling are one class.
* `nan`, `NaN`, `NA`, `N/A`, `null`, `none` and empty cells are a *missing* label, never
  a class: refused (multiclass/ordinal), or for multilabel 0/1 columns refused unless
  the manifest option `missing=zeros` reads them as negatives.
* A label set is bounded by the number of images and by MAX_LABELS, checked before any
  array is sized from it (a stray label value of 1e9 is an error, not an allocation).
* After splitting, every class (multiclass/ordinal) or label (multilabel: a positive)
  must appear in train, calib and test; otherwise the test metrics would silently
  average over fewer classes. `rare_classes=merge` (multiclass only) folds such classes
  into one class `other` instead.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import numpy as np

from crsbench.core import SPLITS, InputError
from crsbench.ingest.types import Task

MAX_LABELS = 10_000
MISSING_SPELLINGS = frozenset({"", "nan", "na", "n/a", "null", "none"})
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"))
RARE_CHOICES = ("refuse", "merge")
MERGED_CLASS = "other"


def clean_label(text: object) -> str:
    """The canonical spelling of a label cell or class name."""
    return unicodedata.normalize("NFC", str(text)).translate(_ZERO_WIDTH).strip()


def is_missing(text: str) -> bool:
    """True for a cell that spells 'no label' (after `clean_label`)."""
    return text.lower() in MISSING_SPELLINGS


def clean_names(names: Sequence[str], where: str) -> list[str]:
    """Class/label names cleaned; a missing spelling or a duplicate after cleaning is an error."""
    out = [clean_label(n) for n in names]
    for raw, name in zip(names, out, strict=True):
        if is_missing(name):
            raise InputError(f"{where}: {raw!r} cannot be a class or label name (it spells a missing label)")
    seen: dict[str, str] = {}
    for raw, name in zip(names, out, strict=True):
        if name in seen:
            raise InputError(
                f"{where}: labels {seen[name]!r} and {raw!r} are the same label once "
                f"normalised (Unicode NFC, whitespace and zero-width characters)"
            )
        seen[name] = raw
    return out


def check_label_count(n_labels: int, n_images: int, where: str) -> None:
    """Refuse a label set larger than the images could ever cover, or than MAX_LABELS."""
    if n_labels > MAX_LABELS:
        raise InputError(
            f"{where}: {n_labels:,} classes/labels, more than the {MAX_LABELS:,} supported; "
            f"check the label values (a stray large number sizes the label set)"
        )
    if n_labels > n_images:
        raise InputError(f"{where}: {n_labels:,} classes/labels for only {n_images:,} images; check the label values")


def check_two_classes(y: np.ndarray, names: Sequence[str], task: Task, dataset: str) -> None:
    """Refuse a dataset every image of which has one class (multiclass/ordinal), or a multilabel
    label positive on every image: nothing to discriminate, so AUROC is undefined."""
    if task is not Task.MULTILABEL:
        present = [names[int(k)] for k in np.flatnonzero(y.sum(axis=0) > 0)]
        if len(present) < 2:
            raise InputError(
                f"dataset {dataset!r} has one class ({present[0]!r} on all {len(y)} images); "
                f"a probe needs at least two classes to discriminate"
            )
        return
    always = [names[int(k)] for k in np.flatnonzero(y.sum(axis=0) == len(y))]
    if always:
        raise InputError(
            f"dataset {dataset!r}: label {always[0]!r} is positive on all {len(y)} images "
            f"(no negative to discriminate); drop the label or add negative images"
        )


def split_gaps(y: np.ndarray, splits: Sequence[str] | np.ndarray, names: Sequence[str]) -> dict[str, list[str]]:
    """{class or label name: [splits it has no (positive) example in]}, for those with gaps."""
    split_arr = np.asarray(splits, dtype=object)
    gaps: dict[str, list[str]] = {}
    for split in SPLITS:
        counts = y[split_arr == split].sum(axis=0)
        for k in np.flatnonzero(counts == 0):
            gaps.setdefault(names[int(k)], []).append(split)
    return gaps


def check_splits(
    y: np.ndarray, splits: Sequence[str] | np.ndarray, names: Sequence[str], task: Task, merged: bool = False
) -> None:
    """Every split non-empty and every class/label present in each; InputError otherwise."""
    sizes = {s: int(np.sum(np.asarray(splits, dtype=object) == s)) for s in SPLITS}
    empty = [s for s in SPLITS if sizes[s] == 0]
    if empty:
        raise InputError(
            f"the split layout leaves {' and '.join(empty)} empty "
            f"(train {sizes['train']}, calib {sizes['calib']}, test {sizes['test']}); "
            f"every split needs images (check the 'split' column or official splits)"
        )
    gaps = split_gaps(y, splits, names)
    if gaps:
        name, missing = next(iter(gaps.items()))
        hint = (
            f"; add images, or pass --option rare_classes=merge to fold such classes into {MERGED_CLASS!r}"
            if task is Task.MULTICLASS and not merged
            else "; add images"
            if merged
            else "; add images or drop the label"
        )
        more = f" ({len(gaps) - 1} more like it)" if len(gaps) > 1 else ""
        what = "label" if task is Task.MULTILABEL else "class"
        raise InputError(
            f"{what} {name!r} has no {'positive ' if task is Task.MULTILABEL else ''}"
            f"example in {', '.join(missing)}{more}{hint}"
        )


def merge_classes(labels: np.ndarray, names: Sequence[str], rare: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Fold the classes `rare` into one class MERGED_CLASS (multiclass indices)."""
    keep = [n for n in names if n not in rare and n != MERGED_CLASS]
    merged = [*keep, MERGED_CLASS]
    index = {n: (merged.index(n) if n in keep else len(keep)) for n in names}
    remap = np.asarray([index[n] for n in names], dtype=np.int64)
    return remap[np.asarray(labels, dtype=np.int64)], merged
