"""A feature store's files for the "byte-identical to another run" checks: every file's bytes, but
with the two fields of a set's `cost` attribute that time a run (features.cost.TIMED_FIELDS:
images/s, peak memory) left out. Everything else, arrays and attributes, must match byte for byte."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from crsbench.features.cost import COST_ATTR, TIMED_FIELDS


def untimed(name: str, data: bytes) -> bytes:
    """`data` as stored, or, for a group's zarr.json with a cost, that JSON without the timed fields."""
    if not name.endswith("zarr.json"):
        return data
    meta = json.loads(data)
    cost = meta.get("attributes", {}).get(COST_ATTR)
    if not isinstance(cost, dict):
        return data
    assert all(field in cost for field in TIMED_FIELDS)  # measured, then left out of the comparison
    meta["attributes"][COST_ATTR] = {k: v for k, v in cost.items() if k not in TIMED_FIELDS}
    return json.dumps(meta, sort_keys=True).encode()


def untimed_files(files: Mapping[str, bytes]) -> dict[str, bytes]:
    return {name: untimed(name, data) for name, data in files.items()}


def store_files(url: str | Path) -> dict[str, bytes]:
    root = Path(url)
    return untimed_files({str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()})
