"""Dense products and factorisations on numpy's OpenBLAS: the same bits on Intel and AMD alike.

torch's x86 wheels run matrix products (linear layers, attention, the probes' Hessians and MLPs)
and LAPACK (SVD, Cholesky) on MKL. MKL's reproducible branches (`MKL_CBWR=AVX2`) hold on Intel
CPUs only: on any other vendor MKL ignores the branch and takes its own path (oneMKL developer
guide, "Getting Started with Conditional Numerical Reproducibility"), so a ViT's features differed
in the last bit between an AMD EPYC and an Intel Xeon under the same modes (measured,
docs/METHODS.md §4.3). OpenBLAS picks its kernels by `OPENBLAS_CORETYPE`, which canonical numerics
pin to Haswell on every AVX2 CPU, whoever made it.

The functions here (`matmul`, `addmm`, `svd`, `cholesky`, `cholesky_solve`, `cholesky_inverse`) are
those products on torch tensors; the probe solvers call them directly (a fit is thousands of small
ops, and a dispatch mode would add Python to each). They are also faster than MKL where it matters
on AMD: the solvers' skinny products (logits X W, gradient Xᵀ R with 8-40 columns) run 1.7-2.2x
faster on OpenBLAS than on MKL on an AMD EPYC (docs/METHODS.md §4.4).

`PortableProducts` is a torch dispatch mode for code crsbench does not own (an encoder's forward,
a text tower, adaptation's training steps): inside it, those products, attention and the
factorisations run on numpy's and scipy's OpenBLAS (one thread, as every unit of work runs)
instead of MKL, forward and backward. Anything else MKL still computes runs on its COMPATIBLE
branch (canonical numerics), the same on every x86-64 CPU but slow; a forward and every probe kind
leave MKL nothing to compute (tests/core/test_products.py counts MKL's calls).

Importing this module loads torch; `crsbench.core.portable_products` imports it when first asked.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from scipy.linalg import lapack
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten
_REAL = (torch.float32, torch.float64)
Handler = Callable[..., Any]
LinAlgError: type[Exception] = torch.linalg.LinAlgError  # type: ignore[attr-defined]  # torch's own error class


def _array(t: torch.Tensor) -> np.ndarray:
    """A numpy view of a CPU tensor (no copy for any strides numpy can express)."""
    return t.detach().resolve_conj().resolve_neg().numpy()


def _tensor(a: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a)).to(dtype)  # no copy when numpy kept the dtype


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a @ b (numpy's broadcasting of stacked matrices) for float CPU tensors of one dtype: views
    and transposes go in without a copy, one new tensor comes out."""
    if a.dtype != b.dtype or a.dtype not in _REAL:
        raise TypeError(f"matmul takes two float32 or two float64 tensors, got {a.dtype} and {b.dtype}")
    return _tensor(np.matmul(_array(a), _array(b)), a.dtype)


def addmm(base: torch.Tensor, a: torch.Tensor, b: torch.Tensor, *, beta: float = 1, alpha: float = 1) -> torch.Tensor:
    """beta * base + alpha * (a @ b), as torch.addmm and baddbmm define it (beta = 0 ignores base)."""
    product = matmul(a, b)  # a new tensor: scaled and added to in place (no second copy of a large product)
    if alpha != 1:
        product.mul_(alpha)
    if beta != 0:
        product.add_(base, alpha=beta)
    return product


def svd(a: torch.Tensor, full_matrices: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(U, S, Vh) of a (stacked) matrix, LAPACK's gesdd."""
    u, s, vh = np.linalg.svd(_array(a), full_matrices=full_matrices)
    return _tensor(u, a.dtype), _tensor(s, a.dtype), _tensor(vh, a.dtype)


def _per_matrix(a: torch.Tensor) -> tuple[np.ndarray, tuple[int, ...]]:
    """The matrices of a batch (..., m, n), stacked along one axis, and the batch shape."""
    arr = _array(a)
    return arr.reshape(-1, *arr.shape[-2:]), tuple(arr.shape[:-2])


def cholesky_ex(a: torch.Tensor, upper: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """(factor, info) of each matrix of a batch, as torch.linalg.cholesky_ex: info > 0 where a
    matrix is not positive definite."""
    mats, batch = _per_matrix(a)
    (potrf,) = lapack.get_lapack_funcs(("potrf",), (mats,))
    factors, infos = np.empty_like(mats), np.zeros(len(mats), dtype=np.int32)
    for i, m in enumerate(mats):
        factors[i], infos[i] = potrf(m, lower=not upper, clean=True)
    return _tensor(factors.reshape(a.shape), a.dtype), torch.from_numpy(infos.reshape(batch))


def cholesky(a: torch.Tensor) -> torch.Tensor:
    """The lower Cholesky factor of each matrix of a batch; torch's LinAlgError if one is not
    positive definite."""
    factor, info = cholesky_ex(a)
    if bool((info > 0).any()):
        raise LinAlgError(f"cholesky: a matrix is not positive definite (leading minor {int(info.max())})")
    return factor


def cholesky_solve(b: torch.Tensor, factor: torch.Tensor, upper: bool = False) -> torch.Tensor:
    """x with A x = b for each A = L Lᵀ of a batch, given L (batch shapes equal)."""
    if b.shape[:-2] != factor.shape[:-2]:
        raise ValueError(f"cholesky_solve: batch shapes differ, {tuple(b.shape)} and {tuple(factor.shape)}")
    rhs, _ = _per_matrix(b)
    facs, _ = _per_matrix(factor)
    (potrs,) = lapack.get_lapack_funcs(("potrs",), (facs,))
    out = np.stack([potrs(f, r, lower=not upper)[0] for f, r in zip(facs, rhs, strict=True)]) if len(rhs) else rhs
    return _tensor(out.reshape(b.shape), b.dtype)


def cholesky_inverse(factor: torch.Tensor, upper: bool = False) -> torch.Tensor:
    """A⁻¹ from the Cholesky factor of one matrix A."""
    (potri,) = lapack.get_lapack_funcs(("potri",), (_array(factor),))
    half, info = potri(_array(factor), lower=not upper)
    if info != 0:
        raise LinAlgError(f"cholesky_inverse: LAPACK potri info {info}")
    tri = np.triu(half) if upper else np.tril(half)
    return _tensor(tri + tri.T - np.diag(np.diag(tri)), factor.dtype)


def _svd_op(a: torch.Tensor, full_matrices: bool = False, compute_uv: bool = True, driver: str | None = None) -> Any:
    return svd(a, full_matrices) if compute_uv and driver is None else NotImplemented


def _cholesky_ex_op(a: torch.Tensor, upper: bool = False, check_errors: bool = False) -> Any:
    return NotImplemented if check_errors else cholesky_ex(a, upper)


def _cholesky_solve_op(b: torch.Tensor, factor: torch.Tensor, upper: bool = False) -> Any:
    return cholesky_solve(b, factor, upper) if b.shape[:-2] == factor.shape[:-2] else NotImplemented


def _cholesky_inverse_op(factor: torch.Tensor, upper: bool = False) -> Any:
    if factor.dim() != 2:
        return NotImplemented
    try:
        return cholesky_inverse(factor, upper)
    except LinAlgError:
        return NotImplemented  # torch raises its own error


def _attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    attn_mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> Any:
    """The CPU flash-attention op's (output, logsumexp), as softmax(q kᵀ scale + mask) v."""
    if dropout_p > 0 or q.dtype not in _REAL:
        return NotImplemented
    qa, ka, va = _array(q), _array(k), _array(v)
    factor = np.asarray(scale if scale is not None else 1.0 / math.sqrt(qa.shape[-1]), dtype=qa.dtype)
    if ka.shape[-3] != qa.shape[-3]:  # grouped-query attention: each key head serves several query heads
        ka = np.repeat(ka, qa.shape[-3] // ka.shape[-3], axis=-3)
        va = np.repeat(va, qa.shape[-3] // va.shape[-3], axis=-3)
    scores = np.matmul(qa, np.swapaxes(ka, -1, -2)) * factor
    if is_causal:
        scores = np.where(np.tril(np.ones(scores.shape[-2:], dtype=bool)), scores, -np.inf)
    if attn_mask is not None:
        mask = _array(attn_mask)
        scores = np.where(mask, scores, -np.inf) if mask.dtype == bool else scores + mask
    logits = torch.from_numpy(np.ascontiguousarray(scores))
    lse = torch.logsumexp(logits, dim=-1)
    weights = torch.exp(logits - lse.unsqueeze(-1)).numpy()
    return _tensor(np.matmul(weights, va), q.dtype), lse


HANDLERS: dict[Any, Handler] = {
    aten.mm.default: matmul,
    aten.addmm.default: addmm,
    aten.bmm.default: matmul,
    aten.baddbmm.default: addmm,
    aten._linalg_svd.default: _svd_op,
    aten.linalg_cholesky_ex.default: _cholesky_ex_op,
    aten.cholesky_solve.default: _cholesky_solve_op,
    aten.cholesky_inverse.default: _cholesky_inverse_op,
    aten._scaled_dot_product_flash_attention_for_cpu.default: _attention,
}


_COMPOSITE: dict[Any, bool] = {}  # op -> decomposed here (asked of the dispatcher once per op)


def _composite(func: Any) -> bool:
    known = _COMPOSITE.get(func)
    if known is None:
        has = torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), "CompositeImplicitAutograd")
        known = _COMPOSITE[func] = func not in HANDLERS and bool(has)
    return known


def _portable(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Every tensor argument a real float on the CPU in torch's strided layout."""
    tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
    if not tensors or tensors[0].dtype not in _REAL:
        return False
    dtype = tensors[0].dtype
    return all(t.device.type == "cpu" and t.layout == torch.strided and t.dtype in (dtype, torch.bool) for t in tensors)


class PortableProducts(TorchDispatchMode):  # type: ignore[no-untyped-call]  # torch's class hook is untyped
    """Inside: HANDLERS' ops on OpenBLAS, every other op as torch runs it."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if _composite(func):
            # Under inference mode a composite op (linear, matmul, attention) arrives whole: decomposed
            # here, inside the mode, so the products it is made of come back to it (as FakeTensorMode does).
            with self:
                return func.decompose(*args, **kwargs)
        handler = HANDLERS.get(func)
        if handler is not None and _portable(args, kwargs):
            result = handler(*args, **kwargs)
            if result is not NotImplemented:
                return result
        return func(*args, **kwargs)
