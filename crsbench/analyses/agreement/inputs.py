"""What the agreement analyses read: the clean features of every encoder on a dataset, and its images.

Feature sets are found through the catalog (`feature_sets`, complete rows); an encoder is named by
its `EncoderKey` (`enc` for frozen features, `enc@lora-s0` for an adapted variant). Every check a
user can fail is one line naming the value and what exists instead (METHODS.md §17).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pandas as pd

from crsbench.core import CLEAN, SPLITS, CrsbenchError, EncoderKey
from crsbench.features.store import FeatureSetRef, FeatureStore, depth_key
from crsbench.warehouse.catalog import resolve_url
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.integrity import recorded_manifests


@dataclasses.dataclass(frozen=True)
class FeatureSource:
    key: str  # encoder key as printed: enc or enc@regime
    store: FeatureStore
    ref: FeatureSetRef
    depths: tuple[str, ...]  # extracted depth keys (d025 ...)
    pretrained: bool


@dataclasses.dataclass(frozen=True)
class DatasetImages:
    dataset_id: str
    image_ids: np.ndarray  # every image, store row order
    split: np.ndarray
    groups: np.ndarray
    task: str
    n_labels: int

    def rows(self, split: str | None) -> np.ndarray:
        """Store rows of all images, or of one split."""
        if split is None:
            return np.arange(len(self.image_ids))
        if split not in SPLITS:
            raise CrsbenchError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
        return np.flatnonzero(self.split == split)


def dataset_ids(wh: Warehouse, dataset: str | None) -> list[str]:
    known = [r[0] for r in wh.con.execute("select dataset_id from datasets order by dataset_id").fetchall()]
    if dataset is None:
        return known
    if dataset not in known:
        raise CrsbenchError(f"dataset {dataset!r} is not in the warehouse (it has: {', '.join(known) or 'none'})")
    return [dataset]


def images(wh: Warehouse, dataset_id: str) -> DatasetImages:
    frame = wh.sql("select image_id, split, group_id from images where dataset_id = ? order by row_index", [dataset_id])
    row = wh.con.execute("select task, len(label_names) from datasets where dataset_id = ?", [dataset_id]).fetchone()
    if row is None:
        raise CrsbenchError(f"dataset {dataset_id!r} is not in the warehouse")
    return DatasetImages(
        dataset_id,
        frame["image_id"].astype(str).to_numpy(),
        frame["split"].astype(str).to_numpy(),
        frame["group_id"].astype(str).to_numpy(),
        str(row[0]),
        int(row[1] or 0),
    )


def feature_sources(wh: Warehouse, dataset_id: str, screened: bool = False) -> dict[str, FeatureSource]:
    """Every complete feature set on the dataset, by encoder key (the first store when several hold one);
    with `screened`, also the sets whose clean condition alone is whole (`crsbench extract --screen`)."""
    frame = wh.sql(
        "select encoder_id, regime, store_url, depths, pretrained from feature_sets "
        "where dataset_id = ? and (complete or (? and screened)) order by encoder_id, regime, store_url",
        [dataset_id, screened],
    )
    out: dict[str, FeatureSource] = {}
    for r in frame.itertuples(index=False):
        key = str(EncoderKey(str(r.encoder_id), str(r.regime)))
        if key not in out:
            store = FeatureStore(resolve_url(wh, str(r.store_url)))
            store.recorded = recorded_manifests(wh, store.url)  # reads check chunks against them too
            ref = FeatureSetRef(dataset_id, str(r.encoder_id), str(r.regime))
            out[key] = FeatureSource(key, store, ref, _extracted(store, ref, r.depths), bool(r.pretrained))
    return out


def _extracted(store: FeatureStore, ref: FeatureSetRef, listed: Sequence[str]) -> tuple[str, ...]:
    """The depths the catalog lists whose clean array is in the store."""
    try:
        group = store.group(ref)
    except CrsbenchError:
        return ()
    return tuple(str(d) for d in listed if f"{d}/{CLEAN}" in group)


def choose_sources(
    sources: dict[str, FeatureSource], dataset_id: str, encoders: Sequence[str] | None, depths: Sequence[float]
) -> list[FeatureSource]:
    """The named encoders' sources (default all), each with every depth asked for."""
    names = sorted(sources) if not encoders else list(dict.fromkeys(str(EncoderKey.parse(e)) for e in encoders))
    missing = [e for e in names if e not in sources]
    if missing:
        have = ", ".join(sorted(sources)) or "none"
        raise CrsbenchError(
            f"encoder {missing[0]} has no complete features on dataset {dataset_id!r} "
            f"(encoders with features there: {have}); run 'crsbench extract --encoder {missing[0]} "
            f"--dataset {dataset_id}'"
        )
    for name in names:
        for depth in depths:
            if depth_key(depth) not in sources[name].depths:
                raise CrsbenchError(
                    f"depth {depth} was not extracted for encoder {name} on dataset {dataset_id!r} "
                    f"(extracted: {', '.join(sources[name].depths)})"
                )
    return [sources[n] for n in names]


def check_rows(source: FeatureSource, imgs: DatasetImages) -> None:
    """The store's rows are the warehouse's images, in order (else re-extract)."""
    ids = source.store.image_ids(imgs.dataset_id)
    if ids.shape != imgs.image_ids.shape or not np.array_equal(ids, imgs.image_ids):
        raise CrsbenchError(
            f"feature store {source.store.url} holds other images for dataset {imgs.dataset_id!r} than the "
            f"warehouse; re-extract with 'crsbench extract --encoder {source.ref.encoder_id} "
            f"--dataset {imgs.dataset_id}'"
        )


def clean_features(source: FeatureSource, depth: float, rows: np.ndarray) -> np.ndarray:
    """The clean features of `rows` at `depth`, float32 (an exact copy of the float16 store)."""
    from crsbench.probes.reader import read_rows  # dask and zarr: loaded when an analysis reads features

    x = read_rows(source.store, source.ref, depth, CLEAN, rows)
    out: np.ndarray = x.astype(np.float32) if source_dtype_fits(x) else x
    return out


def source_dtype_fits(x: np.ndarray) -> bool:
    """Whether float32 holds `x` exactly (true for float16 and float32 stores)."""
    return bool(np.array_equal(x.astype(np.float32).astype(np.float64), x))


def label_codes(wh: Warehouse, imgs: DatasetImages, rows: np.ndarray) -> np.ndarray | None:
    """One integer per image for its label (class, or the whole label set of a multilabel image);
    None when the dataset has no labels."""
    long = wh.sql("select image_id, label_idx, value from labels where dataset_id = ? and value = 1", [imgs.dataset_id])
    if imgs.n_labels == 0 or long.empty:
        return None
    matrix = (
        long.pivot_table(index="image_id", columns="label_idx", values="value", aggfunc="max", fill_value=0)
        .reindex(index=pd.Index(imgs.image_ids[rows]), columns=range(imgs.n_labels), fill_value=0)
        .to_numpy(dtype=np.int8)
    )
    _, codes = np.unique(matrix, axis=0, return_inverse=True)
    out: np.ndarray = np.asarray(codes).reshape(-1)
    return out


def metadata_codes(wh: Warehouse, imgs: DatasetImages, rows: np.ndarray) -> dict[str, np.ndarray]:
    """Per metadata key of the dataset (image_metadata, by key), one integer per image of `rows`
    for its value, -1 where the image has none; keys no image of `rows` has are left out."""
    long = wh.sql(
        "select key, image_id, value from image_metadata where dataset_id = ? order by key", [imgs.dataset_id]
    )
    ids = pd.Index(imgs.image_ids[rows])
    out: dict[str, np.ndarray] = {}
    for key, frame in long.groupby("key", sort=True):
        values = pd.Series(frame["value"].to_numpy(), index=frame["image_id"].to_numpy()).reindex(ids)
        codes = np.asarray(pd.factorize(values, use_na_sentinel=True)[0], dtype=np.int64)
        if (codes >= 0).any():
            out[str(key)] = codes
    return out


def has_labels(wh: Warehouse, dataset_id: str) -> bool:
    row = wh.con.execute("select count(*) from labels where dataset_id = ? and value = 1", [dataset_id]).fetchone()
    return bool(row and row[0])
