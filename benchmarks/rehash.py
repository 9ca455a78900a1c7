"""Cost of re-hashing each image at extraction (issue 34): the same extraction with and without it.

Extraction checks each image's SHA-256 against the one ingest recorded before decoding it
(`crsbench.features.transforms.REHASH`). This times, in one process and interleaved (the machine
may be shared), (1) the SHA-256 of every image's bytes against reading and decoding them, and (2)
a full extraction (every depth and condition) with and without the re-hash; the best of each is
kept.

    .venv/bin/python benchmarks/rehash.py --dataset-dir demo-out/suite/isic2019 --repeats 3
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
import time
import uuid
from pathlib import Path

from crsbench.features import extract, get_encoder, transforms
from crsbench.ingest import ingest
from crsbench.ingest.images import decode_pixels


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset-dir", type=Path, required=True, help="an isic2019-layout folder (make-suite)")
    ap.add_argument("--encoder", default="tiny-vit")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="forward streams (1: the threads path)")
    args = ap.parse_args()
    ds = ingest("isic2019", args.dataset_dir, "bench")
    entry = get_encoder(args.encoder)
    rows = list(zip(ds.images["rel_path"].astype(str), ds.images["sha256"].astype(str), strict=True))
    decode, hashed, plain, checked = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:

        def run(rehash: bool) -> float:
            transforms.REHASH = rehash
            try:
                t0 = time.perf_counter()
                extract(ds, entry, str(Path(tmp) / f"{uuid.uuid4().hex}.zarr"), threads=args.threads)
                return time.perf_counter() - t0
            finally:
                transforms.REHASH = True

        run(True)  # warm-up
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            for rel, _sha in rows:
                decode_pixels(ds.root, rel)
            decode.append(time.perf_counter() - t0)
            data = [(ds.root / rel).read_bytes() for rel, _sha in rows]
            t0 = time.perf_counter()
            for blob in data:
                hashlib.sha256(blob).hexdigest()
            hashed.append(time.perf_counter() - t0)
            plain.append(run(False))
            checked.append(run(True))
    print(f"{len(rows)} images, {args.encoder}, best of {args.repeats}:")
    print(
        f"  SHA-256 {min(hashed) * 1e3:.2f} ms against read + decode {min(decode) * 1e3:.1f} ms: "
        f"{min(hashed) / min(decode):.2%} of decoding"
    )
    print(
        f"  extraction    {min(plain):.2f} s without the re-hash, {min(checked):.2f} s with: "
        f"x{min(checked) / min(plain):.3f}"
    )


if __name__ == "__main__":
    main()
