"""Stage digests: short SHA-256s of what each stage of the chain stored, to compare two machines or
a run with the golden file (docs/METHODS.md §4.3).

* `images/<dataset>`: over `image_id sha256` lines ordered by image id (the suite's bytes);
* `features/<dataset>/<encoder>/<depth>/<condition>`: over the raw stored bytes of each array;
* `runs/<probe>`: over the float64 bytes of auroc, ece, brier and nll in grid order, with the
  row count;
* `table/<name>`: over a table or view as CSV with 12 significant digits (leaderboard, analyses).

Each digest is the first 16 hex digits. `first_difference` names the earliest stage that differs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from crsbench.warehouse.connection import Warehouse

STAGES = ("images", "features", "runs", "table")
RUN_ORDER = "encoder_id, dataset_id, eval_dataset_id, regime, probe, depth, label_fraction, seed, condition"


def short_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def image_digests(wh: Warehouse, datasets: Iterable[str]) -> dict[str, str]:
    out = {}
    for name in datasets:
        rows = wh.con.execute(
            "select image_id, sha256 from images where dataset_id = ? order by image_id", [name]
        ).fetchall()
        out[f"images/{name}"] = short_digest("\n".join(f"{i} {s}" for i, s in rows).encode())
    return out


def feature_digests(store_url: str, datasets: Iterable[str], encoders: Iterable[str]) -> dict[str, str]:
    import zarr

    out = {}
    for name in datasets:
        for encoder in encoders:
            group = zarr.open_group(store_url, path=f"{name}/{encoder}", mode="r")
            for path in sorted(key for key, node in group.members(max_depth=None) if isinstance(node, zarr.Array)):
                if path.startswith("d") and "/" in path:  # <depth>/<condition>; not the bookkeeping arrays
                    block = np.asarray(zarr.open_array(store_url, path=f"{name}/{encoder}/{path}", mode="r")[:])
                    out[f"features/{name}/{encoder}/{path}"] = short_digest(block.tobytes())
    return out


def run_digests(wh: Warehouse, probes: Iterable[str]) -> dict[str, str]:
    out = {}
    for probe in probes:
        frame = wh.con.execute(
            f"select auroc, ece, brier, nll from runs where probe = ? order by {RUN_ORDER}", [probe]
        ).fetchnumpy()
        values = np.column_stack([frame[c] for c in ("auroc", "ece", "brier", "nll")]).astype(np.float64)
        out[f"runs/{probe}"] = f"{len(values)}:{short_digest(values.tobytes())}"
    return out


def table_digests(wh: Warehouse, tables: Mapping[str, str]) -> dict[str, str]:
    """{label: SELECT} -> digest of its rows as CSV, floats at 12 significant digits."""
    out = {}
    for label, query in tables.items():
        frame = wh.con.execute(query).df()
        out[f"table/{label}"] = short_digest(frame.to_csv(index=False, float_format="%.12g").encode())
    return out


def first_difference(found: Mapping[str, str], expected: Mapping[str, str]) -> str | None:
    """'<stage> differ first: keys' for the earliest stage whose digests differ; None if none do."""
    for stage in STAGES:
        keys = sorted(k for k in set(found) | set(expected) if k.startswith(stage + "/"))
        differ = [k for k in keys if found.get(k) != expected.get(k)]
        if differ:
            return f"{stage} differ first: {', '.join(differ[:4])}" + (" ..." if len(differ) > 4 else "")
    return None


def chain_digests(
    wh: Warehouse, store_url: str, datasets: Sequence[str], encoders: Sequence[str], probes: Sequence[str]
) -> dict[str, str]:
    return {
        **image_digests(wh, datasets),
        **feature_digests(store_url, datasets, encoders),
        **run_digests(wh, probes),
    }
