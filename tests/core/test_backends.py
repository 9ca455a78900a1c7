"""The backends line names the libraries and code paths actually in force (what threadpoolctl and
torch report after loading), so a user can see why a machine is slow or its bits differ."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from crsbench.core import numerics

CODE = "import json, crsbench.core\nfrom crsbench.core.backends import describe_backends\nprint(json.dumps(describe_backends()))"


def _backends(**env: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in numerics.CANONICAL_MODES and k != numerics.NATIVE_SWITCH}
    proc = subprocess.run(
        [sys.executable, "-c", CODE], env={**clean, **env}, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.mark.skipif(not numerics.cpu_has_avx2(), reason="canonical OpenBLAS kernels need an AVX2 CPU")
def test_canonical_numerics_are_what_the_libraries_report():
    seen = _backends(OPENBLAS_CORETYPE="Sandybridge", OPENBLAS_NUM_THREADS="2")
    assert seen == {
        "torch BLAS/LAPACK": "products and factorisations on OpenBLAS, the rest on MKL, COMPATIBLE branch",
        "torch convolutions": "oneDNN, ISA cap AVX2",
        "torch kernels": "ATen avx2",
        "numpy/scipy": "OpenBLAS Haswell kernels on 1 thread",
    }


def test_native_numerics_report_the_environment_the_libraries_were_given():
    seen = _backends(
        **{numerics.NATIVE_SWITCH: "1", "OPENBLAS_CORETYPE": "Sandybridge", "OPENBLAS_NUM_THREADS": "2"},
        ATEN_CPU_CAPABILITY="default",
    )
    assert seen["numpy/scipy"] == "OpenBLAS Sandybridge kernels on 2 threads"
    assert seen["torch kernels"] == "ATen default" and seen["torch BLAS/LAPACK"] == "MKL, its own path for this CPU"
