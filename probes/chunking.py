"""How the grid packs one cell's fits into chunks (the unit of work and of atomic writes).

A chunk holds up to `batch_size` fits of one (feature set, depth, probe). That bound suits
probes that fit on the training rows and then predict cheaply. A deferred probe (k-NN) does
its work at evaluation instead: each of its fits searches its training subset for every
eval row, so at paper scale one CheXpert fit (143k train rows x 290k eval rows with the
MIMIC shift target) is most of an hour on one thread, and 25 of them in one chunk would
serialise a day of work behind one worker. Deferred fits are therefore packed by work as
well: a chunk takes fits while their (train rows x eval rows) stay within
`DEFERRED_CHUNK_PAIRS`. Demo-sized cells stay within it by orders of magnitude, so their
chunks are unchanged.

`benchmarks/paper_scale.py` projects wall time with these same functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

DEFAULT_BATCH_SIZE = 25
# k-NN costs ~75 us of one thread per 1e6 (train row x eval row) pairs at D = 1152
# (benchmarks/paper_scale.py): a chunk of 4e9 pairs is ~5 min; a larger fit is a chunk alone.
DEFERRED_CHUNK_PAIRS = 4e9


def subset_rows(fraction: float, n_train: int) -> int:
    """Training rows a fit at `fraction` uses (at least one)."""
    return max(1, math.ceil(fraction * n_train))


def pack(work: Sequence[float], batch_size: int, budget: float | None = None) -> list[slice]:
    """Consecutive slices of `work` (one entry per fit, in grid order), each at most
    `batch_size` long and, given a `budget`, summing to at most `budget` unless it is a
    single fit. Greedy, so the grid's order (largest fraction first) is kept."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    out: list[slice] = []
    start, total = 0, 0.0
    for i, w in enumerate(work):
        full = i - start >= batch_size or (budget is not None and i > start and total + w > budget)
        if full:
            out.append(slice(start, i))
            start, total = i, 0.0
        total += w
    if start < len(work):
        out.append(slice(start, len(work)))
    return out


def fit_work(fractions: Sequence[float], n_train: int, n_eval: int, deferred: bool) -> list[float]:
    """Per-fit work as `pack` reads it: (train rows x eval rows) for deferred probes."""
    return [float(subset_rows(f, n_train) * n_eval) if deferred else 1.0 for f in fractions]


def chunk_slices(fractions: Sequence[float], n_train: int, n_eval: int, deferred: bool, batch_size: int) -> list[slice]:
    """The chunks of one cell's fits (given in grid order by their label fractions)."""
    budget = DEFERRED_CHUNK_PAIRS if deferred else None
    return pack(fit_work(fractions, n_train, n_eval, deferred), batch_size, budget)
