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


def leftover_claims(store_url: str, ref: FeatureSetRef) -> list[str]:
    fs, root = fsspec.core.url_to_fs(claims_url(store_url, ref) + "/claims")
    return [p for p in fs.ls(root, detail=False) if "/.clock-" not in p] if fs.exists(root) else []
