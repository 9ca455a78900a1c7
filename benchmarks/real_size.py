"""Benchmark: ISIC 2019 at its real size, end to end through the real code path.

    .venv/bin/python benchmarks/real_size.py                 # 25,331 images; ~45 min on a quiet 2-core machine
    .venv/bin/python benchmarks/real_size.py --scale 0.02    # the same job at 2 % of the images: a smoke run

The suite generator writes ISIC 2019 alone at `--scale` x 25,331 images (`--image-size` 64 px);
it is ingested, tiny encoders (`--encoder`, default tiny-vit: 192 features at every depth, and
tiny-resnet18: 64-512, since the bootstrap ranks and needs two; one `--encoder` skips it) are
extracted (16 conditions x 4 depths), the whole declared probe grid runs (logreg x 4 depths, MLP,
k-NN; 5 fractions x 5 seeds), the parts are compacted, and the leaderboard and its bootstrap
(`--replicates`) are computed. Reported per stage: wall and CPU seconds (this process and its
children), then the peak RSS (this process; its children apart), the store and warehouse sizes,
and benchmarks/paper_scale.py's projection of the same probe grid, with the projection's error
against the measured probe stage (CPU: this process's, the grid's worker threads and the client's
writes; wall: the larger of CPU / cores and the longest chunk).

The projection is the cost model of paper_scale.py, timed on synthetic features at a sixteenth,
a quarter and a half of this job's training rows and at its narrowest and widest features, then
applied to the job's chunks as `probes.chunking` packs them (every seed of every fraction is
evaluated; an unseeded fit is shared, and k-NN searches at each evaluation). One input is taken
from the job's own features instead: the number of L-BFGS iterations of its logreg fits, counted
(`real_iterations`) on nested random subsets of 1/32, 1/8 and 1/2 of the training rows of every
encoder and depth, interpolated in log N and continued along the last measured rise to the full
set. The time per iteration, the fit's setup and everything else come from the timing model, so
no probe-stage timing enters the projection. Why: the synthetic features need 5-10x fewer
iterations (38-121 at N = 3.8k against 450-1,200 on tiny-vit and tiny-resnet18), which made the
model's logreg term ~7x too small; evaluation, charged per eval row from a 1,500-image cell
(a chunk's one read and the metrics' fixed cost per eval set spread over few rows), was ~20x too
large. The two errors of opposite sign netted to +18 % at a quarter of the size and +81 % at the
real size (docs/SCALING.md section 7).
Ends with one JSON line. Timings on a shared machine are noisy: compare CPU seconds, or ratios
measured in the same run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

REAL_IMAGES = 25_331  # ISIC 2019 training images
SUITE_BASE = 202  # ISIC images the suite generator writes at scale 1.0 (ingest.suite.ISIC_BASE)


def folder_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


class Stages:
    """Wall and CPU seconds (self + reaped children) of each named stage."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        t0, c0 = time.perf_counter(), os.times()
        yield
        t1, c1 = time.perf_counter(), os.times()
        cpu = (c1.user + c1.system + c1.children_user + c1.children_system) - (
            c0.user + c0.system + c0.children_user + c0.children_system
        )
        self.rows.append({"stage": name, "wall_s": round(t1 - t0, 2), "cpu_s": round(cpu, 2)})
        print(f"  {name:<12} wall {t1 - t0:9.1f} s   CPU {cpu:9.1f} s", flush=True)

    def get(self, name: str) -> dict[str, Any]:
        return next(r for r in self.rows if r["stage"] == name)


# The grid calls a k-NN predictor on a whole block of stacked test rows (16 x the test split, up
# to 32,768): timed on a few hundred queries, the per-query cost came out 1.5-2x the grid's.
KNN_QUERIES = 4096
# Nested random subsets of the training rows whose L-BFGS iterations are measured; the grid's
# full-fraction fits lie beyond the last, reached by its trend (paper_scale_model.IterativeCost).
ITERATION_FRACTIONS = (1 / 32, 1 / 8, 1 / 2)


def real_iterations(bench: Any, dataset: str, encoders: list[str]) -> list[dict[int, list[tuple[int, int, float]]]]:
    """Per encoder and depth index: (N, D, L-BFGS iterations) of logreg fits on the job's own
    stored features (train rows standardised as the grid does) on nested random subsets of
    ITERATION_FRACTIONS of the training rows, where the grid's solver is L-BFGS
    (`probes.newton.newton_pays` sends small problems to exact Newton, which the model times as
    L-BFGS). Only the counts are used: the time per iteration comes from the
    timing model, so the probe stage's own timings never enter the projection."""
    import numpy as np
    import torch

    from crsbench.core import CLEAN, DEPTHS
    from crsbench.features.store import FeatureSetRef, FeatureStore
    from crsbench.probes.lbfgs import fit_logreg
    from crsbench.probes.newton import newton_pays
    from crsbench.probes.reader import read_rows
    from crsbench.warehouse.connection import Warehouse
    from crsbench.warehouse.datasets import read_dataset

    with Warehouse.open(bench.db, read_only=True) as wh:
        ds = read_dataset(wh, dataset)
    store = FeatureStore(bench.store)
    train = ds.split_rows("train")
    k = len(ds.label_names)
    out = []
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for encoder in encoders:
            per_depth: dict[int, list[tuple[int, int, float]]] = {}
            for i, depth in enumerate(DEPTHS):
                x = read_rows(store, FeatureSetRef(dataset, encoder), depth, CLEAN, train)
                std = x.std(0)
                x = (x - x.mean(0)) / np.where(std > 0, std, 1.0)
                points = []
                order = np.random.default_rng(0).permutation(len(train))
                for fraction in ITERATION_FRACTIONS:
                    pick = np.sort(order[: max(k, round(fraction * len(train)))])
                    xt = torch.as_tensor(x[pick])
                    target = torch.nn.functional.one_hot(torch.as_tensor(ds.labels[train[pick]]), k)
                    if newton_pays(len(pick), x.shape[1], k, 1):
                        continue  # the grid solves this size by exact Newton: no L-BFGS count to take
                    points.append((len(pick), x.shape[1], float(fit_logreg(xt, target, True).n_iter)))
                if points:  # else the timing model's own counts
                    per_depth[i] = points
            out.append(per_depth)
    finally:
        torch.set_num_threads(previous)
    return out


def timing_models(n_train: int, encoders: list[tuple[int, ...]], quick: bool) -> tuple[dict, Any, Any]:
    """paper_scale.py's timings (one thread, CPU seconds, synthetic features) at a sixteenth, a
    quarter and a half of n_train rows and the job's narrowest and widest features: the fitted
    models per kind, the evaluation costs and the client's write cost."""
    import paper_scale as ps
    import paper_scale_measure as measure
    import torch

    from crsbench.ingest.types import Task

    every = sorted({d for widths in encoders for d in widths})
    dims = [every[0], every[-1]] if len(every) > 1 else [every[0], 2 * every[0]]  # two widths fix the D exponent
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        # The grid's fits run from 1 % to all of n_train: a sixteenth pins the small fits (k-NN's
        # per-query cost flattens there), a quarter and a half the large ones.
        sizes = tuple(sorted({max(100, n_train // 16), max(200, n_train // 4), max(400, n_train // 2)}))
        points = ps.Points()
        for d in dims:
            # the least of 2 repeats (less noise); k-NN timed on KNN_QUERIES queries per call
            measured, _ = ps.measure_width(d, sizes[-1], sizes, KNN_QUERIES, 2, None, KNN_QUERIES)
            for n, t in measured:
                points.add(n, d, t)
        models = points.models()
        evals = measure.eval_costs(quick)
        client = measure.client_cost(quick, Task.MULTICLASS, 8)
    finally:
        torch.set_num_threads(previous)
    return models, evals, client


def projection(
    n_train: int,
    n_calib: int,
    n_test: int,
    encoders: list[tuple[int, ...]],
    quick: bool,
    iterations: list[dict[int, list[tuple[int, int, float]]]] | None = None,
) -> dict[str, Any]:
    """benchmarks/paper_scale.py's cost model for this job's probe grid (`timing_models`),
    applied to the chunks of every encoder (`encoders`: its widths at the four depths).
    `iterations` (from `real_iterations`, per encoder and depth): the logreg fits' L-BFGS
    iteration counts measured on the job's own features, which replace the synthetic features'
    counts (5-10x fewer). CPU includes the client's writes (this process's work); wall is the
    larger of CPU / cores and the longest chunk."""
    import paper_scale_support as support
    from paper_scale_model import IterativeCost

    from crsbench.probes.chunking import DEFAULT_BATCH_SIZE

    models, evals, client = timing_models(n_train, encoders, quick)
    job = support.PaperDataset("ISIC 2019", n_train, n_calib, n_test, 0, "mc", 8, False)
    logreg = models["logreg_mc"]
    chunks = []
    by_kind: dict[str, float] = {}
    for e, widths in enumerate(encoders):
        per_depth = None
        if iterations is not None and isinstance(logreg, IterativeCost):
            per_depth = {i: logreg.with_iterations(points, extend=True) for i, points in iterations[e].items()}
        for c in support.encoder_chunks(models, evals, widths, [job], DEFAULT_BATCH_SIZE, per_depth):
            chunks.append(c)
            label = f"{e}:{c[0].split(' ', 2)[-1]}"  # encoder index, probe and width
            by_kind[label] = by_kind.get(label, 0.0) + c[1]
    compute = sum(c[1] for c in chunks)
    rows = sum(c[3] for c in chunks)
    cores = os.cpu_count() or 1
    cpu = compute + client(len(chunks), rows)
    return {
        "cpu_s": cpu,
        "client_s": client(len(chunks), rows),
        "wall_s": max(cpu / cores, max(c[1] for c in chunks)),
        "chunks": len(chunks),
        "by_kind": by_kind,
    }


def write_isic(out: Path, scale: float, image_size: int) -> Path:
    """ISIC 2019 alone from the suite generator, at `scale` x 25,331 images."""
    from crsbench.ingest import suite

    folder, build = suite._BUILDERS["isic2019"]
    target = out / folder
    build(target, scale * REAL_IMAGES / SUITE_BASE, image_size, 0, lambda *_: None)
    return target


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the real 25,331 images (0.02: a smoke run)")
    ap.add_argument("--image-size", type=int, default=64)
    ap.add_argument(
        "--encoder",
        action="append",
        help="repeatable; default tiny-vit and tiny-resnet18 (the bootstrap ranks, so it needs two)",
    )
    ap.add_argument("--replicates", type=int, default=200, help="bootstrap replicates")
    ap.add_argument("--out", type=Path, default=None, help="keep the warehouse here (default: a temporary folder)")
    ap.add_argument("--no-projection", action="store_true", help="skip measuring the paper_scale projection")
    return ap.parse_args()


@dataclasses.dataclass
class Job:
    """What the end-to-end run produced and measured, read before its folder may go."""

    images: int
    splits: dict[str, int]  # images per split
    summary: Any  # the probe grid's summary
    leaderboard_rows: int
    bootstrap: list[str] | None  # the bootstrap's table names (None: skipped, one encoder)
    peak_self_gb: float
    peak_children_gb: float
    store_gb: float
    warehouse_gb: float
    widths: list[tuple[int, ...]]  # per encoder, its feature width at each depth
    iterations: list[dict[int, list[tuple[int, int, float]]]]  # `real_iterations` ([] without a projection)


def run_job(args: argparse.Namespace, encoders: list[str], root: Path, stages: Stages) -> Job:
    """Generate, ingest, extract, probe, compact, leaderboard and bootstrap, each a timed stage."""
    import crsbench
    from crsbench.bench import ExtractConfig, ExtractOptions, ProbeConfig

    bench = crsbench.Bench(root / "crsbench.duckdb")
    with stages.stage("generate"):
        folder = write_isic(root / "suite", args.scale, args.image_size)
    with stages.stage("ingest"):
        ds = bench.ingest("isic2019", folder, "isic2019")
    splits = ds.images["split"].value_counts().to_dict()
    print(f"  {ds.n_images:,} images ({splits}) at {args.image_size} px", flush=True)
    with stages.stage("extract"):
        bench.extract(encoders, ["isic2019"], ExtractConfig(ExtractOptions()))
    with stages.stage("probe"):
        summary = bench.probe(encoders, ["isic2019"], ProbeConfig(compact=False))
    with stages.stage("compact"):
        bench.compact()
    with stages.stage("leaderboard"):
        board = bench.leaderboard()
    boot = None
    if len(encoders) > 1:
        with stages.stage("bootstrap"):
            boot = bench.analyze("bootstrap", replicates=args.replicates)
    peak_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # kB -> GB
    peak_children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1e6
    parts = root / "crsbench.parts"
    wh_gb = (folder_bytes(root / "crsbench.duckdb") + (folder_bytes(parts) if parts.exists() else 0)) / 1e9
    return Job(
        images=ds.n_images,
        splits=splits,
        summary=summary,
        leaderboard_rows=len(board.board),
        bootstrap=sorted(boot.tables) if boot else None,
        peak_self_gb=peak_self,
        peak_children_gb=peak_children,
        store_gb=folder_bytes(Path(bench.store)) / 1e9,
        warehouse_gb=wh_gb,
        widths=feature_widths(bench, encoders),
        # the projection's logreg iteration counts, from this job's features (the folder may be temporary)
        iterations=[] if args.no_projection else real_iterations(bench, "isic2019", encoders),
    )


def feature_widths(bench: Any, encoders: list[str]) -> list[tuple[int, ...]]:
    """Per encoder, the widths of its stored features at each depth."""
    from crsbench.features.store import FeatureSetRef, FeatureStore

    widths = []
    for encoder in encoders:
        made = FeatureStore(bench.store).attrs(FeatureSetRef("isic2019", encoder))
        widths.append(tuple(int(made["dims"][k]) for k in sorted(made["dims"])))
    return widths


def report_job(args: argparse.Namespace, job: Job, stages: Stages) -> dict[str, Any]:
    """Print the run's outcome, memory and sizes; the JSON result without the projection."""
    print(f"  probe grid: {job.summary}")
    print(
        f"  leaderboard rows {job.leaderboard_rows}; bootstrap: "
        f"{job.bootstrap if job.bootstrap is not None else 'skipped (one encoder)'}"
    )
    print(
        f"peak RSS: this process {job.peak_self_gb:.2f} GB, largest child {job.peak_children_gb:.2f} GB "
        "(target <= 8 GB)"
    )
    print(f"sizes: store {job.store_gb:.3f} GB, warehouse (file + parts) {job.warehouse_gb:.3f} GB")
    return {
        "scale": args.scale,
        "images": job.images,
        "stages": stages.rows,
        "peak_rss_gb": round(job.peak_self_gb, 3),
        "peak_child_rss_gb": round(job.peak_children_gb, 3),
        "store_gb": round(job.store_gb, 4),
        "warehouse_gb": round(job.warehouse_gb, 4),
    }


def report_projection(args: argparse.Namespace, encoders: list[str], job: Job, stages: Stages) -> dict[str, Any]:
    """The paper_scale projection of the probe grid against the measured probe stage; its JSON part."""
    n = {k: int(job.splits.get(k, 0)) for k in ("train", "calib", "test")}
    t0 = time.perf_counter()
    for encoder, per_depth in zip(encoders, job.iterations, strict=True):
        print(
            f"  L-BFGS iterations on {encoder}'s features (at 1/32, 1/8, 1/2 of the training rows): "
            + "; ".join(f"depth {i}: " + "/".join(f"{it:.0f}" for *_, it in pts) for i, pts in per_depth.items())
        )
    proj = projection(n["train"], n["calib"], n["test"], job.widths, args.scale < 0.5, job.iterations)
    for label, seconds in proj.pop("by_kind").items():
        e, kind = label.split(":", 1)
        print(f"  projected {encoders[int(e)]} {kind}: {seconds:.1f} s CPU")
    probe = stages.get("probe")
    err_cpu = 100 * (proj["cpu_s"] / probe["cpu_s"] - 1)
    err_wall = 100 * (proj["wall_s"] / probe["wall_s"] - 1)
    print(
        f"paper_scale projection of the probe grid ({proj['chunks']} chunks, fitted at N <= {n['train'] // 2} "
        f"in {time.perf_counter() - t0:.0f} s): CPU {proj['cpu_s']:.1f} s vs measured {probe['cpu_s']:.1f} s "
        f"({err_cpu:+.1f} %); wall on {os.cpu_count()} cores {proj['wall_s']:.1f} s vs measured "
        f"{probe['wall_s']:.1f} s ({err_wall:+.1f} %) -> {'OK' if abs(err_wall) <= 25 else 'outside'} 25 %"
    )
    return {
        "projection": {k: round(v, 2) for k, v in proj.items()},
        "projection_error_pct": {"cpu": round(err_cpu, 1), "wall": round(err_wall, 1)},
    }


def main() -> int:
    args = parse_args()
    encoders = args.encoder or ["tiny-vit", "tiny-resnet18"]
    print(
        f"command: python benchmarks/real_size.py --scale {args.scale:g} --image-size {args.image_size} "
        f"{' '.join('--encoder ' + e for e in encoders)} --replicates {args.replicates}"
    )
    print(f"load average at start: {' '.join(f'{v:.1f}' for v in os.getloadavg())} on {os.cpu_count()} cores")
    stages = Stages()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.out or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        job = run_job(args, encoders, root, stages)
    result = report_job(args, job, stages)
    if not args.no_projection:
        result.update(report_projection(args, encoders, job, stages))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
