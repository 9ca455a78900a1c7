"""One pre-screen cell: every chosen estimator on one feature matrix and its labels (METHODS.md §21.3).

Multiclass and ordinal tasks are scored by their class labels (an ordinal grade is a class); a
multilabel task is scored one label at a time, as a two-class problem (0 = without, 1 = with the
label), and each estimator's scores are averaged over the labels that have both outcomes. The input
is validated first; what cannot be scored is a `ScreenInputError` of one line.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from crsbench.core import CrsbenchError, ScreenInputError
from crsbench.ingest.types import Task
from crsbench.probes.checks import check_targets, first_offender
from crsbench.probes.screening.registry import estimator_names, get_estimator
from crsbench.probes.screening.shared import shared_work

MIN_PER_CLASS = 2  # a class needs a neighbour and a variance


def check_screen_features(x: np.ndarray) -> np.ndarray:
    """x as (n, D) float64, finite and not constant in every column."""
    x = np.asarray(x)
    if x.ndim != 2 or x.shape[0] == 0 or x.shape[1] == 0:
        raise ScreenInputError(f"features must have shape (n, D) with n, D > 0, got shape {x.shape}")
    if x.dtype.kind not in "fiub":
        raise ScreenInputError(f"features must be numeric, got dtype {x.dtype}")
    x = np.asarray(x, dtype=np.float64)
    if not np.isfinite(x.sum()):
        raise ScreenInputError(f"features must be finite, got {first_offender(x, ~np.isfinite(x))}")
    if x.shape[0] < 2 or not np.any(x.max(axis=0) > x.min(axis=0)):
        raise ScreenInputError(
            f"constant features: all {x.shape[1]} columns take one value on the {x.shape[0]} train rows"
        )
    return x


def label_problems(y: np.ndarray, task: Task, n_outputs: int) -> list[tuple[np.ndarray, int]]:
    """The (class indices, number of classes) problems the estimators score: one, or one per label."""
    if task is not Task.MULTILABEL:
        counts = np.bincount(y, minlength=n_outputs)
        few = np.flatnonzero(counts < MIN_PER_CLASS)
        if len(few):
            raise ScreenInputError(
                f"class {int(few[0])} has {int(counts[few[0]])} train example(s); "
                f"the screen needs at least {MIN_PER_CLASS} of every class"
            )
        return [(y, n_outputs)]
    positives = y.sum(axis=0)
    problems = []
    for label, count in enumerate(positives.tolist()):
        if count == 0 or count == len(y):
            continue  # one outcome only: no score, left out of the mean (as AUROC leaves it)
        if min(count, len(y) - count) < MIN_PER_CLASS:
            outcome = "positive" if count < MIN_PER_CLASS else "negative"
            raise ScreenInputError(
                f"label {label} has {min(count, len(y) - count)} {outcome} train example(s); "
                f"the screen needs at least {MIN_PER_CLASS} of each outcome"
            )
        problems.append((y[:, label], 2))
    if not problems:
        raise ScreenInputError("no label has both outcomes among the train rows")
    return problems


def check_screen_inputs(
    x: np.ndarray, y: np.ndarray, task: Task | str, n_outputs: int
) -> tuple[np.ndarray, list[tuple[np.ndarray, int]]]:
    """Validated float64 features and the label problems to score; `ScreenInputError` otherwise."""
    task = Task(task)
    x = check_screen_features(x)
    try:
        check_targets(y, task, n_outputs, x.shape[0], "labels")
    except CrsbenchError as err:
        raise ScreenInputError(str(err)) from None
    return x, label_problems(np.asarray(y).astype(np.int64), task, n_outputs)


def score_cell(
    x: np.ndarray, y: np.ndarray, task: Task | str, n_outputs: int, names: Sequence[str] | None = None
) -> dict[str, float]:
    """{estimator: score} for one cell's standardised train features x (n, D) and labels y: (n,) class
    indices, or (n, L) 0/1 for a multilabel task (averaged over the labels with both outcomes)."""
    chosen = [get_estimator(name) for name in (estimator_names() if names is None else names)]
    x, problems = check_screen_inputs(x, y, task, n_outputs)
    with shared_work(labels=problems[0] if len(problems) == 1 else None):
        return {e.name: float(np.mean([e.fn(x, labels, k) for labels, k in problems])) for e in chosen}
