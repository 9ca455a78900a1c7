"""What "relevant" means for retrieval, per task (METHODS.md §24.1): each meaning is one registered
function `(query_labels, gallery_labels) -> (n_queries, n_gallery) float64` gains in [0, 1].

Labels are class indices (n,) for multiclass and ordinal tasks and 0/1 matrices (n, L) for
multilabel ones. A binary meaning gives 0 or 1; a graded one (`graded=True`) any gain in [0, 1].
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from crsbench.core import Registry
from crsbench.ingest.types import Task

RelevanceFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclasses.dataclass(frozen=True)
class Relevance:
    name: str
    fn: RelevanceFn
    tasks: tuple[Task, ...]
    graded: bool
    description: str


def _entry(name: str, fn: RelevanceFn, *, tasks: tuple[Task, ...], graded: bool, description: str) -> Relevance:
    return Relevance(name, fn, tasks, graded, description)


RELEVANCE: Registry[Relevance] = Registry("retrieval relevance", make=_entry, entry_point_group="crsbench.relevance")


def register_relevance(
    name: str, *, tasks: tuple[Task, ...], description: str, graded: bool = False
) -> Callable[[RelevanceFn], RelevanceFn]:
    """Decorator: `fn(query_labels, gallery_labels) -> gains` becomes relevance `name` for `tasks`."""
    return RELEVANCE.register(name, tasks=tasks, graded=graded, description=description)


def relevances_for(task: Task) -> tuple[Relevance, ...]:
    """The registered meanings of relevance that apply to `task`, in registration order."""
    return tuple(r for r in (RELEVANCE.get(n) for n in RELEVANCE.names()) if task in r.tasks)


@register_relevance(
    "same_label",
    tasks=(Task.MULTICLASS, Task.ORDINAL),
    description="the gallery case has the query's class (for an ordinal task: the same grade)",
)
def same_label(query: np.ndarray, gallery: np.ndarray) -> np.ndarray:
    out: np.ndarray = (query[:, None] == gallery[None, :]).astype(np.float64)
    return out


@register_relevance(
    "within_one",
    tasks=(Task.ORDINAL,),
    description="the gallery case's grade is within one of the query's",
)
def within_one(query: np.ndarray, gallery: np.ndarray) -> np.ndarray:
    return (np.abs(query[:, None].astype(np.int64) - gallery[None, :].astype(np.int64)) <= 1).astype(np.float64)


def _finding_sets(labels: np.ndarray) -> np.ndarray:
    """0/1 findings with one more column, "no finding", set where a case has no positive label: two
    cases without findings share that state (as CheXpert's own 'No Finding' label does)."""
    positive = np.asarray(labels, dtype=np.float64)
    none = (positive.sum(axis=1) == 0).astype(np.float64)
    return np.concatenate([positive, none[:, None]], axis=1)


@register_relevance(
    "any_shared",
    tasks=(Task.MULTILABEL,),
    description="the gallery case shares at least one positive finding with the query (or both have none)",
)
def any_shared(query: np.ndarray, gallery: np.ndarray) -> np.ndarray:
    out: np.ndarray = (_finding_sets(query) @ _finding_sets(gallery).T > 0).astype(np.float64)
    return out


@register_relevance(
    "jaccard",
    tasks=(Task.MULTILABEL,),
    graded=True,
    description="the Jaccard index of the two cases' finding sets (no finding counts as one finding)",
)
def jaccard(query: np.ndarray, gallery: np.ndarray) -> np.ndarray:
    q, g = _finding_sets(query), _finding_sets(gallery)
    shared = q @ g.T
    union = q.sum(axis=1)[:, None] + g.sum(axis=1)[None, :] - shared
    out: np.ndarray = shared / union  # every finding set holds at least one element: union >= 1
    return out
