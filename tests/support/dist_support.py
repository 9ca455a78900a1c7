"""Shared by the distributed-extraction tests (tests/features/test_distributed*.py): the set's
arrays as bytes, the byte-equality check against a local run, and the claims left behind."""

from __future__ import annotations

import fsspec

from crsbench.features.extract_options import ExtractOptions
from crsbench.features.extraction_cluster import claims_url
from crsbench.features.store import FeatureSetRef, FeatureStore

ENCODER = "tiny-resnet18"
OPTIONS = ExtractOptions(batch_size=8, chunk_rows=16, threads=1)
N_CHUNKS = 5  # 80 images at scale 0.05


def assert_same_bytes(local: FeatureStore, remote: FeatureStore, ref: FeatureSetRef) -> None:
    want, got = local.set_bytes(ref), remote.set_bytes(ref)
    assert sorted(got) == sorted(want) and len(want) > 4 * 16
    assert [name for name in want if got[name] != want[name]] == []
    assert remote.attrs(ref)["complete"] is True
    # the cost is measured once, where the set was created, and completed with the stored bytes
    want_cost, got_cost = local.attrs(ref)["cost"], remote.attrs(ref)["cost"]
    untimed = {k for k in want_cost if k not in ("images_per_s", "peak_memory_bytes")}
    assert {k: got_cost[k] for k in untimed} == {k: want_cost[k] for k in untimed}
    assert got_cost["images_per_s"] > 0 and got_cost["stored_bytes_per_image"] > 0


def leftover_claims(store_url: str, ref: FeatureSetRef) -> list[str]:
    fs, root = fsspec.core.url_to_fs(claims_url(store_url, ref) + "/claims")
    fs.invalidate_cache(root)  # s3fs would answer from a listing this process made earlier
    return [p for p in fs.ls(root, detail=False) if "/.clock-" not in p] if fs.exists(root) else []
