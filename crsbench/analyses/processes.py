"""Several analyses at once: each computed in a child process, then all stored here in the order asked.

A child interpreter (`crsbench.core.Child`) opens the warehouse read-only (many processes may
read a DuckDB file that none writes) and computes one analysis as `compute_analysis` does, its side
tables recorded rather than written (`side_tables.deferring_writes`). The caller holds no
connection meanwhile. Then, in the order asked, it writes each analysis's side tables and stores its
outputs (`store_computed`). Every analysis reads the warehouse's inputs (its declared `reads`), never
another analysis's tables, so what is stored is what the same analyses run one after the other
store. An analysis that writes in some other way fails on its read-only connection; it is then
computed here, in its place in the order. Each child runs under the canonical numerics its import of
crsbench sets, whose results depend on neither the process nor its thread count (METHODS.md §4.3).

Children are fresh interpreters (`crsbench.core.Child`), never forks or re-imports of the caller's
main script, so a script calling this needs no `if __name__ == "__main__"` guard and none of its
code runs twice. Request and answer travel as pickles over the child's stdin and stdout, between
this process and the child it started; nothing is read from a file. Only an analysis a fresh
interpreter can find goes to a child (crsbench's own, or an installed plugin's entry point); one
registered at run time in this process alone (a test's module, a notebook's function) makes the
whole request run here, one analysis after the other.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import duckdb

from crsbench.analyses.registry import (
    ANALYSIS_PLUGINS,
    AnalysisResult,
    ComputedAnalysis,
    compute_analysis,
    get_analysis,
    store_computed,
)
from crsbench.analyses.side_tables import deferring_writes
from crsbench.core import Child, ChildStopped, CrsbenchError, ProgressFn, no_progress
from crsbench.warehouse.connection import Warehouse

LABEL = "analyses"
Request = tuple[str, Mapping[str, Any]]  # (analysis name, its params)
_WRITES = "read-only mode"  # DuckDB's refusal of a write on a read-only connection


def findable_in_a_fresh_process(name: str) -> bool:
    """Whether a new interpreter finds analysis `name` in the registry: crsbench's modules are
    imported by the registry itself, an installed plugin through its entry point."""
    module = getattr(get_analysis(name).fn, "__module__", "") or ""
    return module.startswith("crsbench.") or any(
        point.value.split(":")[0] == module for point in entry_points(group=ANALYSIS_PLUGINS)
    )


def compute_in_child(child: Child, db: Path | str, name: str, params: Mapping[str, Any]) -> ComputedAnalysis | None:
    """One analysis computed by `child` on the warehouse read-only; None when it writes other than
    through `replace_rows` (the caller then computes it)."""
    try:
        status, payload = child.call(compute_read_only, str(db), name, dict(params))
    except ChildStopped as exc:
        raise RuntimeError(f"analysis {name}: {exc}") from None
    if status == "error":
        kind, message = payload
        raise CrsbenchError(message) if kind == "user" else RuntimeError(f"analysis {name}: {message}")
    computed: ComputedAnalysis | None = payload if status == "ok" else None
    return computed


def compute_in_children(
    db: Path | str, requests: Sequence[Request], workers: int, progress: ProgressFn
) -> list[ComputedAnalysis | None]:
    """Each request computed by one of up to `workers` children, each taking the next request when
    it is free; returned in the order asked. The first failing request (in that order) raises."""
    out: list[ComputedAnalysis | None] = [None] * len(requests)
    failed: dict[int, Exception] = {}
    queue = iter(range(len(requests)))
    lock = threading.Lock()
    finished: list[int] = []

    def serve(child: Child) -> None:
        try:
            while (index := _next(queue, lock)) is not None:
                name, params = requests[index]
                try:
                    out[index] = compute_in_child(child, db, name, params)
                except Exception as exc:  # kept for its place in the order
                    failed[index] = exc
                with lock:
                    finished.append(index)
                    progress(LABEL, len(finished), len(requests))
        finally:
            child.close()

    n_children = min(workers, len(requests))
    with ThreadPoolExecutor(max_workers=n_children) as pool:
        for future in [pool.submit(serve, Child()) for _ in range(n_children)]:
            future.result()
    if failed:
        raise failed[min(failed)]
    return out


def _next(queue: Iterator[int], lock: threading.Lock) -> int | None:
    with lock:
        return next(queue, None)


def run_many(
    db: Path | str, requests: Sequence[Request], workers: int, progress: ProgressFn | None = None
) -> list[AnalysisResult]:
    """Run each requested analysis on the warehouse `db` and store its tables, in the order asked:
    computed in up to `workers` children when there are two or more and every analysis is findable
    in a fresh interpreter, else one after the other here. `progress` counts the analyses computed.
    The first failing analysis (in the order asked) raises its own error; nothing after it is stored."""
    report = progress or no_progress
    names = [name for name, _ in requests]
    for name in names:
        get_analysis(name)  # an unknown name fails here, before any process starts
    report(LABEL, 0, len(requests))
    parallel = workers >= 2 and len(requests) >= 2 and all(findable_in_a_fresh_process(n) for n in names)
    computed = compute_in_children(db, requests, workers, report) if parallel else [None] * len(requests)
    results = []
    with Warehouse.open(db) as wh:
        for done, ((name, params), one) in enumerate(zip(requests, computed, strict=True), start=1):
            one = compute_analysis(wh, name, params) if one is None else one  # here: not sent, or it writes
            store_computed(wh, one)
            results.append(one.result)
            if not parallel:  # the children counted theirs as they finished
                report(LABEL, done, len(requests))
    return results


def compute_read_only(db: str, name: str, params: dict[str, Any]) -> tuple[str, Any]:
    """In the child: ("ok", the computed analysis with its side tables recorded), ("writes", None)
    when it writes another way, or ("error", (kind, message))."""
    try:
        with Warehouse.open(db, read_only=True) as wh, deferring_writes() as recorded:
            computed = compute_analysis(wh, name, params)
        return ("ok", dataclasses.replace(computed, side_tables=tuple(recorded)))
    except CrsbenchError as exc:
        return ("writes", None) if _WRITES in str(exc) else ("error", ("user", str(exc)))
    except duckdb.Error as exc:
        writes = _WRITES in str(exc)
        return ("writes", None) if writes else ("error", ("internal", f"{type(exc).__name__}: {exc}"))
    except Exception as exc:  # reported to the parent, which raises it
        return ("error", ("internal", f"{type(exc).__name__}: {exc}"))
