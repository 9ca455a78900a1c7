"""The feature-store catalog in the warehouse: tables `encoders` and `feature_sets` (METHODS.md §2).

The Zarr store is the truth; these tables are its index for SQL. `record_feature_set`
upserts one row from a feature set's attributes (typed: features.extraction_result), `sync_catalog` rescans a whole
store (e.g. after extracting elsewhere), `upsert_encoder` inserts or updates the row of a registry entry.
`screened_sets` lists the sets whose clean features exist for every row (what a pre-screen reads),
`screen_hint` says which command makes them.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

import duckdb
import pandas as pd

from crsbench.core import FROZEN, CrsbenchError
from crsbench.features.extraction_result import StoredAttrs
from crsbench.features.lookup import get_encoder
from crsbench.features.registry import EncoderEntry
from crsbench.features.store import FeatureSetRef, FeatureStore
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.overlap import record_pretraining
from crsbench.warehouse.retire import retire_for_new_weights

# The feature_sets columns read from a set's `cost` attribute (features.cost); all NULL for a set
# extracted before cost was measured ("not measured", never zero).
COST_COLUMNS = (
    "params",
    "flops_per_image",
    "images_per_s",
    "peak_memory_bytes",
    "peak_memory_note",
    "stored_bytes_per_image",
    "widths",
    "cost_device",
    "cost_dtype",
)


_FEATURE_SET_COLUMNS = (
    "dataset_id",
    "encoder_id",
    "regime",
    "store_url",
    "depths",
    "conditions",
    "dim",
    "dtype",
    "n_images",
    "image_digest",
    "complete",
    "pretrained",
    "checkpoint",
    "weights_hash",
    "code_version",
    "provenance",
    "degenerate",
    "degenerate_confirmed_at",
    *COST_COLUMNS,
    "screened",
)


def upsert_encoder(wh: Warehouse, entry: EncoderEntry, weights_hash: str | None = None) -> None:
    """Insert or update the encoder's row (keyed by encoder_id), with its resolved spec as JSON, and
    its declared pretraining data (encoder_pretraining; from the entry: the stored spec leaves it out)."""
    with wh.transaction() as con:
        _write_encoder(con, entry.to_dict(), weights_hash)
        record_pretraining(con, entry)


def upsert_encoder_spec(wh: Warehouse, spec: dict[str, Any], weights_hash: str | None = None) -> None:
    """As `upsert_encoder`, from a spec dict (`EncoderEntry.to_dict()`, as the store keeps it); the
    encoder's declared pretraining rows are left as they are (the spec does not carry them)."""
    with wh.transaction() as con:
        _write_encoder(con, spec, weights_hash)


def _write_encoder(con: duckdb.DuckDBPyConnection, spec: dict[str, Any], weights_hash: str | None) -> None:
    con.execute("delete from encoders where encoder_id = ?", [spec["id"]])
    con.execute(
        "insert into encoders (encoder_id, family, scope, domain, loader, checkpoint, pretrained, "
        "input_size, pooling, registered_at, origin, spec, weights_hash) "
        "values (?, ?, ?, ?, ?, ?, ?, ?, ?, current_timestamp, ?, ?, ?)",
        [
            spec["id"],
            spec.get("family"),
            spec.get("scope"),
            spec.get("domain"),
            spec.get("loader"),
            spec.get("checkpoint"),
            bool(spec.get("pretrained", True)),
            spec.get("input_size"),
            spec.get("pooling"),
            spec.get("origin", "built-in"),
            json.dumps(spec),
            weights_hash,
        ],
    )


def _row(store_url: str, ref: FeatureSetRef, attrs: StoredAttrs) -> list[Any]:
    return [
        ref.dataset,
        ref.encoder_id,
        ref.regime,
        store_url,
        list(attrs.depths),
        list(attrs.conditions),
        attrs.dim,
        attrs.dtype,
        attrs.n_images,
        attrs.image_digest,
        attrs.complete,
        attrs.pretrained,
        attrs.checkpoint,
        attrs.weights_hash,
        attrs.code_version,
        attrs.provenance,
        attrs.degenerate,
        _timestamp(attrs.degenerate_confirmed_at),
        *cost_row(attrs.cost),
        attrs.screened,
    ]


def cost_row(cost: Mapping[str, Any] | None) -> list[Any]:
    """The COST_COLUMNS values of one set's cost (None each when it was not measured)."""
    if cost is None:
        return [None] * len(COST_COLUMNS)
    widths = cost.get("widths")
    return [
        cost.get("params"),
        cost.get("flops_per_image"),
        cost.get("images_per_s"),
        cost.get("peak_memory_bytes"),
        cost.get("peak_memory_note"),
        cost.get("stored_bytes_per_image"),
        json.dumps(dict(widths)) if widths is not None else None,
        cost.get("device"),
        cost.get("dtype"),
    ]


def _read(store_url: str, ref: FeatureSetRef, attrs: Mapping[str, Any]) -> StoredAttrs:
    """A set's group attributes, typed (features.extraction_result), named by its catalogued url in errors."""
    return StoredAttrs.from_attrs(attrs, f"feature set {ref.path} in {store_url}")


def _timestamp(value: str | None) -> dt.datetime | None:
    """An attrs ISO timestamp (UTC, naive) as a datetime; None when absent or unreadable."""
    try:
        return dt.datetime.fromisoformat(value) if value else None
    except ValueError:
        return None


def portable_url(wh: Warehouse, store_url: str) -> str:
    """`store_url` as the catalog records it (relative when inside the warehouse's directory)."""
    return wh.portable_path(store_url)


def resolve_url(wh: Warehouse, store_url: str) -> str:
    """The location of a catalogued store for this copy of the warehouse."""
    return wh.resolve_path(store_url)


def record_feature_set(wh: Warehouse, store_url: str, ref: FeatureSetRef, attrs: StoredAttrs) -> int:
    """Insert or update the catalog row of one feature set (keyed by dataset, encoder, regime, store)
    from its attributes (`ExtractionResult.stored`); returns how many fits it retired (a set
    re-extracted with other weights)."""
    row = _row(portable_url(wh, store_url), ref, attrs)
    with wh.transaction() as con:
        return _upsert(con, row)


def record_attrs(wh: Warehouse, store_url: str, ref: FeatureSetRef, attrs: Mapping[str, Any]) -> int:
    """`record_feature_set` from the set's group attributes as stored (e.g. `FeatureStore.attrs`)."""
    url = portable_url(wh, store_url)
    return record_feature_set(wh, store_url, ref, _read(url, ref, attrs))


def _upsert(con: duckdb.DuckDBPyConnection, row: list[Any]) -> int:
    """Write one catalog row; a row replacing one of other weights retires the fits trained on
    the old set (`retire_for_new_weights`). Returns how many fits were retired."""
    retired = 0
    new_hash = row[_FEATURE_SET_COLUMNS.index("weights_hash")]
    old = con.execute(
        "select weights_hash from feature_sets where dataset_id = ? and encoder_id = ? and regime = ? "
        "and store_url = ?",
        row[:4],
    ).fetchone()
    if old is not None and old[0] and new_hash and old[0] != new_hash:
        retired = retire_for_new_weights(con, row[3], (row[0], row[1], row[2]), old[0], new_hash)
    con.execute(
        "delete from feature_sets where dataset_id = ? and encoder_id = ? and regime = ? and store_url = ?", row[:4]
    )
    placeholders = ", ".join("?" * len(_FEATURE_SET_COLUMNS))
    con.execute(
        f"insert into feature_sets ({', '.join(_FEATURE_SET_COLUMNS)}, updated_at) "
        f"values ({placeholders}, current_timestamp)",
        row,
    )
    return retired


def encoder_weights(wh: Warehouse, encoder_id: str, regime: str = FROZEN) -> list[tuple[str, str, str]]:
    """(dataset, store url as catalogued, weights hash) of every catalogued set of `encoder_id`
    that records its weights hash."""
    rows = wh.con.execute(
        "select dataset_id, store_url, weights_hash from feature_sets where encoder_id = ? and regime = ? "
        "and weights_hash is not null order by dataset_id, store_url",
        [encoder_id, regime],
    ).fetchall()
    return [(str(d), str(u), str(h)) for d, u, h in rows]


def feature_sets(wh: Warehouse) -> pd.DataFrame:
    """Every catalogued feature set, one row each."""
    return wh.sql("select * from feature_sets order by dataset_id, encoder_id, regime, store_url")


def sync_catalog(wh: Warehouse, store: FeatureStore | str) -> int:
    """Scan a store and upsert a row for each feature set found; returns how many.

    Rows of this store whose feature set has disappeared are deleted; registered
    encoders seen in the store are upserted into `encoders` too.
    """
    store = store if isinstance(store, FeatureStore) else FeatureStore(str(store))
    url = portable_url(wh, store.url)
    refs = store.feature_sets()
    attrs = {ref: _read(url, ref, store.attrs(ref)) for ref in refs}
    rows = [_row(url, ref, attrs[ref]) for ref in refs]
    seen = {(r[0], r[1], r[2]) for r in rows}
    with wh.transaction() as con:
        stale = con.execute(
            "select dataset_id, encoder_id, regime from feature_sets where store_url = ?", [url]
        ).fetchall()
        for key in stale:
            if tuple(key) not in seen:
                con.execute(
                    "delete from feature_sets where dataset_id = ? and encoder_id = ? and regime = ? and store_url = ?",
                    [*key, url],
                )
        for row in rows:
            _upsert(con, row)
    # The entry that ran is in the store (ids, TOML and plugin entries included): record that.
    specs = {ref.encoder_id: a for ref, a in attrs.items() if a.encoder is not None}
    for encoder_id in sorted({r[1] for r in rows}):
        if encoder_id in specs:
            spec = specs[encoder_id]
            upsert_encoder_spec(wh, dict(spec.encoder or {}), spec.weights_hash)
            continue
        try:
            upsert_encoder(wh, get_encoder(encoder_id))
        except CrsbenchError:
            continue  # extracted with an entry this installation does not know; keep the rows
    return len(rows)


def screened_sets(wh: Warehouse, dataset_id: str, regime: str = FROZEN) -> pd.DataFrame:
    """The catalogued sets of `dataset_id` whose clean condition is written for every row at every
    depth (screened by `extract --screen`, or complete): encoder_id, regime, store_url (as this copy
    of the warehouse resolves it), depths (depth keys), complete. Only clean features may be read
    from a set that is not complete; probes, CRS and the analyses read complete sets alone."""
    frame = wh.sql(
        "select encoder_id, regime, store_url, depths, complete from feature_sets "
        "where dataset_id = ? and regime = ? and (screened or complete) order by encoder_id, store_url",
        [dataset_id, regime],
    )
    frame["store_url"] = [resolve_url(wh, str(u)) for u in frame["store_url"]]
    frame["depths"] = [[str(d) for d in ds] for ds in frame["depths"]]
    return frame


def screen_hint(encoder: str, dataset: str) -> str:
    """One line saying which command makes the screening features `encoder` lacks on `dataset`."""
    return (
        f"no screening features for {encoder} on {dataset}: run "
        f"'crsbench extract --screen --encoder {encoder} --dataset {dataset}'"
    )
