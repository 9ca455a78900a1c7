"""features.store: the storage options a store opens with (the S3 reads themselves: tests/scale/test_s3.py)."""

from __future__ import annotations

from crsbench.features.store import FeatureStore, store_options


def test_s3_stores_read_with_one_get_and_the_callers_options_win():
    assert FeatureStore("s3://bucket/features.zarr").storage_options == {"max_concurrency": 1}
    assert store_options("s3a://bucket/f.zarr", None) == {"max_concurrency": 1}
    given = {"max_concurrency": 4, "anon": True}
    assert store_options("s3://bucket/f.zarr", given) == {"max_concurrency": 4, "anon": True}
    assert given == {"max_concurrency": 4, "anon": True}  # the caller's dict is not changed


def test_other_stores_keep_exactly_what_was_given():
    assert FeatureStore("/data/features.zarr").storage_options is None
    assert store_options("memory://f.zarr", None) is None
    assert store_options("gs://bucket/f.zarr", {"token": "anon"}) == {"token": "anon"}
