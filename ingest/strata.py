"""The strata of the image-level bootstrap (METHODS.md §10.2): one definition for the bootstrap's
draw (`crsbench.analyses.uncertainty.resample`) and for ingest's warning that a test split cannot support it.

The resampling unit is a patient group (the image itself where a dataset has none); each stratum
draws as many units, with replacement, as it holds. A unit's stratum:
* multiclass / ordinal: the rarest class the unit holds, rarest = held by the fewest units of the
  split, ties to the lowest class index. A unit of one class (every ungrouped image, every
  single-class patient) is in its class's stratum. A patient with images of several classes
  counts where its rarest class needs it: a class spread over many mixed patients is not left
  with the one patient in which it happens to be the most frequent class.
* multilabel: the unit's lowest-index positive label ('no label' for a unit with none): a proxy,
  not a class.
Then, for both: the units of strata with fewer than MIN_UNITS_PER_STRATUM units (which a draw
could not vary) are pooled into one stratum; a pool of one unit joins the largest stratum.

A multiclass class held by fewer than MIN_UNITS_PER_STRATUM units cannot be resampled at all
(every replicate holds that unit once, or loses the class): `unsupported` names it, the bootstrap
refuses and ingest warns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

MIN_UNITS_PER_STRATUM = 2
NO_LABEL = "no label"
POOLED = {False: "pooled small strata", True: "rare labels"}


@dataclasses.dataclass(frozen=True)
class Strata:
    """Stratum code per unit, the name of each code, and which strata were pooled (by name)."""

    stratum: np.ndarray  # (n_units,)
    names: list[str]
    pooled: list[str]
    joined: str | None  # the stratum a pool of one unit joined, else None


def units_by_label(unit: np.ndarray, onehot: np.ndarray) -> np.ndarray:
    """(n_units, K) image counts per unit and label from unit codes (n,) and a 0/1 matrix (n, K)."""
    n_units = int(unit.max()) + 1 if len(unit) else 0
    per_unit = np.zeros((n_units, onehot.shape[1]), dtype=np.int64)
    np.add.at(per_unit, unit, onehot)
    return per_unit


def resample_strata(per_unit: np.ndarray, names: Sequence[str], multilabel: bool) -> Strata:
    """The strata of units with `per_unit` image counts per label (see the module docstring)."""
    held = per_unit > 0
    if multilabel:
        stratum = np.where(held.any(axis=1), np.argmax(held, axis=1), len(names))
        stratum_names = [*names, NO_LABEL]
    else:
        units_per_class = held.sum(axis=0)
        # Among the classes a unit holds, the one held by the fewest units; argmin ties to the lowest index.
        rarity = np.where(held, units_per_class[None, :], np.iinfo(np.int64).max)
        stratum = np.argmin(rarity, axis=1) if len(per_unit) else np.zeros(0, dtype=np.int64)
        stratum_names = list(names)
    return _pool_small(stratum, [*stratum_names, POOLED[multilabel]])


def _pool_small(stratum: np.ndarray, names: list[str]) -> Strata:
    pool = len(names) - 1
    counts = np.bincount(stratum, minlength=len(names))
    small = counts[stratum] < MIN_UNITS_PER_STRATUM
    pooled = [names[c] for c in np.unique(stratum[small])]
    if small.sum() >= MIN_UNITS_PER_STRATUM:
        return Strata(np.where(small, pool, stratum), names, pooled, None)
    if small.any() and (counts >= MIN_UNITS_PER_STRATUM).any():
        largest = int(np.argmax(counts))
        return Strata(np.where(small, largest, stratum), names, pooled, names[largest])
    return Strata(stratum, names, [], None)


def unsupported(per_unit: np.ndarray, names: Sequence[str], multilabel: bool) -> str | None:
    """Why these units cannot support the image bootstrap, or None when they can: a multiclass
    class held by fewer than MIN_UNITS_PER_STRATUM units (with its image count), or fewer than
    MIN_UNITS_PER_STRATUM units in all."""
    if len(per_unit) < MIN_UNITS_PER_STRATUM:
        return f"{len(per_unit)} test image (group) in all, fewer than {MIN_UNITS_PER_STRATUM}"
    if multilabel:
        return None
    units = (per_unit > 0).sum(axis=0)
    rare = np.flatnonzero((units > 0) & (units < MIN_UNITS_PER_STRATUM))
    if not len(rare):
        return None
    code = int(rare[0])
    return (
        f"class {names[code]!r} is held by {units[code]} test group(s) ({per_unit[:, code].sum()} image(s)), "
        f"fewer than {MIN_UNITS_PER_STRATUM}"
    )


def split_warning(
    dataset: str, split: str, labels: np.ndarray, groups: Sequence[str], names: Sequence[str], multilabel: bool
) -> str | None:
    """One line when `split` (labels aligned with groups) cannot support the image bootstrap."""
    if not len(labels) or not len(names):
        return None
    onehot = (labels > 0).astype(np.int64) if multilabel else np.eye(len(names), dtype=np.int64)[labels]
    codes = np.unique(np.asarray(groups, dtype=str), return_inverse=True)[1]
    why = unsupported(units_by_label(codes.ravel(), onehot), names, multilabel)
    if why is None:
        return None
    return (
        f"dataset {dataset!r}: the {split} split cannot support the image-level bootstrap: {why}; "
        "'crsbench analyze bootstrap' and 'analyze subgroups' will refuse it (add test images of that "
        "class from other patients)"
    )
