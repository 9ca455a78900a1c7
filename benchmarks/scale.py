"""Benchmark: one paper-scale probe cell from a feature store, with peak memory and read throughput.

    .venv/bin/python benchmarks/scale.py                # 40,000 x 1024 float16 per condition (scaled down)
    .venv/bin/python benchmarks/scale.py --full         # 150,000 x 1024: a CheXpert-size cell
    .venv/bin/python benchmarks/scale.py --store s3://bucket/scale.zarr   # any fsspec URL

A synthetic multilabel dataset (14 labels, 60/15/25 train/calib/test) and one feature set at
full depth are generated straight into the store, block by block (never the whole array in
memory): `clean` for every row and the 15 perturbed conditions for test rows, as extraction
writes them. Then, each in a fresh process so its peak resident memory (`ru_maxrss`) is its
own:

* `stream`: the sweep's pre-fit pass (`check_and_standardise`): NaN check over every array
  the cell reads plus train statistics, through lazy chunked Dask reads;
* `probe`: the whole cell through `run_grid` (logreg, fraction 1.0, seed 0, 17 evaluations).

Peak memory is reported against the cell's feature arrays (16 conditions x rows x dim x 2
bytes) and the float64 training matrix the L-BFGS fit must hold. Finally, read throughput
of the lazy reads (`crsbench.probes.reader`, `dask.array.from_zarr`) is measured against raw
`zarr` reads of the same clean array, for several chunk heights, in this same run. Local
stores are read from the page cache right after writing: these are decode + copy speeds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _tests_support  # noqa: F401  (tests/ on sys.path, for support.synthetic)
import numpy as np
from support.synthetic import make_dataset

from crsbench.core import CLEAN, CONDITIONS, SPLITS
from crsbench.features.integrity import MANIFEST_ATTR, block_digest, checksummed_compressors
from crsbench.features.store import FeatureSetRef, FeatureStore, depth_key
from crsbench.ingest.types import Dataset

ENCODER = "synthetic"
DEPTH = 1.0
N_LABELS = 14
DEFAULT_ROWS, FULL_ROWS = 40_000, 150_000
THROUGHPUT_CHUNKS = (256, 1024, 4096)
MB = 1e6


def dataset(rows: int) -> Dataset:
    """CheXpert-like (14 labels), rows in store order as ingest writes them: train, calib, test."""
    ds = make_dataset("scale", "multilabel", rows, N_LABELS, seed=0, split_share=(0.6, 0.15))
    order = np.argsort(ds.images["split"].map(SPLITS.index).to_numpy(), kind="stable")
    return dataclasses.replace(ds, images=ds.images.iloc[order].reset_index(drop=True), labels=ds.labels[order])


def _block(ds: Dataset, start: int, stop: int, dim: int, condition: int, weights: np.ndarray) -> np.ndarray:
    """Rows start:stop of one condition, deterministic per (condition, start)."""
    rng = np.random.default_rng([0, start])
    x = ds.labels[start:stop].astype(np.float32) @ weights
    x += rng.standard_normal((stop - start, dim), dtype=np.float32)
    if condition:
        x += (
            0.4
            * (1 + condition % 3)
            * np.random.default_rng([condition, start]).standard_normal(x.shape, dtype=np.float32)
        )
        x[ds.images["split"].to_numpy()[start:stop] != "test"] = np.nan
    return x.astype(np.float16)


def generate(
    store: FeatureStore, ds: Dataset, dim: int, chunk_rows: int, conditions: tuple[str, ...], encoder: str
) -> float:
    """Write one feature set block by block; returns seconds."""
    started = time.perf_counter()
    root = store.root(writable=True)
    if f"{ds.name}/image_ids" not in root:
        ids = ds.images["image_id"].to_numpy().astype(str)
        root.create_array(f"{ds.name}/image_ids", shape=ids.shape, dtype=str, chunks=(len(ids),))[:] = ids
    ref = FeatureSetRef(ds.name, encoder)
    group = root.require_group(ref.path)
    weights = np.random.default_rng(1).normal(0, 0.05, (N_LABELS, dim)).astype(np.float32)
    step = chunk_rows * max(1, 16_384 // chunk_rows)  # whole chunks per write, ~32 MB at dim 1024
    for condition in conditions:
        arr = group.create_array(
            f"{depth_key(DEPTH)}/{condition}",
            shape=(ds.n_images, dim),
            chunks=(chunk_rows, dim),
            dtype="float16",
            fill_value=np.nan,
            overwrite=True,
            compressors=checksummed_compressors(),  # as extraction: blosc zstd, then crc32c
        )
        index = CONDITIONS.index(condition)
        test = ds.images["split"].to_numpy() == "test"
        digests: list[int] = []  # the content manifest, as extraction writes it (features.integrity)
        for start in range(0, ds.n_images, step):
            stop = min(start + step, ds.n_images)
            if index and not test[start:stop].any():
                # as extraction: perturbed chunks without test rows are never written (NaN fill)
                fill = np.full((stop - start, dim), np.nan, dtype=np.float16)
                digests += [block_digest(fill[k : k + chunk_rows]) for k in range(0, stop - start, chunk_rows)]
                continue
            block = _block(ds, start, stop, dim, index, weights)
            arr[start:stop] = block
            digests += [block_digest(block[k : k + chunk_rows]) for k in range(0, stop - start, chunk_rows)]
        arr.attrs[MANIFEST_ATTR] = digests
    group.attrs.update(
        {
            "complete": True,
            "pretrained": False,
            "dim": dim,
            "regime": "frozen",
            "depths": [depth_key(DEPTH)],
            "chunk_rows": chunk_rows,
            "dtype": "float16",
            "image_digest": ds.image_digest(),
            "code_version": "benchmark",
        }
    )
    return time.perf_counter() - started


# -- measured phases (each in its own process) ---------------------------------------------------


def _rss_now() -> int:
    import psutil

    return int(psutil.Process().memory_info().rss)


def _peak() -> int:
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024  # Linux: KiB


def phase(name: str, url: str, rows: int, threads: int) -> dict:
    import torch

    from crsbench.probes.grid import GridContext, plan_fits, run_grid
    from crsbench.probes.reader import ReadCheck, check_and_standardise
    from crsbench.probes.tasks import eval_sets

    torch.set_num_threads(threads)
    ds, store = dataset(rows), FeatureStore(url)
    ref = FeatureSetRef(ds.name, ENCODER)
    baseline = _rss_now()
    started = time.perf_counter()
    out: dict = {}
    if name == "stream":
        checks = [ReadCheck(ref, DEPTH, CLEAN, ds.split_rows("train"), stats=True)]
        checks += [ReadCheck(ref, DEPTH, ev.store_condition, ev.rows) for ev in eval_sets(ds, ref, [])]
        check_and_standardise(store, checks)
        out["arrays_read"] = len(checks)
    else:
        fits = plan_fits([ds], [ENCODER], store, probes=("logreg",), fractions=(1.0,), seeds=(0,), depths=(DEPTH,))
        runs: list = []
        run_grid(fits, GridContext({ds.name: ds}, store, lambda r, p: runs.append(r)))
        clean = runs[0].set_index("condition")
        out.update(
            evaluations=int(sum(len(r) for r in runs)),
            auroc_clean=float(clean.loc["clean", "auroc"]),
            auroc_rician_s3=float(clean.loc["rician-s3", "auroc"]),
            fit_seconds=float(clean.loc["clean", "fit_seconds"]),
        )
    return {**out, "seconds": time.perf_counter() - started, "baseline_rss": baseline, "peak_rss": _peak()}


def _run_phase(name: str, url: str, rows: int, threads: int) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--phase", name, "--store", url, "--rows", str(rows), "--threads", str(threads)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        sys.exit(f"phase {name} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- throughput --------------------------------------------------------------------------------------


def _best(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def throughput(store: FeatureStore, ds: Dataset, encoder: str) -> dict[str, float]:
    """MB/s (of float16 feature bytes) of lazy vs raw zarr reads of one clean array; the lazy
    reads with the content-manifest check (the default) and without it, interleaved."""
    from crsbench.probes.reader import lazy_features

    ref = FeatureSetRef(ds.name, encoder)
    arr = store.array(ref, DEPTH, CLEAN)
    train = ds.split_rows("train")
    full_mb, train_mb = arr.nbytes / MB, arr.nbytes * len(train) / arr.shape[0] / MB

    def lazy(checked: bool, rows: np.ndarray | None = None):
        x = lazy_features(store, ref, DEPTH, CLEAN, checked=checked)
        return lambda: np.asarray((x if rows is None else x[rows]).compute(scheduler="threads"), dtype=np.float64)

    times: dict[str, list[float]] = {}
    for _ in range(5):  # interleaved, best of each: the machine may be shared
        for key, fn in (
            ("lazy_full", lazy(True)),
            ("unchecked_full", lazy(False)),
            ("raw_full", lambda: arr[:]),
            ("lazy_train_rows", lazy(True, train)),
            ("unchecked_train_rows", lazy(False, train)),
            ("raw_train_rows", lambda: arr.get_orthogonal_selection((train, slice(None)))),
        ):
            times.setdefault(key, []).append(_best(fn, repeats=1))
    out = {k: (full_mb if "full" in k else train_mb) / min(v) for k, v in times.items()}
    # The check alone, per chunk: decoding one chunk (what any read pays) vs its CRC-32C.
    from crsbench.features.integrity import block_digest

    rows = int(arr.chunks[0])
    decode = min(
        _best(lambda k=k: arr[k * rows : (k + 1) * rows], repeats=1) for k in range(min(20, arr.cdata_shape[0]))
    )
    block = np.asarray(arr[:rows])
    digest = _best(lambda: block_digest(block), repeats=20)
    return {**out, "decode_ms": 1e3 * decode, "digest_ms": 1e3 * digest}


# -- report ------------------------------------------------------------------------------------------


def _gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    parser.add_argument("--full", action="store_true", help=f"{FULL_ROWS:,} rows (paper scale)")
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--chunk-rows", type=int, default=1024, help="chunk height of the probed set")
    parser.add_argument("--store", default=None, help="fsspec URL (default: a temporary local folder)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--phase", choices=("stream", "probe"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    rows = FULL_ROWS if args.full else args.rows
    if args.phase:
        print(json.dumps(phase(args.phase, args.store, rows, args.threads)))
        return

    tmp = None
    if args.store is None:
        tmp = tempfile.mkdtemp(prefix="crsbench-scale-")
    url = args.store or str(Path(tmp) / "scale.zarr")
    try:
        report(url, rows, args)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def report(url: str, rows: int, args: argparse.Namespace) -> None:
    store, ds = FeatureStore(url), dataset(rows)
    array_bytes = rows * args.dim * 2
    cell_bytes = array_bytes * len(CONDITIONS)
    generate_cell(store, ds, url, args)
    ok = report_phases(url, ds, args, array_bytes, cell_bytes)
    report_throughput(store, ds, args.dim)
    if not ok:
        sys.exit("FAILED: a phase's peak memory was not well below the cell's arrays")
    print("memory bounds: OK (stream < 25% and probe < 75% of the cell's arrays above the import baseline)")


def generate_cell(store: FeatureStore, ds: Dataset, url: str, args: argparse.Namespace) -> None:
    """Write the probed cell (every condition) and say what it is and what it weighs."""
    rows = ds.n_images
    n_test = len(ds.split_rows("test"))
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    print(
        f"cell: {rows:,} images x {args.dim} float16 x {len(CONDITIONS)} conditions at one depth, "
        f"{n_test:,} test rows; store {url}"
    )
    seconds = generate(store, ds, args.dim, args.chunk_rows, CONDITIONS, ENCODER)
    array_bytes = rows * args.dim * 2
    cell_bytes = array_bytes * len(CONDITIONS)
    stored = _stored_bytes(url)
    print(
        f"generated in {seconds:.1f} s: one array {_gb(array_bytes)}, the cell's 16 arrays "
        f"{_gb(cell_bytes)} in memory ({_gb(stored) if stored else 'n/a'} stored, chunks of "
        f"{args.chunk_rows} rows = {args.chunk_rows * args.dim * 2 / MB:.1f} MB)"
    )


def report_phases(url: str, ds: Dataset, args: argparse.Namespace, array_bytes: int, cell_bytes: int) -> bool:
    """Run the stream and probe phases in fresh processes; whether both stayed within their memory bound."""
    design = len(ds.split_rows("train")) * args.dim * 8
    ok = True
    for name in ("stream", "probe"):
        r = _run_phase(name, url, ds.n_images, args.threads)
        grown = r["peak_rss"] - r["baseline_rss"]
        extra = (
            f"{r['arrays_read']} arrays"
            if name == "stream"
            else f"{r['evaluations']} evaluations, AUROC clean {r['auroc_clean']:.3f} / rician-s3 "
            f"{r['auroc_rician_s3']:.3f}, fit {r['fit_seconds']:.1f} s"
        )
        print(
            f"{name:>6}: {r['seconds']:6.1f} s, peak RSS {_gb(r['peak_rss'])} (after imports "
            f"{_gb(r['baseline_rss'])}, +{_gb(grown)} = {grown / cell_bytes:.1%} of the cell's arrays, "
            f"{grown / array_bytes:.2f}x one array); {extra}"
        )
        # The stream pass must stay chunk-bounded; the fit holds its float64 train matrix
        # (and the standardised copy) but never the cell.
        bound = 0.25 * cell_bytes if name == "stream" else 0.75 * cell_bytes
        ok &= r["peak_rss"] < bound + r["baseline_rss"]
    print(f"   (the fit's float64 training matrix alone is {_gb(design)})")
    return ok


def report_throughput(store: FeatureStore, ds: Dataset, dim: int) -> None:
    """Lazy vs raw read throughput and the manifest check's cost, one clean array per chunk height."""
    print("read throughput, MB/s of float16 features (best of 5, interleaved); lazy reads check every chunk")
    print("against the content manifest, 'unchecked' is the same read without it; cost = 1 - checked/unchecked:")
    print(
        f"  {'chunk rows':>10} {'chunk MB':>8} {'lazy full':>10} {'unchecked':>10} {'raw full':>9} "
        f"{'lazy train':>11} {'unchecked':>10} {'raw train':>10} {'check cost':>11}"
    )
    for chunk in THROUGHPUT_CHUNKS:
        encoder = f"{ENCODER}-c{chunk}"
        generate(store, ds, dim, chunk, (CLEAN,), encoder)
        t = throughput(store, ds, encoder)
        cost = 1 - t["lazy_train_rows"] / t["unchecked_train_rows"]
        print(
            f"  {chunk:>10} {chunk * dim * 2 / MB:>8.2f} {t['lazy_full']:>10.0f} {t['unchecked_full']:>10.0f} "
            f"{t['raw_full']:>9.0f} {t['lazy_train_rows']:>11.0f} {t['unchecked_train_rows']:>10.0f} "
            f"{t['raw_train_rows']:>10.0f} {cost:>10.1%}"
        )
        print(
            f"  {'':>10} per chunk: decode {t['decode_ms']:.2f} ms, manifest check {t['digest_ms']:.3f} ms "
            f"= {t['digest_ms'] / t['decode_ms']:.1%} of the chunk's read"
        )


def _stored_bytes(url: str) -> int:
    import fsspec

    fs, path = fsspec.core.url_to_fs(url)
    try:
        return int(fs.du(path))
    except (OSError, NotImplementedError):
        return 0


if __name__ == "__main__":
    main()
