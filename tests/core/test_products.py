"""crsbench.core.products: inside `portable_products()` torch's products, attention and factorisations
run on numpy's OpenBLAS (bit for bit what numpy computes), agree with torch's own results, carry
autograd, and leave MKL with nothing to do in a forward, a fit or a training step."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from crsbench.core import NATIVE_SWITCH, portable_products
from crsbench.core.products import matmul

TESTS = Path(__file__).resolve().parents[1]


def _rng_tensor(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape)).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_products_are_numpys_bits_and_torchs_values(dtype):
    a, b, bias = (
        _rng_tensor(70, 33, dtype=dtype),
        _rng_tensor(33, 21, dtype=dtype, seed=1),
        _rng_tensor(21, dtype=dtype, seed=2),
    )
    batch_a, batch_b = _rng_tensor(4, 9, 16, dtype=dtype, seed=3), _rng_tensor(4, 16, 5, dtype=dtype, seed=4)
    with portable_products():
        got = {
            "mm": a @ b,
            "transposed": a.T.contiguous().T @ b,  # a strided view, as a linear layer's weight.t()
            "linear": F.linear(a, b.T, bias),
            "addmm": torch.addmm(bias, a, b, beta=0.5, alpha=2.0),
            "bmm": torch.bmm(batch_a, batch_b),
            "baddbmm": torch.baddbmm(torch.ones(4, 9, 5, dtype=dtype), batch_a, batch_b),
        }
    na, nb, nbias = a.numpy(), b.numpy(), bias.numpy()
    numpy_bits = {
        "mm": na @ nb,
        "transposed": a.T.contiguous().T.numpy() @ nb,  # the same layout: OpenBLAS's transposed kernel
        "linear": na @ nb + nbias,
        "addmm": (na @ nb) * np.asarray(2.0, na.dtype) + nbias * np.asarray(0.5, na.dtype),
        "bmm": np.matmul(batch_a.numpy(), batch_b.numpy()),
        "baddbmm": np.matmul(batch_a.numpy(), batch_b.numpy()) + 1,
    }
    torch_own = {
        "mm": a @ b,
        "transposed": a @ b,
        "linear": F.linear(a, b.T, bias),
        "addmm": torch.addmm(bias, a, b, beta=0.5, alpha=2.0),
        "bmm": torch.bmm(batch_a, batch_b),
        "baddbmm": torch.baddbmm(torch.ones(4, 9, 5, dtype=dtype), batch_a, batch_b),
    }
    for name, value in got.items():
        assert value.dtype == dtype, name
        np.testing.assert_array_equal(value.numpy(), numpy_bits[name], err_msg=name)
        torch.testing.assert_close(value, torch_own[name], msg=name)


def test_svd_and_cholesky_solve_the_problems_they_are_asked():
    x = _rng_tensor(40, 12, dtype=torch.float64)
    spd = x.T @ x + torch.eye(12, dtype=torch.float64)
    rhs = _rng_tensor(3, 12, 2, dtype=torch.float64, seed=5)
    with portable_products():
        u, s, vh = torch.linalg.svd(x, full_matrices=False)
        factor = torch.linalg.cholesky(spd)
        batch_factor = torch.linalg.cholesky(spd.expand(3, 12, 12))
        solved = torch.cholesky_solve(rhs, batch_factor)
        inverse = torch.cholesky_inverse(factor)
        _, info = torch.linalg.cholesky_ex(-spd)
        with pytest.raises(torch.linalg.LinAlgError):
            torch.linalg.cholesky(-spd)  # not positive definite: torch's own error, from the info above
    assert u.shape == (40, 12) and vh.shape == (12, 12)
    np.testing.assert_allclose((u * s) @ vh, x, atol=1e-12)
    np.testing.assert_allclose(s, np.linalg.svd(x.numpy(), compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose(factor @ factor.T, spd, atol=1e-10)
    assert torch.equal(factor, torch.tril(factor))
    np.testing.assert_allclose(spd.expand(3, 12, 12) @ solved, rhs, atol=1e-10)
    np.testing.assert_allclose(inverse.numpy(), np.linalg.inv(spd.numpy()), atol=1e-10)
    assert int(info) > 0


@pytest.mark.parametrize("case", ["plain", "causal", "bool mask", "float mask", "grouped heads"])
def test_attention_matches_torchs_kernel(case):
    q = _rng_tensor(2, 4, 17, 8)
    k = _rng_tensor(2, 2 if case == "grouped heads" else 4, 17, 8, seed=1)
    v = _rng_tensor(*k.shape, seed=2)
    mask = {
        "bool mask": torch.from_numpy(np.random.default_rng(3).random((17, 17)) > 0.3)
        | torch.eye(17, dtype=torch.bool),
        "float mask": _rng_tensor(17, 17, seed=4),
    }.get(case)
    kwargs = {"attn_mask": mask, "is_causal": case == "causal", "enable_gqa": case == "grouped heads"}
    with torch.inference_mode():
        expected = F.scaled_dot_product_attention(q, k, v, **kwargs)
        with portable_products():
            got = F.scaled_dot_product_attention(q, k, v, **kwargs)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def test_gradients_flow_through_the_mode():
    w = _rng_tensor(16, 8, seed=1).requires_grad_()
    x, y = _rng_tensor(32, 16), torch.arange(32) % 8

    def grad() -> torch.Tensor:
        w.grad = None
        F.cross_entropy(F.gelu(x @ w) @ w.T @ w, y).backward()
        assert w.grad is not None
        return w.grad.clone()

    with portable_products():
        inside = grad()
    torch.testing.assert_close(inside, grad())


def test_native_numerics_and_other_devices_leave_torch_alone(monkeypatch):
    assert not isinstance(portable_products(torch.device("cpu")), nullcontext)
    assert isinstance(portable_products(torch.device("meta")), nullcontext)
    assert isinstance(portable_products("cuda"), nullcontext)
    monkeypatch.setenv(NATIVE_SWITCH, "1")
    assert isinstance(portable_products(), nullcontext)


MKL_CALLS = """
import numpy as np, torch
from crsbench.features.hooks import DepthTap
from crsbench.features.loaders import build_model
from crsbench.features import get_encoder
from crsbench.ingest.types import Task
from crsbench.probes.kinds.estimators import knn, logreg, mlp
entry = get_encoder("tiny-vit")
tap = DepthTap(build_model(entry).eval(), entry)
x = torch.randn(4, 3, entry.input_size, entry.input_size)
tap(x)
rng = np.random.default_rng(0)
for n, d in ((120, 40), (3000, 300)):  # exact Newton, then L-BFGS
    feats, labels = rng.standard_normal((n, d)).astype(np.float32), rng.integers(0, 3, n)
    for fit in (logreg, mlp, knn):  # no mode: the probes call crsbench.core.products themselves
        fit(feats, labels, Task.MULTICLASS, 3, 0)(feats[:50])
print("control", flush=True)
with torch.no_grad():
    tap.model(x)  # outside the mode: MKL computes the products
"""


def test_a_forward_and_every_probe_kind_leave_mkl_nothing_to_compute():
    """MKL_VERBOSE prints one line per MKL call: none may come from a forward or a fit, while the
    same forward outside the mode (the control) does call MKL."""
    env = {**os.environ, "MKL_VERBOSE": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", MKL_CALLS], env=env, capture_output=True, text=True, timeout=300, cwd=TESTS
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    inside, control = proc.stdout.split("control\n")
    calls = [line for line in inside.splitlines() if line.startswith("MKL_VERBOSE") and "oneMKL" not in line]
    assert calls == [], calls[:5]
    assert any(line.startswith("MKL_VERBOSE SGEMM") for line in control.splitlines())


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
