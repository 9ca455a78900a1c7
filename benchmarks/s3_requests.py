"""Benchmark: requests and time of one extraction into an S3 feature store, reads as s3fs makes
them by default (a size HEAD before each whole-object GET) against crsbench's store default (one GET).

    .venv/bin/python benchmarks/s3_requests.py [--repeats 2]

A local moto S3 server (what the tests use); the generated suite's isic2019 at scale 0.05 (80
images, 32 px), tiny-resnet18, 16-row chunks, 8-image batches, one thread. Each side extracts
into its own prefix, the two alternating: `FeatureStore(url, {"max_concurrency": 10})` is
s3fs's own default (the store's behaviour before), `FeatureStore(url)` the store's default now
(`features.store.S3_STORE_DEFAULTS`). Reported: the requests the server logged (every method) and
the wall time of each side; the two sides' stored bytes must be equal.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import _tests_support  # noqa: F401  (tests/ on sys.path: support.scale_support)
from support.dist_support import ENCODER, OPTIONS
from support.scale_support import BUCKET, moto_server, s3_environment

from crsbench.features.extraction import extract
from crsbench.features.lookup import get_encoder
from crsbench.features.store import FeatureSetRef, FeatureStore
from crsbench.ingest import Dataset, ingest, make_suite

METHODS = ('"GET ', '"HEAD ', '"PUT ', '"POST ', '"DELETE ')
SIDES = {"s3fs default (HEAD + GET)": {"max_concurrency": 10}, "store default (one GET)": None}


def logged_requests(log: Path) -> int:
    """Requests the moto server has logged so far (one line per request)."""
    text = log.read_text(errors="replace")
    return sum(text.count(method) for method in METHODS)


def one_side(ds: Dataset, url: str, options: dict[str, int] | None, log: Path) -> tuple[int, float, dict[str, bytes]]:
    before = logged_requests(log)
    started = time.perf_counter()
    store = FeatureStore(url, options)
    extract(ds, get_encoder(ENCODER), store, OPTIONS)
    seconds = time.perf_counter() - started
    time.sleep(0.5)  # the server writes its last log lines
    return logged_requests(log) - before, seconds, store.set_bytes(FeatureSetRef(ds.name, ENCODER))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="crsbench-s3-requests-"))
    make_suite(work / "suite", scale=0.05, image_size=32, seed=0)
    ds = ingest("isic2019", work / "suite" / "isic2019", "isic2019")
    log = work / "moto.log"
    results: dict[str, list[tuple[int, float]]] = {side: [] for side in SIDES}
    stored: dict[str, dict[str, bytes]] = {}
    with moto_server(log) as endpoint, s3_environment(endpoint):
        for r in range(args.repeats):
            order = list(SIDES) if r % 2 == 0 else list(reversed(SIDES))
            for i, side in enumerate(order):
                n, seconds, stored[side] = one_side(ds, f"s3://{BUCKET}/r{r}-{i}/features.zarr", SIDES[side], log)
                results[side].append((n, seconds))
                print(f"repeat {r}: {side}: {n} requests, {seconds:.2f} s", flush=True)
    first, second = (stored[side] for side in SIDES)
    assert first == second and len(first) > 64, "the two sides stored different bytes"
    (old, new) = (statistics.median(n for n, _ in results[s]) for s in SIDES)
    (old_s, new_s) = (statistics.median(t for _, t in results[s]) for s in SIDES)
    print(f"requests: {old:.0f} -> {new:.0f} ({old / new:.2f}x fewer); time {old_s:.2f} s -> {new_s:.2f} s "
          f"({old_s / new_s:.2f}x); stored bytes equal ({len(first)} objects)")  # fmt: skip


if __name__ == "__main__":
    main()
