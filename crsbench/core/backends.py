"""Which BLAS/LAPACK libraries and code paths this process computes with, in one line a user can
read: why a machine is slow, or why its numbers could differ (docs/METHODS.md §4.3).

torch's CPU wheels run dense algebra on MKL (its branch set by MKL_CBWR; crsbench moves the
products and factorisations to OpenBLAS, crsbench.core.products), convolutions on oneDNN
(capped by ONEDNN_MAX_CPU_ISA) and elementwise kernels on ATen's dispatch (ATEN_CPU_CAPABILITY);
numpy and scipy run theirs on OpenBLAS, whose kernels follow the CPU (OPENBLAS_CORETYPE). Under
canonical numerics the line is the same on every AVX2 CPU; `cpu_model` names the machine.
"""

from __future__ import annotations

import os
from typing import Any

from crsbench.core.numerics import native_requested


def _openblas(info: list[dict[str, Any]]) -> str:
    libs = [i for i in info if i.get("internal_api") == "openblas"]
    if not libs:
        return "numpy BLAS: not OpenBLAS"
    first = libs[0]
    threads = first.get("num_threads")
    return f"OpenBLAS {first.get('architecture', '?')} kernels on {threads} thread{'s' if threads != 1 else ''}"


def describe_backends() -> dict[str, str]:
    """{library: what it runs here}; loads torch, numpy and threadpoolctl."""
    import numpy  # noqa: F401  (its BLAS is listed only once loaded)
    import threadpoolctl
    import torch

    branch = os.environ.get("MKL_CBWR", "")
    mkl = f"MKL, {branch} branch" if branch else "MKL, its own path for this CPU"
    if not native_requested():  # crsbench.core.products: the hot products leave MKL
        mkl = f"products and factorisations on OpenBLAS, the rest on {mkl}"
    return {
        "torch BLAS/LAPACK": mkl if torch.backends.mkl.is_available() else "not MKL",  # type: ignore[no-untyped-call]
        "torch convolutions": f"oneDNN, ISA cap {os.environ.get('ONEDNN_MAX_CPU_ISA', '') or 'none'}"
        if torch.backends.mkldnn.is_available()  # type: ignore[no-untyped-call]
        else "ATen",
        "torch kernels": f"ATen {str(torch.backends.cpu.get_cpu_capability()).lower()}",
        "numpy/scipy": _openblas(threadpoolctl.threadpool_info()),
    }


def backends_line() -> str:
    """One line: 'torch BLAS/LAPACK: products and factorisations on OpenBLAS, ...; ...'."""
    return "; ".join(f"{name}: {what}" for name, what in describe_backends().items())


def cpu_model() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo), or 'unknown CPU'."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"
