"""probes.blas.matmul: the solvers' skinny products on numpy's BLAS (docs/METHODS.md §4.4)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from crsbench.probes.blas import matmul


def _exact(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Each entry as a correctly rounded sum (math.fsum): a reference no BLAS kernel computes."""
    return np.array([[math.fsum(a[i] * b[:, j]) for j in range(b.shape[1])] for i in range(a.shape[0])])


@pytest.mark.parametrize("transpose_a", [False, True])
def test_matmul_equals_the_exact_product_to_rounding_also_for_a_transposed_view(transpose_a):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(300, 64, generator=g, dtype=torch.float64)
    w = torch.randn(300 if transpose_a else 64, 40, generator=g, dtype=torch.float64)
    a = x.T if transpose_a else x  # the gradient's Xᵀ R is taken on a view, never a copy
    got = matmul(a, w)
    want = _exact(a.numpy(), w.numpy())
    assert got.dtype == torch.float64 and tuple(got.shape) == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    # and agrees with torch's own product (MKL) to rounding
    torch.testing.assert_close(got, a @ w, rtol=1e-12, atol=1e-12)


def test_matmul_is_deterministic_call_to_call():
    g = torch.Generator().manual_seed(4)
    x, w = (
        torch.randn(2000, 300, generator=g, dtype=torch.float64),
        torch.randn(300, 24, generator=g, dtype=torch.float64),
    )
    assert torch.equal(matmul(x, w), matmul(x, w))


def test_matmul_refuses_other_dtypes_naming_them():
    with pytest.raises(TypeError, match="float32"):
        matmul(torch.ones(2, 2, dtype=torch.float32), torch.ones(2, 2, dtype=torch.float64))
