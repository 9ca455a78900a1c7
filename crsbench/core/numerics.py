"""Canonical numerics: the library modes that make crsbench's stored numbers the same on every
x86-64 CPU with AVX2 (docs/METHODS.md §4.3), set once, before numpy or torch load.

torch's CPU kernels pick their code path from the CPU: ATen's vectorised ops (softmax, sigmoid,
log_softmax), oneDNN's convolutions and MKL's BLAS/LAPACK each run AVX-512 code where the CPU has
it and AVX2 code elsewhere, and the two round differently. numpy's and scipy's OpenBLAS does the
same (SkylakeX kernels against Haswell/Zen ones), and its result bits also depend on its thread
count, so it is pinned to the Haswell kernels on one thread; it carries the logistic-regression
solvers' products and factorisations (crsbench.core.products, §4.4), the zero-shot logits, the bootstrap's weighted ECE and
the degenerate check's SVD. numpy's own loops
(float32 power, exp, log) also dispatch to AVX-512 code, so its AVX-512 targets are switched off.
Measured: the demo's float16 features differed by 1 ulp between an AVX-512 and an AVX2 machine,
and MLP probes amplified that to 0.005 AUROC, moving the CRS in the fourth decimal. Capping every
library at AVX2 gives the AVX2 machine's bits on both (the digests then match to the bit). MKL is
the exception: its AVX2 branch is Intel's only, so MKL runs its COMPATIBLE branch and the products
that matter run on OpenBLAS inside `portable_products()` (crsbench.core.products).

The modes are environment variables the libraries read when they load, so this module sets them
when `crsbench.core` is first imported (every crsbench entry point imports it before numpy or
torch). They replace any other value of those variables, so a machine configured otherwise gives
the same numbers; `CRSBENCH_NATIVE_NUMERICS=1` leaves every variable as it is (each library's own
choice: faster on some CPUs, not reproducible across them). `numerics_modes()` reports what is in
force, for provenance.

torch's thread count is not a mode here: extraction and the probe grid run each unit of work (a chunk
of images, a chunk of fits) on one intra-op thread and use the cores for several units at once, so
no reduction's order depends on the number of cores.
"""

from __future__ import annotations

import os
import sys
from contextlib import AbstractContextManager, nullcontext

NATIVE_SWITCH = "CRSBENCH_NATIVE_NUMERICS"

# Library -> the environment variable it reads at load time and the canonical value.
CANONICAL_MODES: dict[str, str] = {
    "ATEN_CPU_CAPABILITY": "avx2",  # torch's ATen kernels (softmax, sigmoid, reductions)
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN convolutions and matmuls in extraction
    # MKL's reproducible branches other than COMPATIBLE (SSE2) hold on Intel CPUs only: elsewhere MKL
    # takes its own path (measured: a ViT's features differed between an AMD EPYC and an Intel Xeon
    # under MKL_CBWR=AVX2). So MKL gets the one branch every x86-64 CPU runs alike, and the hot
    # products leave MKL for OpenBLAS (`portable_products`); what MKL still computes is small.
    "MKL_CBWR": "COMPATIBLE",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    # numpy's own SIMD loops (exp, log, power, ...) run AVX-512 code where the CPU has it; capped
    # at X86_V3 (AVX2) by switching off numpy 2's AVX-512 dispatch targets (absent ones are ignored).
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
    "OPENBLAS_CORETYPE": "Haswell",  # numpy's and scipy's OpenBLAS (Zen runs the same kernels)
    "OPENBLAS_NUM_THREADS": "1",  # OpenBLAS's gemm and SVD bits depend on its thread count
}
# Modes that would stop a CPU without AVX2 (an illegal instruction), so set only where it has AVX2.
NEEDS_AVX2 = frozenset({"OPENBLAS_CORETYPE"})


def cpu_has_avx2() -> bool:
    """True on an x86-64 CPU that reports AVX2 (Linux's /proc/cpuinfo); False elsewhere or unknown."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            return any(line.startswith("flags") and "avx2" in line.split() for line in info)
    except OSError:
        return False


def native_requested() -> bool:
    return os.environ.get(NATIVE_SWITCH, "").strip().lower() in {"1", "true", "yes"}


def apply_canonical_modes() -> list[str]:
    """Set every canonical mode (unless `CRSBENCH_NATIVE_NUMERICS=1`); returns the variables changed.

    Too late for a library already loaded (torch imported before crsbench): `numerics_modes`
    then reports the mode torch actually runs, so provenance never claims the canonical one.
    """
    if native_requested():
        return []
    settable = CANONICAL_MODES if cpu_has_avx2() else {k: v for k, v in CANONICAL_MODES.items() if k not in NEEDS_AVX2}
    changed = [name for name, value in settable.items() if os.environ.get(name) != value]
    for name in changed:
        os.environ[name] = CANONICAL_MODES[name]
    return changed


def numerics_modes() -> dict[str, str]:
    """The numerics modes in force in this process: each variable's value ('' if unset) and, once
    torch is loaded, the ATen capability it actually uses."""
    modes = {name: os.environ.get(name, "") for name in CANONICAL_MODES}
    torch = sys.modules.get("torch")
    if torch is not None:
        modes["aten_capability"] = str(torch.backends.cpu.get_cpu_capability()).lower()
    return modes


def canonical() -> bool:
    """True when every mode is the canonical one (and torch, if loaded, runs AVX2 kernels)."""
    modes = numerics_modes()
    if any(modes[name] != value for name, value in CANONICAL_MODES.items()):
        return False
    return modes.get("aten_capability", "avx2") == "avx2"


def portable_products(device: object = "cpu") -> AbstractContextManager[object]:
    """A context in which torch's matrix products, attention, SVD and Cholesky run on numpy's
    OpenBLAS instead of MKL (crsbench.core.products), in this thread; under native numerics, nothing.

    Encoder forwards, text towers and adaptation's steps run inside it, so their bits are the same on
    Intel and AMD CPUs alike. `device` (a torch device or its name): where the work runs; on any
    other than the CPU, nothing."""
    if native_requested() or str(getattr(device, "type", device)) != "cpu":
        return nullcontext()
    from crsbench.core.products import PortableProducts  # loads torch: only when asked

    return PortableProducts()
