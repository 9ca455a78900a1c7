"""Benchmark: local extraction against `extract --scheduler` with one worker, in one run.

    .venv/bin/python benchmarks/extract_dist.py                        # CPU, tiny random-init ViT
    .venv/bin/python benchmarks/extract_dist.py --device cuda --encoder vit-b16 --random-init \
        --compute-dtype bfloat16 --batch-size 512 --n-test 2048 --image-size 256   # one GPU worker

The same synthetic test images (every row in the test split: 16 conditions x 4 depths each) are
extracted twice into local stores: by `features.extract` in this process, then over a
dask.distributed LocalCluster of one worker process (one thread; `--resources GPU=1` with
--device cuda, as a GPU worker is started) through crsbench.features.extraction_cluster. Prints both
rates in forwards/s and test images/s, their ratio (the cost of the cluster path: task
dispatch, the per-worker model build, writes from the worker), and whether the two stores hold
identical bytes. Both runs include their model build; the worker's happens once.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

from crsbench.core import CONDITIONS
from crsbench.features import FeatureSetRef, FeatureStore, extract, get_encoder
from crsbench.features.extract_options import ExtractOptions
from crsbench.features.extraction_cluster import ClusterExtraction

sys.path.insert(0, str(Path(__file__).parent))
from extract import make_dataset


def same_bytes(a: FeatureStore, b: FeatureStore, ref: FeatureSetRef) -> bool:
    return a.set_bytes(ref) == b.set_bytes(ref)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--encoder", default="tiny-vit")
    ap.add_argument("--random-init", action="store_true", help="a pretrained entry's architecture, seeded weights")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--compute-dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--n-test", type=int, default=512, help="test images (16 conditions each)")
    ap.add_argument("--image-size", type=int, default=128)
    ap.add_argument("--chunk-rows", type=int, default=256)
    args = ap.parse_args()

    from distributed import LocalCluster

    entry = get_encoder(args.encoder)
    if args.random_init:
        entry = dataclasses.replace(entry, pretrained=False)
    options = ExtractOptions(
        device=args.device,
        batch_size=args.batch_size,
        compute_dtype=args.compute_dtype,
        chunk_rows=args.chunk_rows,
        threads=1,  # the cluster worker runs one forward at a time; so does the local run here
    )
    n_fw = args.n_test * len(CONDITIONS)
    resources = {"GPU": 1} if args.device.startswith("cuda") else None
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "bench"
        folder.mkdir()
        ds = make_dataset(folder, args.n_test, args.image_size, ["test"])
        ref = FeatureSetRef(ds.name, entry.id)
        local, remote = FeatureStore(f"{tmp}/local.zarr"), FeatureStore(f"{tmp}/dist.zarr")
        t0 = time.perf_counter()
        extract(ds, entry, local, options)
        t_local = time.perf_counter() - t0
        with (
            LocalCluster(
                n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None, resources=resources
            ) as cluster,
            ClusterExtraction(cluster.scheduler_address, options) as cx,
        ):
            t0 = time.perf_counter()
            cx.extract(ds, entry, remote.url)
            t_dist = time.perf_counter() - t0
        equal = same_bytes(local, remote, ref)
    print(
        f"encoder {entry.id} on {args.device} ({args.compute_dtype}, batch {args.batch_size}), {args.n_test} test images"
    )
    for name, t in (("local", t_local), ("distributed (1 worker)", t_dist)):
        print(f"  {name:24s} {t:8.2f} s  {n_fw / t:10.1f} forwards/s  {args.n_test / t:8.1f} test images/s")
    print(f"  distributed / local throughput: {t_local / t_dist:.2f}; stored bytes identical: {equal}")
    if not equal:
        raise SystemExit("the distributed store differs from the local one")


if __name__ == "__main__":
    main()
