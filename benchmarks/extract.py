"""Benchmark: one-pass extraction vs a naive loop, and vs the pure-forward ceiling (issue 3).

    .venv/bin/python benchmarks/extract.py                       # CPU, tiny random-init ViT
    .venv/bin/python benchmarks/extract.py --device cuda --encoder vit-b16 --random-init \
        --compute-dtype bfloat16 --batch-size 512 --n-test 2048 --image-size 256   # GPU

Measured in one run on the same synthetic test images (all rows in the test split, so
each image yields 16 conditions x 4 depths):
  one-pass   crsbench.features.extract into an in-memory Zarr store;
  naive      per condition: decode the file again, perturb with the CPU reference,
             transform, then one full forward per depth (4 passes);
  ceiling    the model's forward alone on ready-made input tensors of the same batch size
             and dtype, for the same number of forwards (16 per test image): the faster of
             one forward on all the torch threads and (CPU) one one-thread forward per
             thread in parallel, the way extraction runs them.
The one-pass run is repeated without the crc32c codec and the content manifest (same run,
interleaved) to give their cost, with the per-chunk encode, codec and digest times.
It also measures the effect of float16 storage on a downstream AUROC (logistic regression
on the clean 100 % features of a two-class toy set).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import psutil
import torch
from PIL import Image

from crsbench.core import CONDITIONS, DEPTHS
from crsbench.features import EncoderEntry, FeatureSetRef, FeatureStore, extract, extraction_sets, get_encoder
from crsbench.features.hooks import DepthTap
from crsbench.features.loaders import build_model
from crsbench.features.perturbations import parse_condition, perturb
from crsbench.features.transforms import decode_image, model_input
from crsbench.ingest.types import Dataset, Task

sys.path.insert(0, str(Path(__file__).parent))
from extract_checksums import checksum_costs


def make_dataset(folder: Path, n: int, size: int, splits: list[str], seed: int = 0) -> Dataset:
    """Two-class toy images (class 1 carries a bright blurred disc) written as PNG files."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size] / size
    rows, labels = [], []
    for i in range(n):
        label = i % 2
        img = 90 + 40 * np.sin(xx * rng.uniform(4, 9)) + rng.normal(0, 12, (size, size))
        if label:
            cx, cy = rng.uniform(0.3, 0.7, 2)
            img += 70 * np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / 0.01)
        rgb = np.clip(np.stack([img, img * 0.9, img * 0.8], axis=2), 0, 255).astype(np.uint8)
        path = folder / f"img{i:05d}.png"
        Image.fromarray(rgb).save(path)
        rows.append(
            {
                "image_id": f"img{i:05d}",
                "rel_path": path.name,
                "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                "group_id": str(i),
                "split": splits[i % len(splits)],
            }
        )
        labels.append(label)
    return Dataset(
        name=folder.name,
        adapter="manifest",
        root=folder,
        task=Task.MULTICLASS,
        label_names=["a", "b"],
        images=pd.DataFrame(rows),
        labels=np.array(labels),
        fractions=pd.DataFrame(columns=["seed", "fraction", "image_id"]),
    )


def process_cpu() -> float:
    """CPU seconds of this process and its live children (extraction's pixel workers)."""
    me = psutil.Process()
    total = 0.0
    for proc in [me, *me.children(recursive=True)]:
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def naive(ds: Dataset, entry, model, device, dtype, batch_size: int, n: int) -> float:
    """Seconds for n test images the naive way (decode per condition, CPU perturb, 4 passes)."""
    tap = DepthTap(model, entry)
    ids, paths = ds.images.image_id.tolist()[:n], ds.images.rel_path.tolist()[:n]
    start = time.perf_counter()
    for cond in CONDITIONS:
        parsed = parse_condition(cond)
        for b in range(0, n, batch_size):
            imgs = []
            for image_id, rel in zip(ids[b : b + batch_size], paths[b : b + batch_size], strict=True):
                img = decode_image(ds.root, rel)
                imgs.append(img if parsed is None else perturb(img, image_id, *parsed))
            x = model_input(torch.from_numpy(np.stack(imgs)).to(device), entry, dtype)
            for _ in DEPTHS:  # one full forward per depth, keeping one of them each time
                tap(x)
    sync(device)
    tap.close()
    return time.perf_counter() - start


def pure_forward(model, entry, device, dtype, batch_size: int, n_forwards: int) -> float:
    x = torch.randn(batch_size, 3, entry.input_size, entry.input_size, device=device).to(dtype)
    with torch.no_grad():
        model(x)
        sync(device)
        start = time.perf_counter()
        done = 0
        while done < n_forwards:
            model(x[: min(batch_size, n_forwards - done)])
            done += batch_size
        sync(device)
    return time.perf_counter() - start


def pure_forward_streams(model, entry, device, dtype, batch_size: int, n_forwards: int, streams: int) -> float:
    """The same forwards split over `streams` threads of one torch thread each (how CPU
    extraction runs them): on a small model this beats one forward on `streams` threads."""
    if device.type != "cpu" or streams < 2:
        return float("inf")
    x = torch.randn(batch_size, 3, entry.input_size, entry.input_size, device=device).to(dtype)
    share = [n_forwards // streams + (i < n_forwards % streams) for i in range(streams)]

    def run(n: int) -> None:
        with torch.no_grad():
            done = 0
            while done < n:
                model(x[: min(batch_size, n - done)])
                done += batch_size

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with ThreadPoolExecutor(streams) as pool:
            list(pool.map(run, [batch_size] * streams))  # warm each thread
            start = time.perf_counter()
            list(pool.map(run, share))
            return time.perf_counter() - start
    finally:
        torch.set_num_threads(previous)


def standalone_costs(ds: Dataset, entry, model, dtype, batch_size: int, n: int) -> dict[str, float]:
    """CPU ms per test image of each stage run alone on one thread (thread CPU time)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    tap = DepthTap(model, entry)
    ids, paths = ds.images.image_id.tolist()[:n], ds.images.rel_path.tolist()[:n]
    costs = dict.fromkeys(["decode", "perturbations", "model input", "forward", "depth pooling"], 0.0)

    def timed(stage: str, fn, *args):
        t0 = time.thread_time()
        out = fn(*args)
        costs[stage] += time.thread_time() - t0
        return out

    try:
        images = [timed("decode", decode_image, ds.root, rel) for rel in paths]
        batch = torch.from_numpy(np.stack(images[:batch_size]))
        for cond in CONDITIONS:
            parsed = parse_condition(cond)
            if parsed is not None:
                for img, image_id in zip(images, ids, strict=True):
                    timed("perturbations", perturb, img, image_id, *parsed)
            for b in range(0, n, batch_size):
                x = timed("model input", model_input, batch[: min(batch_size, n - b)], entry, dtype)
                with torch.no_grad():
                    timed("forward", model, x)
                timed("depth pooling", tap, x)
    finally:
        tap.close()
        torch.set_num_threads(previous)
    costs["depth pooling"] -= costs["forward"]  # the tap runs the forward too
    return {k: 1e3 * v / n for k, v in costs.items()}


def fp16_auroc_effect(entry, model, device: str, folder: Path, size: int, n: int) -> tuple[float, float]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.preprocessing import StandardScaler

    folder.mkdir(parents=True, exist_ok=True)
    ds = make_dataset(folder, n, size, ["train", "train", "test"], seed=1)
    scores = []
    for dtype in ("float32", "float16"):
        url = f"memory://auroc-{uuid.uuid4().hex}"
        extract(ds, entry, url, model=model, device=device, dtype=dtype, conditions=("clean",))
        x = FeatureStore(url).array(FeatureSetRef(ds.name, entry.id), 1.0, "clean")[:].astype(np.float64)
        tr, te = ds.split_rows("train"), ds.split_rows("test")
        scaler = StandardScaler().fit(x[tr])
        clf = LogisticRegression(C=1.0, max_iter=2000).fit(scaler.transform(x[tr]), ds.labels[tr])
        scores.append(roc_auc_score(ds.labels[te], clf.predict_proba(scaler.transform(x[te]))[:, 1]))
    return scores[0], scores[1]


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--encoder", default="tiny-vit")
    ap.add_argument(
        "--random-init",
        action="store_true",
        help="build a pretrained entry's architecture with seeded random weights (timm entries)",
    )
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--compute-dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument(
        "--n-test",
        type=int,
        default=512,
        help="test images for one-pass and ceiling (512: two chunks, so the pipeline and the per-set fixed cost "
        "of creating 65 arrays are as in a real job of thousands of images)",
    )
    ap.add_argument("--n-naive", type=int, default=32, help="test images for the (slow) naive loop")
    ap.add_argument("--image-size", type=int, default=128, help="side of the stored images")
    ap.add_argument("--chunk-rows", type=int, default=256)
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: leave as is)")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved repeats; the best of each is kept")
    ap.add_argument("--auroc-images", type=int, default=300, help="0 skips the float16 AUROC check")
    return ap.parse_args()


@dataclasses.dataclass
class Job:
    """What every measured path shares: the options, the encoder and its model on the device."""

    args: argparse.Namespace
    entry: EncoderEntry
    model: torch.nn.Module
    device: torch.device
    dtype: torch.dtype
    streams: int  # extraction's forward streams on a CPU (one torch thread each)

    @classmethod
    def set_up(cls, args: argparse.Namespace) -> Job:
        if args.threads:
            torch.set_num_threads(args.threads)
        streams = torch.get_num_threads()
        entry = get_encoder(args.encoder)
        if args.random_init:
            entry = dataclasses.replace(entry, pretrained=False)
        device = torch.device(args.device)
        dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[args.compute_dtype]
        model = build_model(entry).to(device).to(dtype).eval()
        return cls(args, entry, model, device, dtype, streams)

    def extract(self, ds: Dataset, **options: Any) -> None:
        """`crsbench.features.extract` into a fresh in-memory store with this job's options."""
        a = self.args
        extract(
            ds,
            self.entry,
            f"memory://{options.pop('prefix', 'bench')}-{uuid.uuid4().hex}",
            model=self.model,
            device=a.device,
            batch_size=a.batch_size,
            compute_dtype=a.compute_dtype,
            chunk_rows=a.chunk_rows,
            **options,
        )

    def one_pass(self, ds: Dataset, pixel_processes: bool = True, checksums: bool = True) -> float:
        """Seconds of one whole extraction (optionally without pixel processes or checksums)."""
        t0 = time.perf_counter()
        extraction_sets.CHECKSUMS = checksums
        try:
            self.extract(ds, threads=self.streams, pixel_processes=pixel_processes)
            sync(self.device)
        finally:
            extraction_sets.CHECKSUMS = True
        return time.perf_counter() - t0


@dataclasses.dataclass
class Times:
    """Seconds of each path per repeat (the best is kept), and the CPU of each one-pass run."""

    one_pass: list[float] = dataclasses.field(default_factory=list)
    cpu_one_pass: list[float] = dataclasses.field(default_factory=list)
    unchecked: list[float] = dataclasses.field(default_factory=list)  # no crc32c codec, no manifest
    threads: list[float] = dataclasses.field(default_factory=list)  # pixel work in threads
    forward: list[float] = dataclasses.field(default_factory=list)  # intra-op threads
    streams: list[float] = dataclasses.field(default_factory=list)  # 1-thread streams
    naive: list[float] = dataclasses.field(default_factory=list)

    def repeat(self, job: Job, ds: Dataset, n_naive: int) -> None:
        """One interleaved repeat of every path."""
        device, n_fw, batch = job.device, job.args.n_test * len(CONDITIONS), job.args.batch_size
        sync(device)
        cpu0 = process_cpu()
        self.one_pass.append(job.one_pass(ds))
        self.cpu_one_pass.append(process_cpu() - cpu0)
        self.unchecked.append(job.one_pass(ds, checksums=False))
        if device.type == "cpu" and job.streams > 1:
            self.threads.append(job.one_pass(ds, pixel_processes=False))
        self.forward.append(pure_forward(job.model, job.entry, device, job.dtype, batch, n_fw))
        self.streams.append(pure_forward_streams(job.model, job.entry, device, job.dtype, batch, n_fw, job.streams))
        self.naive.append(naive(ds, job.entry, job.model, device, job.dtype, batch, n_naive))


@dataclasses.dataclass
class Result:
    """The best time of each path, and the measurements beside them."""

    times: Times
    n_naive: int
    cpu_per_image: float  # CPU ms per test image of the fastest one-pass run
    one_pass: float
    naive: float
    intra: float
    streams: float
    ceiling: float  # the faster way to run the forwards alone
    costs: dict[str, float] | None  # CPU ms per test image of each stage alone (CPU only)
    auroc: tuple[float, float] | None  # float32 and float16 storage


def measure(job: Job) -> Result:
    args = job.args
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "bench"
        folder.mkdir()
        ds = make_dataset(folder, args.n_test, args.image_size, ["test"])
        job.extract(ds, prefix="warm", conditions=("clean",))  # warm-up (allocator, kernels, thread pools)
        n_naive = min(args.n_naive, args.n_test)
        times = Times()
        # Interleaved repeats, best of each: the machine may be shared, so take the least-disturbed run.
        for _ in range(args.repeats):
            times.repeat(job, ds, n_naive)
        costs = (
            standalone_costs(
                ds, job.entry, job.model, job.dtype, args.batch_size, min(args.n_test, 2 * args.batch_size)
            )
            if job.device.type == "cpu"
            else None
        )
        auroc = (
            fp16_auroc_effect(
                job.entry, job.model, args.device, Path(tmp) / "auroc", args.image_size, args.auroc_images
            )
            if args.auroc_images
            else None
        )
    intra, streams = min(times.forward), min(times.streams)
    return Result(
        times,
        n_naive,
        cpu_per_image=1e3 * times.cpu_one_pass[int(np.argmin(times.one_pass))] / args.n_test,
        one_pass=min(times.one_pass),
        naive=min(times.naive),
        intra=intra,
        streams=streams,
        ceiling=min(intra, streams),
        costs=costs,
        auroc=auroc,
    )


def report_rates(job: Job, r: Result) -> None:
    """The table of throughputs per path and the two targets."""
    args = job.args
    rate_one = args.n_test / r.one_pass
    rate_naive = r.n_naive / r.naive
    rate_ceiling = args.n_test / r.ceiling
    print(
        f"encoder {job.entry.id} (pretrained={job.entry.pretrained}) input {job.entry.input_size}px, "
        f"images {args.image_size}px, device {args.device}, {args.compute_dtype}, batch {args.batch_size}, "
        f"torch threads {torch.get_num_threads()}"
    )
    print(f"{'path':<34}{'test images/s':>15}{'forwards/s':>13}")
    print(f"{'one-pass extraction (16 cond x 4 depths)':<34}{rate_one:>15.1f}{rate_one * 16:>13.1f}")
    print(f"{'naive loop':<34}{rate_naive:>15.1f}{rate_naive * 64:>13.1f}")
    rate_intra = args.n_test / r.intra
    print(f"{'pure forward, intra-op threads':<34}{rate_intra:>15.1f}{rate_intra * 16:>13.1f}")
    if r.streams != float("inf"):
        rate_streams = args.n_test / r.streams
        label = f"pure forward, {job.streams} x 1-thread streams"
        print(f"{label:<34}{rate_streams:>15.1f}{rate_streams * 16:>13.1f}")
    print(f"{'ceiling (the faster of the two)':<34}{rate_ceiling:>15.1f}{rate_ceiling * 16:>13.1f}")
    # On a CPU the forward dominates: one forward per condition instead of one per depth
    # bounds the gain over the naive loop at 4x; the target is 90 % of that bound.
    print(
        f"one-pass / naive   = {rate_one / rate_naive:.2f}x  (target >= 3.6x, 90 % of the 4x bound; "
        f"{'met' if rate_one / rate_naive >= 3.6 else 'not met'})"
    )
    print(
        f"one-pass / ceiling = {100 * rate_one / rate_ceiling:.0f} %  (target >= 80 %; "
        f"{'met' if rate_one / rate_ceiling >= 0.8 else 'not met'})"
    )


def report_costs(job: Job, r: Result) -> None:
    """What checksums, pixel processes and contention cost, and the float16 AUROC effect."""
    args, entry = job.args, job.entry
    rate_one = args.n_test / r.one_pass
    unchecked = min(r.times.unchecked)
    codec = checksum_costs(args.chunk_rows, entry.input_size)
    print(
        f"checksums (crc32c codec + content manifest): one-pass {rate_one:.1f} vs {args.n_test / unchecked:.1f} "
        f"test images/s without them = {100 * (r.one_pass / unchecked - 1):+.1f} % time; per stored chunk "
        f"({codec['mb']:.2f} MB float16): blosc encode {codec['blosc_ms']:.2f} ms, crc32c codec "
        f"+{codec['crc_codec_ms']:.3f} ms, manifest digest {codec['digest_ms']:.3f} ms"
    )
    if r.times.threads:
        print(
            f"decoding and perturbing in worker processes vs in threads: {min(r.times.threads) / r.one_pass:.2f}x "
            f"({rate_one:.1f} vs {args.n_test / min(r.times.threads):.1f} test images/s)"
        )
    intra_ratio = rate_one / (args.n_test / r.intra)
    print(f"one-pass / pure forward on {torch.get_num_threads()} intra-op threads = {100 * intra_ratio:.0f} %")
    if r.costs:
        alone = sum(r.costs.values())
        print(
            f"CPU ms per test image: one-pass {r.cpu_per_image:.1f} (all threads and pixel worker processes); "
            "each stage alone on one thread: "
            + " + ".join(f"{k} {v:.1f}" for k, v in r.costs.items())
            + f" = {alone:.1f}; contention between the concurrent threads {r.cpu_per_image - alone:+.1f}"
        )
        print(
            f"bound from these costs: forward / one-pass CPU = {100 * r.costs['forward'] / r.cpu_per_image:.0f} % "
            "of a ceiling made of the same forwards at the same efficiency"
        )
    if r.auroc:
        print(
            f"downstream AUROC (logreg, clean d100): float32 {r.auroc[0]:.4f}  float16 {r.auroc[1]:.4f}  "
            f"|diff| {abs(r.auroc[0] - r.auroc[1]):.4f}"
        )


def main() -> None:
    job = Job.set_up(parse_args())
    result = measure(job)
    report_rates(job, result)
    report_costs(job, result)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
