"""The run table does not depend on the instruction set torch dispatches to (issue: CRS 0.6512
on one x86-64 machine, 0.6500 on another, from the same features)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

TESTS = Path(__file__).resolve().parents[1]  # the script runs as `support.capability_grid` from tests/
METRICS = ["auroc", "ece", "ece_adaptive", "brier", "nll", "accuracy", "mean_confidence"]


def test_run_table_identical_under_default_and_avx2_kernels(tmp_path):
    procs = {}
    for capability in ("default", "avx2"):
        env = dict(os.environ, ATEN_CPU_CAPABILITY=capability, OMP_NUM_THREADS="1")
        procs[capability] = subprocess.Popen(
            [sys.executable, "-m", "support.capability_grid", str(tmp_path / f"{capability}.parquet")],
            env=env,
            cwd=TESTS,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
    for capability, proc in procs.items():
        out, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, f"{capability}: {out[-2000:]}"
    a = pd.read_parquet(tmp_path / "default.parquet")
    b = pd.read_parquet(tmp_path / "avx2.parquet")
    assert len(a) == len(b) > 0 and set(a["probe"]) == {"logreg", "knn"}
    identity = [c for c in a.columns if c not in METRICS and c not in ("qwk", "ordinal_mae")]
    pd.testing.assert_frame_equal(a[identity], b[identity])
    for column in METRICS:
        np.testing.assert_allclose(
            a[column].to_numpy(float), b[column].to_numpy(float), rtol=0, atol=1e-7, err_msg=column
        )
