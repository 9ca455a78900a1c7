"""The chain a CPU changes, run in this process: suite bytes -> images -> features -> runs, and a
JSON line of their digests on stdout (argv[1]: a new folder to work in; argv[2] "features": stop
after extraction, so the digests end at the features).

Started by tests/core/test_numerics.py in a fresh subprocess per emulated CPU, since numpy, torch,
oneDNN and MKL read their modes once, at load. Small on purpose: two datasets of the generated
suite at 64 px (the MIMIC-CXR stand-in is the one whose bytes once differed between CPUs), two
tiny encoders with every depth and condition, and every probe kind on a few fractions and seeds.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from crsbench.cli import main as cli

ENCODERS = ("tiny-resnet18", "tiny-vit")
DATASETS = (("isic2019", "isic2019"), ("mimic-cxr", "mimic-cxr"))
PROBES = ("logreg", "knn", "mlp")


def _run(*args: str) -> None:
    if cli(["--quiet", *args]) != 0:
        raise SystemExit(f"crsbench {' '.join(args)} failed")


def chain(work: Path, through_features: bool = False) -> dict[str, str]:
    from crsbench.ingest.suite import make_suite
    from crsbench.pipeline.digests import chain_digests
    from crsbench.warehouse.connection import Warehouse

    paths = make_suite(work / "suite", scale=0.3, image_size=64)
    db = str(work / "w.duckdb")
    for adapter, name in DATASETS:
        _run("ingest", adapter, str(paths[adapter]), "--name", name, "--db", db)
    for encoder in ENCODERS:
        _run("extract", "-e", encoder, "-d", "all", "--db", db)
    probes = () if through_features else PROBES
    grid = [a for p in PROBES for a in ("--probe", p)] + ["--depth", "1.0", "--fraction", "0.25", "--fraction", "1.0"]
    if probes:
        _run("probe", *grid, "--seed", "0", "--seed", "1", "-d", "isic2019", "--db", db)
    with Warehouse.open(Path(db), read_only=True) as wh:
        return chain_digests(wh, db + ".features.zarr", [n for _, n in DATASETS], ENCODERS, probes)


if __name__ == "__main__":
    print(json.dumps(chain(Path(sys.argv[1]), sys.argv[2:] == ["features"]), sort_keys=True))
