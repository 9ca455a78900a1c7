"""Benchmark: what canonical numerics cost (docs/METHODS.md §4.3), extraction and probe grid.

    .venv/bin/python benchmarks/numerics_cost.py [--repeats 3] [--scale 1.0]

Measured in one run, on one generated suite, in fresh processes (the modes are read at load):
  canonical  crsbench's default: torch, oneDNN and MKL capped at AVX2;
  native     CRSBENCH_NATIVE_NUMERICS=1: every library's own choice (AVX-512 where the CPU has it).
Each repeat runs both, alternating which goes first: `crsbench extract` of two tiny encoders on
the ISIC stand-in, then `crsbench probe` (logreg at every depth, k-NN and MLP at full depth, every
fraction and seed). Reported: the median wall time of each step and the ratio canonical / native.
Run it alone: the machine's other load shows up in every number.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENCODERS = ("tiny-resnet18", "tiny-vit")


def _cli(args: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "crsbench.cli", "--quiet", *args], env=env, check=True)
    return time.perf_counter() - started


def _one(suite: Path, work: Path, native: bool) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k != "CRSBENCH_NATIVE_NUMERICS"}
    if native:
        env["CRSBENCH_NATIVE_NUMERICS"] = "1"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    db = str(work / "w.duckdb")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "crsbench.cli",
            "--quiet",
            "ingest",
            "isic2019",
            str(suite / "isic2019"),
            "--name",
            "isic2019",
            "--db",
            db,
        ],
        env=env,
        check=True,
    )
    extract = _cli(["extract", *[a for e in ENCODERS for a in ("-e", e)], "-d", "isic2019", "--db", db], env)
    probe = _cli(["probe", "-d", "isic2019", "--db", db], env)
    return {"extract": extract, "probe": probe}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0)
    args = parser.parse_args()
    from crsbench.ingest.suite import make_suite

    root = Path(tempfile.mkdtemp(prefix="numerics-cost-"))
    make_suite(root / "suite", scale=args.scale, image_size=128)
    times: dict[str, dict[str, list[float]]] = {m: {"extract": [], "probe": []} for m in ("canonical", "native")}
    for r in range(args.repeats):
        order = ("canonical", "native") if r % 2 == 0 else ("native", "canonical")
        for mode in order:
            for step, seconds in _one(root / "suite", root / mode, mode == "native").items():
                times[mode][step].append(seconds)
                print(f"repeat {r + 1} {mode:9s} {step:7s} {seconds:6.1f} s", flush=True)
    print()
    for step in ("extract", "probe"):
        canon, native = (statistics.median(times[m][step]) for m in ("canonical", "native"))
        print(f"{step:7s} canonical {canon:6.1f} s  native {native:6.1f} s  ratio {canon / native:.3f}")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
