"""Benchmark: one real-size LoRA adaptation (METHODS.md §13) through `crsbench.features.adapt`, in steps/s.

    .venv/bin/python benchmarks/adapt_gpu.py                          # GPU: ViT-B/16, 300 steps
    .venv/bin/python benchmarks/adapt_gpu.py --device cpu --steps 3   # CPU smoke test

The encoder is a registered entry built with seeded random weights (no download; the
architecture, not the checkpoint, sets the cost). The dataset is the extraction benchmark's
two-class toy PNGs, all in the train split, so every step decodes and transforms its batch
exactly as a real run does. Reported: trainable (adapter) parameters, steps, images/s and
steps/s over the timed steps (the first `--warmup` steps are excluded), the loss trend, and
the time to save + reload + merge the adapter.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from extract import make_dataset  # the benchmarks share one toy dataset

from crsbench.features import EncoderEntry, get_encoder
from crsbench.features.adapt import AdaptResult, LoraSettings, adapt, load_adapted, save_adapter
from crsbench.ingest.types import Dataset


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--encoder", default="vit-b16")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=None, help="untimed first steps (default min(10, steps//3))")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--images", type=int, default=512, help="toy training images")
    ap.add_argument("--image-size", type=int, default=256)
    ap.add_argument("--bf16", action="store_true", help="bfloat16 autocast (CUDA)")
    ap.add_argument("--threads", type=int, default=0)
    return ap.parse_args()


def set_up_device(args: argparse.Namespace) -> None:
    """Torch threads, and on CUDA: the device's name and TF32 matmuls (exits when none is visible)."""
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device.startswith("cuda"):
        if not torch.cuda.is_available():
            sys.exit("no CUDA device visible; use --device cpu --steps 3 for a smoke test")
        print(torch.cuda.get_device_name(0))
        torch.backends.cuda.matmul.allow_tf32 = True


def adapt_timed(args: argparse.Namespace, ds: Dataset, entry: EncoderEntry) -> tuple[AdaptResult, list[float]]:
    """One adaptation run; with the time after each step (the first tick precedes step 1)."""
    epochs = -(-args.steps // -(-args.images // args.batch_size))
    ticks: list[float] = []

    def progress(_: str, done: int, total: int | None) -> None:
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        ticks.append(time.perf_counter())

    settings = LoraSettings(epochs=max(epochs, 1), batch_size=args.batch_size, max_steps=args.steps)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if args.bf16 else torch.autocast("cpu", enabled=False)
    with autocast:
        result = adapt(ds, entry, seed=0, settings=settings, device=args.device, progress=progress)
    return result, ticks


def save_reload_seconds(result: AdaptResult, entry: EncoderEntry, folder: Path) -> float:
    """Seconds to save the adapter, reload it and merge it into the encoder."""
    started = time.perf_counter()
    saved = save_adapter(result, folder, {"encoder_id": entry.id})
    load_adapted(entry, saved)
    return time.perf_counter() - started


def main() -> None:
    args = parse_args()
    set_up_device(args)
    entry = dataclasses.replace(get_encoder(args.encoder), pretrained=False)
    warmup = args.warmup if args.warmup is not None else min(10, args.steps // 3)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "bench"
        folder.mkdir()
        ds = make_dataset(folder, args.images, args.image_size, ["train"])
        result, ticks = adapt_timed(args, ds, entry)
        # ticks[0] is the call before the first step; ticks[k] follows step k
        timed = result.steps - warmup
        span = ticks[-1] - ticks[warmup] if timed > 0 else float("nan")
        reload_s = save_reload_seconds(result, entry, Path(tmp) / "adapter")
        trainable = sum(p.numel() for p in result.model.parameters() if p.requires_grad)
        report = {
            "encoder": entry.id,
            "device": args.device,
            "bf16": args.bf16,
            "batch_size": args.batch_size,
            "steps": result.steps,
            "timed_steps": timed,
            "steps_per_s": timed / span if timed > 0 else None,
            "images_per_s": timed * args.batch_size / span if timed > 0 else None,
            "adapter_params": trainable,
            "adapter_norm": result.adapter_norm,
            "loss_first_last_epoch": [result.losses[0], result.losses[-1]],
            "save_reload_merge_s": reload_s,
            "total_train_s": result.seconds,
        }
        print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
