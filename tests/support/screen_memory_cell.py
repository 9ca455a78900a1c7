"""Run as a script: one pre-screen cell of N rows x D dims (two classes, 8 latent factors) and print
its peak memory beyond what was resident before it, as a multiple of the features' own bytes
(Linux: /proc/self/clear_refs resets the high-water mark VmHWM). Used by
tests/probes/screening/test_memory.py in a fresh process, so nothing else counts.

    python tests/support/screen_memory_cell.py N D
"""

from __future__ import annotations

import json
import sys

import numpy as np

from crsbench.ingest.types import Task
from crsbench.probes.screening.score import score_cell

BLOCK = 16_384


def _status_kb(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field))


def features(n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Standardised low-rank features with a class signal, built a block at a time."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, n)
    mix = rng.normal(size=(8, d))
    x = np.empty((n, d))
    for start in range(0, n, BLOCK):
        rows = slice(start, min(n, start + BLOCK))
        m = rows.stop - rows.start
        x[rows] = (rng.normal(size=(m, 8)) + y[rows, None]) @ mix + 0.05 * rng.normal(size=(m, d))
    x -= x.mean(axis=0)
    x /= x.std(axis=0)
    return x, y


def main() -> None:
    n, d = int(sys.argv[1]), int(sys.argv[2])
    x, y = features(n, d)
    score_cell(x[:2000], y[:2000], Task.MULTICLASS, 2)  # imports and first-call work outside the measure
    with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
        refs.write("5")
    before = _status_kb("VmRSS")
    scores = score_cell(x, y, Task.MULTICLASS, 2)
    peak = (_status_kb("VmHWM") - before) * 1024
    print(json.dumps({"peak_over_features": peak / x.nbytes, "features_bytes": x.nbytes, "scores": scores}))


if __name__ == "__main__":
    main()
