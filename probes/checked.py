"""Checked chunk reads: every row chunk a probe loads is decoded whole and checked (METHODS.md §2).

`CheckedArray` is the source of a feature array's Dask graph: one task per row chunk, which
decodes the chunk (its `crc32c` codec checks the stored bytes) and compares the CRC-32C of the
decoded values with every record of the set's content manifest at hand
(`features.integrity.read_expectations`). Any failure is one line naming the dataset, encoder,
depth, condition and chunk, and the repair command. The graph carries the URL, the array path
and the manifest (plain data), never an open array, so it ships to `dask.distributed` workers
as is; each worker opens the array once.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import zarr

from crsbench.features.integrity import read_chunk
from crsbench.features.store import FeatureSetRef


class CheckedArray:
    """A feature array as Dask sees it (`shape`, `dtype`, `ndim`, row `chunks`); blocks via `block`."""

    def __init__(
        self,
        url: str,
        storage_options: dict[str, Any] | None,
        ref: FeatureSetRef,
        name: str,
        arr: zarr.Array[Any],
        manifest: list[tuple[int, ...]],
    ) -> None:
        self.url, self.storage_options, self.ref, self.name = url, storage_options, ref, name
        self.path = f"{ref.path}/{name}"
        self.shape: tuple[int, ...] = tuple(int(s) for s in arr.shape)
        self.dtype = np.dtype(arr.dtype)
        self.ndim = len(self.shape)
        self.rows = int(arr.chunks[0])
        self.manifest = manifest
        self._arr: zarr.Array[Any] | None = arr
        self._lock = threading.Lock()

    @property
    def chunks(self) -> tuple[int, ...]:
        return (self.rows, *self.shape[1:])

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_arr"], state["_lock"] = None, None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _open(self) -> zarr.Array[Any]:
        with self._lock:
            if self._arr is None:
                kwargs: dict[str, Any] = {}
                if self.storage_options and "://" in self.url:
                    kwargs["storage_options"] = self.storage_options
                self._arr = zarr.open_array(self.url, path=self.path, mode="r", zarr_format=3, **kwargs)
            return self._arr

    def block(self, key: tuple[slice, ...]) -> np.ndarray:
        """One row chunk (Dask asks for whole chunks: `chunks` matches the stored chunking)."""
        start = key[0].start or 0
        chunk = start // self.rows
        expected = self.manifest[chunk] if self.manifest else None  # [] for sets written before checksums
        block = read_chunk(self._open(), self.ref, self.name, chunk, expected)
        return block[(slice(start - chunk * self.rows, (key[0].stop or self.shape[0]) - chunk * self.rows), *key[1:])]


def checked_getitem(source: CheckedArray, key: tuple[slice, ...]) -> np.ndarray:
    """Dask's getter for a `CheckedArray` (not one of Dask's own getters, so never fused with
    a later fancy index: every task reads a whole chunk)."""
    return source.block(key)
