"""Measure what float16 feature storage does to the demo's numbers, against float32 storage.

The demo chain (embedded suite, tiny random-init encoders) is extracted once with
`--dtype float32`; a second store holds the same arrays cast to float16, which is what
float16 storage writes. The primary-probe grid the CRS reads (logreg at full depth, every
fraction x seed, every condition and the shift target) is fitted on each store into its own
warehouse, a panel of every encoder is frozen in both, and the run tables are compared run by
run (same run ids): max and mean |delta AUROC| over runs, and delta CRS per encoder.

    .venv/bin/python benchmarks/fp16_effect.py [--out DIR] [--scale 1.0]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import zarr

from crsbench.bench import Bench, ExtractConfig, ExtractOptions, ProbeConfig
from crsbench.features.lookup import tiny_encoder_ids
from crsbench.pipeline.ingest import SUITE_DATASETS


def cast_store(source: Path, target: Path) -> int:
    """Copy a feature store, float32 arrays cast to float16 (chunks and attrs kept)."""
    src = zarr.open_group(str(source), mode="r", zarr_format=3)
    dst = zarr.open_group(str(target), mode="a", zarr_format=3)
    n = 0

    def walk(group: zarr.Group, path: str) -> None:
        nonlocal n
        for name, member in group.members():
            sub = f"{path}/{name}" if path else name
            if isinstance(member, zarr.Group):
                dst.require_group(sub).attrs.update(dict(member.attrs))
                walk(member, sub)
                continue
            floating = member.dtype == np.float32
            arr = dst.create_array(
                sub,
                shape=member.shape,
                chunks=member.chunks,
                dtype="float16" if floating else member.dtype,
                fill_value=np.nan if floating else None,
                overwrite=True,
            )
            arr[...] = member[...].astype(np.float16) if floating else member[...]
            arr.attrs.update(dict(member.attrs))
            n += int(floating)

    walk(src, "")
    return n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="working folder (default: a temporary one)")
    parser.add_argument("--scale", type=float, default=1.0, help="suite size factor (demo: 1.0)")
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="crs-fp16-"))
    out.mkdir(parents=True, exist_ok=True)
    encoders = tiny_encoder_ids()
    datasets = [name for _, name in SUITE_DATASETS]
    started = time.perf_counter()
    benches = {
        "float32": Bench(out / "w32.duckdb", store=str(out / "f32.zarr")),
        "float16": Bench(out / "w16.duckdb", store=str(out / "f16.zarr")),
    }
    for bench in benches.values():
        bench.ingest_suite(out / "suite", args.scale)
    benches["float32"].extract(encoders, datasets, ExtractConfig(ExtractOptions(dtype="float32")))
    cast = cast_store(out / "f32.zarr", out / "f16.zarr")
    benches["float16"].feature_sets(sync=True)
    grid = ProbeConfig(probes=("logreg",), depths=(1.0,))
    for bench in benches.values():
        bench.probe(encoders, (), grid)
        bench.freeze_panel("fp", encoders)
    runs = {k: b.sql("select run_id, encoder_id, auroc from runs") for k, b in benches.items()}
    both = runs["float32"].merge(runs["float16"], on=["run_id", "encoder_id"], suffixes=("_32", "_16"))
    delta = (both["auroc_16"] - both["auroc_32"]).abs()
    crs = {
        k: b.sql("select encoder_id, crs from crs_encoder where panel = 'fp' and in_panel").set_index("encoder_id")[
            "crs"
        ]
        for k, b in benches.items()
    }
    d_crs = (crs["float16"] - crs["float32"]).sort_index()
    print(
        f"demo grid (scale {args.scale}): {len(encoders)} encoders x {len(datasets)} datasets, "
        f"{cast} arrays cast float32 -> float16, {len(both):,} logreg runs at full depth compared "
        f"({len(runs['float32']):,} / {len(runs['float16']):,}); {time.perf_counter() - started:.0f} s"
    )
    print(
        f"|delta AUROC| per run: max {delta.max():.2e}, mean {delta.mean():.2e}, "
        f"runs with |delta| > 1e-3: {(delta > 1e-3).sum()} of {len(delta)}"
    )
    print(
        "delta CRS per encoder (float16 - float32): "
        + ", ".join(f"{e} {v:+.4f}" for e, v in d_crs.items())
        + f"; max |delta CRS| {d_crs.abs().max():.4f}"
    )
    print(f"command: .venv/bin/python benchmarks/fp16_effect.py --scale {args.scale}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
