"""features.extraction_procs: the pixel workers of a CPU extraction with several forward streams."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np


def test_an_unguarded_script_extracts_with_pixel_workers_and_runs_once(tmp_path):
    # The pixel workers were spawned by multiprocessing, which imports the caller's script again
    # in each worker: this script, with no `if __name__ == "__main__":`, then ran its ingest again
    # there, and its extraction failed with "a pixel worker process died".
    marker, script = tmp_path / "runs.txt", tmp_path / "unguarded.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from crsbench import Bench
            from crsbench.features import extraction_procs
            from crsbench.features.extract_options import ExtractOptions
            from crsbench.pipeline.extract import ExtractConfig

            with open({str(marker)!r}, "a") as f:
                f.write("ran\\n")
            bench = Bench({str(tmp_path / "w.duckdb")!r})
            bench.ingest_suite({str(tmp_path / "suite")!r}, scale=0.1, image_size=32)
            done = bench.extract(["tiny-vit"], ["aptos2019"], ExtractConfig(options=ExtractOptions(threads=2)))
            assert extraction_procs._POOL is not None and extraction_procs._POOL.children  # the workers ran
            print(done.to_json(orient="records"))
            """
        )
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert marker.read_text() == "ran\n"
    assert '"aptos2019"' in out.stdout


def test_a_worker_s_pixels_equal_the_same_call_here(tmp_path):
    from PIL import Image

    from crsbench.features import extraction_procs

    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 256, (24, 24, 3), dtype=np.uint8)).save(tmp_path / "a.png")
    conditions = [("rician", 3), ("gaussian_blur", 1), ("jpeg", 2)]
    here = extraction_procs.decode_and_perturb(tmp_path, "a.png", "img-a", conditions)
    there = (
        extraction_procs.pixel_pool(2)
        .submit(extraction_procs.decode_and_perturb, tmp_path, "a.png", "img-a", conditions)
        .result(timeout=120)
    )
    assert np.array_equal(here[0], there[0])
    assert all(np.array_equal(a, b) for a, b in zip(here[1], there[1], strict=True))
