"""Datasets in the warehouse: store an ingested `Dataset`, read it back, declare shift pairs.

`load_dataset` writes the tables datasets, images, labels (long one-hot: one row per
image and class/label with value 0/1), label_fractions, ingest_errors and the declared grid
(dataset_grid; `warehouse.grid`) in one transaction, so a failed load leaves the warehouse exactly as it was.
`read_dataset` returns the same `Dataset` (same row order, labels and fractions).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from crsbench.core import CrsbenchError, InputError, ProgressFn, no_progress
from crsbench.ingest.types import IMAGE_COLUMNS, Dataset, Task
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.grid import GridKey, declare_grid
from crsbench.warehouse.grid_suites import declare_suites
from crsbench.warehouse.parts import one_row
from crsbench.warehouse.retire import Impact, retire_for_new_shift, retire_for_replacement
from crsbench.warehouse.retire import replacement_impact as _impact

_TABLES_BY_DATASET = {
    "images": "dataset_id",
    "labels": "dataset_id",
    "label_fractions": "dataset_id",
    "ingest_errors": "dataset_id",
    "image_metadata": "dataset_id",
    "datasets": "dataset_id",
}


@contextmanager
def _frame(con: duckdb.DuckDBPyConnection, name: str, frame: pd.DataFrame) -> Iterator[str]:
    con.register(name, frame)
    try:
        yield name
    finally:
        con.unregister(name)


def _exists(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    return bool(one_row(con.execute("select count(*) from datasets where dataset_id = ?", [name]).fetchone())[0] > 0)


def one_hot_long(ds: Dataset) -> pd.DataFrame:
    """The labels as long one-hot rows (image_id, label_idx, value), image by image."""
    k = len(ds.label_names)
    if ds.task is Task.MULTILABEL:
        values = np.asarray(ds.labels, dtype=np.int8).reshape(ds.n_images, k)
    else:
        values = np.zeros((ds.n_images, k), dtype=np.int8)
        values[np.arange(ds.n_images), np.asarray(ds.labels, dtype=np.int64)] = 1
    return pd.DataFrame(
        {
            "image_id": np.repeat(ds.images["image_id"].to_numpy(dtype=object), k),
            "label_idx": np.tile(np.arange(k, dtype=np.int32), ds.n_images),
            "value": values.ravel(),
        }
    )


def load_dataset(
    wh: Warehouse,
    ds: Dataset,
    *,
    replace: bool = False,
    shift_targets: Sequence[str] = (),
    shift_sources: Sequence[str] = (),
    grid: Sequence[GridKey] | None = None,
    suites: Sequence[str] = (),
) -> None:
    """Store `ds` (and optional shift pairs with it) in one transaction, with its declared
    evaluation grid (`grid`: (probe, depth, fraction, seed, condition) keys, default the
    protocol's; a replaced dataset keeps its grid) and the corruption `suites` on its full-label fits.

    An existing dataset of the same name is an error unless `replace`; replacing
    keeps shift pairs whose label names still match and drops the others, and retires
    the fits and feature sets made stale by other data (`warehouse.retire`).
    """
    old = read_dataset(wh, ds.name) if _exists(wh.con, ds.name) else None
    with wh.transaction() as con:
        if old is not None:
            if not replace:
                raise CrsbenchError(f"dataset {ds.name!r} already exists in {wh.path}; use --replace to overwrite it")
            _remove_for_replacement(con, old, ds)
        _store_dataset_row(con, wh, ds)
        _store_images_and_labels(con, ds)
        declare_grid(con, ds.name, grid)
        if suites:
            declare_suites(con, ds.name, suites)
        _store_metadata(con, ds)
        _store_errors(con, ds)
        if replace:
            _drop_mismatched_pairs(con, ds.name)
        for target in shift_targets:
            _declare(con, ds.name, target)
        for source in shift_sources:
            _declare(con, source, ds.name)


def _remove_for_replacement(con: duckdb.DuckDBPyConnection, old: Dataset, ds: Dataset) -> None:
    """Retire what the new data makes stale, then delete the old dataset's rows."""
    retire_for_replacement(con, old, ds)
    for table, column in _TABLES_BY_DATASET.items():
        con.execute(f"delete from {table} where {column} = ?", [ds.name])


def _store_dataset_row(con: duckdb.DuckDBPyConnection, wh: Warehouse, ds: Dataset) -> None:
    con.execute(
        "insert into datasets (dataset_id, adapter, root, task, label_names, n_images, image_digest, domain, "
        "created_at, options, source) values (?, ?, ?, ?, ?, ?, ?, ?, current_timestamp, ?, ?)",
        [
            ds.name,
            ds.adapter,
            wh.portable_path(ds.root),
            ds.task.value,
            list(ds.label_names),
            ds.n_images,
            ds.image_digest(),
            ds.domain,
            json.dumps(ds.options, sort_keys=True),
            ds.source,
        ],
    )


def _store_images_and_labels(con: duckdb.DuckDBPyConnection, ds: Dataset) -> None:
    """The per-image tables: images (in the dataset's row order), labels and label fractions."""
    images = ds.images[list(IMAGE_COLUMNS)].astype(object).copy()
    images.insert(0, "row_index", np.arange(ds.n_images, dtype=np.int32))
    with _frame(con, "_crs_images", images):
        con.execute(
            "insert into images (dataset_id, row_index, image_id, rel_path, sha256, group_id, split) "
            "select ?, row_index, image_id, rel_path, sha256, group_id, split from _crs_images",
            [ds.name],
        )
    with _frame(con, "_crs_labels", one_hot_long(ds)):
        con.execute(
            "insert into labels (dataset_id, image_id, label_idx, value) "
            "select ?, image_id, label_idx, value from _crs_labels",
            [ds.name],
        )
    fractions = ds.fractions[["seed", "fraction", "image_id"]].astype({"image_id": object})
    with _frame(con, "_crs_fractions", fractions):
        con.execute(
            "insert into label_fractions (dataset_id, seed, fraction, image_id) "
            "select ?, seed, fraction, image_id from _crs_fractions",
            [ds.name],
        )


def _store_metadata(con: duckdb.DuckDBPyConnection, ds: Dataset) -> None:
    meta = ds.metadata[["image_id", "key", "value"]].astype(object)
    orphans = sorted(set(meta["image_id"]) - set(ds.images["image_id"]))
    if orphans:
        raise InputError(
            f"dataset {ds.name!r}: metadata row for image {orphans[0]!r}, which is not in the dataset "
            f"({len(orphans)} such images); remove the rows or add the images"
        )
    with _frame(con, "_crs_metadata", meta):
        con.execute(
            "insert into image_metadata (dataset_id, image_id, key, value) "
            "select ?, image_id, key, value from _crs_metadata",
            [ds.name],
        )


def _store_errors(con: duckdb.DuckDBPyConnection, ds: Dataset) -> None:
    errors = ds.errors[["row", "file", "message"]].astype({"file": object, "message": object})
    with _frame(con, "_crs_errors", errors):
        con.execute(
            "insert into ingest_errors (dataset_id, row_number, file, message, recorded_at) "
            "select ?, row, file, message, current_timestamp from _crs_errors",
            [ds.name],
        )


def replacement_impact(wh: Warehouse, ds: Dataset) -> Impact:
    """What loading `ds` with replace=True would retire (see warehouse.retire)."""
    old = read_dataset(wh, ds.name) if _exists(wh.con, ds.name) else None
    return _impact(wh.con, old, ds)


def read_dataset(wh: Warehouse, name: str) -> Dataset:
    """The stored dataset, rows in store order (split train, calib, test, then image_id)."""
    row = wh.con.execute(
        "select adapter, root, task, label_names, domain, options, source from datasets where dataset_id = ?", [name]
    ).fetchone()
    if row is None:
        known = ", ".join(list_datasets(wh)) or "none"
        raise CrsbenchError(f"no dataset {name!r} in {wh.path} (datasets: {known})")
    adapter, root, task, label_names, domain, options, source = row
    task = Task(task)
    images = wh.sql(
        "select image_id, rel_path, sha256, group_id, split from images where dataset_id = ? order by row_index", [name]
    )
    images = images.astype({c: str for c in IMAGE_COLUMNS})
    long = wh.sql("select image_id, label_idx, value from labels where dataset_id = ?", [name])
    position = pd.Series(np.arange(len(images)), index=images["image_id"].to_numpy())
    matrix = np.zeros((len(images), len(label_names)), dtype=np.int8)
    matrix[position[long["image_id"]].to_numpy(), long["label_idx"].to_numpy()] = long["value"].to_numpy()
    labels = matrix if task is Task.MULTILABEL else matrix.argmax(axis=1).astype(np.int64)
    fractions = wh.sql(
        "select seed, fraction, image_id from label_fractions where dataset_id = ? order by seed, fraction, image_id",
        [name],
    )
    fractions = fractions.astype({"seed": "int64", "fraction": "float64", "image_id": str})
    errors = wh.sql(
        "select row_number as row, file, message from ingest_errors where dataset_id = ? "
        "order by file, row_number, message",
        [name],
    )
    metadata = wh.sql(
        "select image_id, key, value from image_metadata where dataset_id = ? order by image_id, key", [name]
    ).astype(object)
    return Dataset(
        name=name,
        adapter=adapter,
        root=Path(wh.resolve_path(root)),
        task=task,
        label_names=list(label_names),
        images=images,
        labels=labels,
        fractions=fractions,
        errors=errors,
        domain=domain or "none",
        options=json.loads(options) if options else {},
        metadata=metadata,
        source=source,
    )


def list_datasets(wh: Warehouse) -> list[str]:
    return [r[0] for r in wh.con.execute("select dataset_id from datasets order by dataset_id").fetchall()]


def dataset_summary(wh: Warehouse) -> pd.DataFrame:
    """One row per dataset: task, domain, image counts per split, labels, skipped rows, shift targets."""
    return wh.sql(
        """select d.dataset_id as dataset, d.task, d.domain, d.n_images as images,
                  count(*) filter (where i.split = 'train') as train,
                  count(*) filter (where i.split = 'calib') as calib,
                  count(*) filter (where i.split = 'test') as test,
                  len(d.label_names) as labels,
                  (select count(*) from ingest_errors e where e.dataset_id = d.dataset_id) as skipped,
                  coalesce((select string_agg(target_id, ', ' order by target_id) from shift_pairs s
                    where s.source_id = d.dataset_id), '') as shift_to
           from datasets d left join images i using (dataset_id)
           group by all order by d.dataset_id"""
    )


def declare_shift(wh: Warehouse, source: str, target: str) -> None:
    """Record that probes fitted on `source` are also evaluated on `target` (idempotent)."""
    with wh.transaction() as con:
        _declare(con, source, target)


def shift_targets(wh: Warehouse, source: str) -> list[str]:
    rows = wh.con.execute(
        "select target_id from shift_pairs where source_id = ? order by target_id", [source]
    ).fetchall()
    return [r[0] for r in rows]


def shift_sources(wh: Warehouse, target: str) -> list[str]:
    rows = wh.con.execute(
        "select source_id from shift_pairs where target_id = ? order by source_id", [target]
    ).fetchall()
    return [r[0] for r in rows]


def shift_pairs(wh: Warehouse) -> list[tuple[str, str]]:
    rows = wh.con.execute("select source_id, target_id from shift_pairs order by source_id, target_id").fetchall()
    return [(s, t) for s, t in rows]


def _label_names(con: duckdb.DuckDBPyConnection, name: str, role: str) -> list[str]:
    row = con.execute("select label_names from datasets where dataset_id = ?", [name]).fetchone()
    if row is None:
        raise CrsbenchError(f"shift {role} {name!r} is not an ingested dataset; ingest it first")
    return list(row[0])


def _declare(con: duckdb.DuckDBPyConnection, source: str, target: str) -> None:
    if source == target:
        raise CrsbenchError(f"a shift pair needs two different datasets, got {source!r} twice")
    src, tgt = _label_names(con, source, "source"), _label_names(con, target, "target")
    if src != tgt:
        raise CrsbenchError(
            f"cannot declare shift {source} -> {target}: label names differ "
            f"({len(src)} vs {len(tgt)} labels; first difference: "
            f"{next((a, b) for a, b in zip([*src, None], [*tgt, None], strict=False) if a != b)})"
        )
    done = one_row(
        con.execute(
            "select count(*) from shift_pairs where source_id = ? and target_id = ?", [source, target]
        ).fetchone()
    )[0]
    if not done:
        con.execute("insert into shift_pairs values (?, ?, current_timestamp)", [source, target])
        retire_for_new_shift(con, source, target)


def _drop_mismatched_pairs(con: duckdb.DuckDBPyConnection, name: str) -> None:
    pairs = con.execute(
        "select source_id, target_id from shift_pairs where source_id = ? or target_id = ?", [name, name]
    ).fetchall()
    for source, target in pairs:
        rows = con.execute("select label_names from datasets where dataset_id in (?, ?)", [source, target]).fetchall()
        if len(rows) != 2 or list(rows[0][0]) != list(rows[1][0]):
            con.execute("delete from shift_pairs where source_id = ? and target_id = ?", [source, target])


def relocate_dataset(wh: Warehouse, name: str, root: Path | str, progress: ProgressFn = no_progress) -> int:
    """Point dataset `name` at `root` after its images moved; returns the images checked.

    Every image must be found under `root` with the SHA-256 recorded at ingest, else nothing changes
    and the first image that differs (or is missing) is named.
    """
    from crsbench.ingest.images import check_image

    if one_row(wh.con.execute("select count(*) from datasets where dataset_id = ?", [name]).fetchone())[0] == 0:
        known = ", ".join(list_datasets(wh)) or "none"
        raise CrsbenchError(f"no dataset {name!r} in {wh.path} (datasets: {known})")
    root = Path(root)
    if not root.is_dir() and not root.is_file():
        raise CrsbenchError(f"cannot relocate {name!r}: {root} does not exist")
    images = wh.con.execute(
        "select rel_path, sha256 from images where dataset_id = ? order by row_index", [name]
    ).fetchall()
    label = f"check {name} images under {root}"
    for done, (rel_path, sha256) in enumerate(images):
        try:
            got = check_image(root, rel_path)
        except InputError as exc:
            raise CrsbenchError(f"cannot relocate {name!r} to {root}: {exc}") from None
        if got != sha256:
            raise CrsbenchError(
                f"cannot relocate {name!r} to {root}: image {rel_path} is not the one ingested "
                f"(sha256 {got[:12]}, ingested {sha256[:12]})"
            )
        if done % 256 == 0:
            progress(label, done, len(images))
    progress(label, len(images), len(images))
    with wh.transaction() as con:
        con.execute("update datasets set root = ? where dataset_id = ?", [wh.portable_path(root), name])
    return len(images)
