"""Input checks shared by the probes, the metrics and the recalibration maps: bad input is an
InputError naming the value at fault, never a traceback from inside numpy or torch."""

from __future__ import annotations

import numpy as np

from crsbench.core import InputError
from crsbench.ingest.types import Task


def first_offender(values: np.ndarray, bad: np.ndarray) -> str:
    """'nan at row 3, column 2': the first flagged entry (C order) and where it is."""
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    where = ", ".join(f"{axis} {i}" for axis, i in zip(("row", "column"), index, strict=False))
    return f"{values[index].item()!r} at {where}"


def numeric(a: np.ndarray, what: str) -> np.ndarray:
    """`a` itself when numeric; an object array of numbers (from a DataFrame column) as float64."""
    if a.dtype.kind == "O":
        try:
            return a.astype(np.float64)
        except (TypeError, ValueError):
            raise InputError(f"{what} must be numeric, got a non-number among {a.ravel()[:3].tolist()!r}") from None
    if a.dtype.kind not in "fiub":
        raise InputError(f"{what} must be numeric, got dtype {a.dtype}")
    return a


def check_features(x: np.ndarray, what: str = "features") -> None:
    """A non-empty (n, D) numeric array of finite values."""
    x = np.asarray(x)
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise InputError(f"{what} must have shape (n, D) with n, D > 0, got shape {x.shape}")
    if x.dtype.kind not in "fiu":
        raise InputError(f"{what} must be numeric, got dtype {x.dtype}")
    # One float64 sum is a single pass with no mask; only when it is not finite is the culprit looked for.
    if x.dtype.kind == "f" and not np.isfinite(np.sum(x, dtype=np.float64)):
        bad = ~np.isfinite(x)
        if bad.any():
            raise InputError(f"{what} must be finite, got {first_offender(x, bad)}")


def check_targets(y: np.ndarray, task: Task, n_outputs: int, n_rows: int, what: str = "labels") -> None:
    """Class indices in [0, n_outputs) of shape (n_rows,), or a 0/1 (n_rows, n_outputs) multilabel matrix."""
    y = np.asarray(y)
    if task is Task.MULTILABEL:
        if y.shape != (n_rows, n_outputs):
            raise InputError(f"multilabel {what} must have shape ({n_rows}, {n_outputs}), got {y.shape}")
        bad = ~np.isin(y, (0, 1))
        if bad.any():
            raise InputError(f"multilabel {what} must hold only 0 and 1, got {first_offender(y, bad)}")
        return
    if y.shape != (n_rows,):
        raise InputError(f"{task} {what} must have shape ({n_rows},), got {y.shape}")
    y = numeric(y, f"{task} {what} (integer class indices)")
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(y) | (np.mod(y, 1) != 0) | (y < 0) | (y >= n_outputs)
    if bad.any():
        raise InputError(f"{task} {what} must be class indices in [0, {n_outputs}), got {first_offender(y, bad)}")


def check_fit_inputs(x: np.ndarray, y: np.ndarray, task: Task, n_outputs: int) -> None:
    """What every probe's fit checks first: finite (n, D) features and n matching labels."""
    check_features(x, "probe training features")
    if n_outputs < 1:
        raise InputError(f"a probe needs at least one output, got n_outputs={n_outputs}")
    check_targets(y, task, n_outputs, np.shape(x)[0], "probe training labels")
