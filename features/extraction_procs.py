"""Decoding and CPU perturbations in worker processes, for CPU extraction with forward streams.

With several one-thread forwards running at once, the pixels work (PNG/JPEG decoding, the
15 reference perturbations) is the other big consumer of the interpreter lock: both are
many small calls. In worker processes it takes none of the forwards' lock; each task
decodes one image and perturbs it for every requested condition, with the same reference
functions (`perturb`), so the bytes are those of the in-process path.

The pool's workers are fresh interpreters (`crsbench.core.ChildPool`), never forks (the parent
holds torch and OpenMP thread state) nor spawned re-imports of the caller's script (an unguarded
script would run again in each); one pool per process and size, reused by later extractions;
workers run torch on one thread.
"""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np

from crsbench.core import ChildPool, ChildStopped, CrsbenchError

_POOL: ChildPool | None = None
_POOL_SIZE = 0


def init_worker() -> None:
    """Each worker's torch on one thread (the forward streams hold the cores)."""
    import torch

    torch.set_num_threads(1)


def decode_and_perturb(
    root: Path | str, rel_path: str, image_id: str, conditions: list[tuple[str, int]], sha256: str = ""
) -> tuple[np.ndarray, list[np.ndarray]]:
    """One image decoded (its bytes checked against `sha256`), and its reference perturbation for
    each (name, severity)."""
    from crsbench.features.perturbations import perturb
    from crsbench.features.transforms import decode_image

    image = decode_image(root, rel_path, sha256)
    return image, [perturb(image, image_id, name, severity) for name, severity in conditions]


def pixel_pool(workers: int) -> ChildPool:
    """The shared worker pool with `workers` processes (a broken or other-sized one is replaced)."""
    global _POOL, _POOL_SIZE
    if _POOL is None or _POOL.broken or workers != _POOL_SIZE:
        if _POOL is not None:
            _POOL.shutdown(cancel_futures=True)
        _POOL = ChildPool(workers, initializer=init_worker)
        _POOL_SIZE = workers
    return _POOL


class Part:
    """One element of a worker's (image, [perturbed...]) result, awaited like a future."""

    def __init__(self, future: Future[tuple[np.ndarray, list[np.ndarray]]], index: int | None) -> None:
        self.future, self.index = future, index

    def result(self) -> Any:
        try:
            image, perturbed = self.future.result()
        except ChildStopped as exc:
            raise CrsbenchError(
                "a pixel worker process died (out of memory or killed); the feature set stays incomplete "
                "and a rerun resumes it"
            ) from exc
        return image if self.index is None else perturbed[self.index]
