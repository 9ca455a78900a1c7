"""The probe solvers' skinny matrix products, on numpy's OpenBLAS (docs/METHODS.md §4.4).

The logistic-regression solvers spend most of their time in products of the (n, D) design with
a few columns: the logits X W and the gradient Xᵀ R, where W and R hold K outputs of B problems
(B K = 8 to 40 columns), and the preconditioner's products. Measured per call at the benchmark's
sizes (`benchmarks/backends.py`, one thread), MKL runs these 1.7-2.2x slower than OpenBLAS on an
AMD EPYC, in its AVX2 branch and in its own path alike, while the square products (Gram,
Hessian, SVD, Cholesky) are within 10 % of each other on both libraries. OpenBLAS picks Zen and
Haswell kernels by the CPU, not by its vendor, and is what scikit-learn runs everywhere.

Canonical numerics (§4.3) pin OpenBLAS to its Haswell kernels on one thread, so these products
give the same bits on every AVX2 CPU, as MKL's AVX2 branch did.
"""

from __future__ import annotations

import numpy as np
import torch


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b for two 2-D float64 CPU tensors (views and transposes included), through numpy's
    BLAS: no copy in, one new tensor out."""
    if a.dtype != torch.float64 or b.dtype != torch.float64:
        raise TypeError(f"matmul takes float64 tensors, got {a.dtype} and {b.dtype}")
    return torch.from_numpy(np.matmul(a.numpy(), b.numpy()))
