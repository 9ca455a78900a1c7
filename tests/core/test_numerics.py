"""Canonical numerics (docs/METHODS.md §4.3): the modes are set before numpy or torch load, and the
chain a CPU can change (suite bytes -> images -> features -> runs) gives the same digests under
emulated CPUs as the golden file in the repository.

A different CPU is emulated by what differs between CPUs: numpy's SIMD dispatch (AVX-512 turned
off with NPY_DISABLE_CPU_FEATURES, as on an AVX2 machine), the thread count, and torch/oneDNN/MKL
modes set otherwise in the environment (ATen's capability, oneDNN's ISA cap, MKL's code path,
OpenBLAS's core type and thread count).
The native run (CRSBENCH_NATIVE_NUMERICS=1 with ATen's generic kernels) must differ: it shows the
digests can see a kernel change. numpy's own loops and OpenBLAS are checked on the operations
crsbench uses them for (gemm, SVD, exp, log, power) against an emulated AVX2 machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from crsbench.core import numerics
from crsbench.pipeline.digests import first_difference

TESTS = Path(__file__).resolve().parents[1]
GOLDEN = TESTS / "data" / "golden_digests.json"
MODES = set(numerics.CANONICAL_MODES)


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in MODES and k != numerics.NATIVE_SWITCH}
    return {**env, **extra}


def _python(code: str, **extra: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code], env=_clean_env(**extra), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_importing_crsbench_sets_every_mode_before_numpy_or_torch_load():
    code = (
        "import os, sys, json\nimport crsbench\n"
        "loaded = [m for m in ('numpy', 'torch') if m in sys.modules]\n"
        "import torch\n"
        f"names = {sorted(MODES)!r}\n"
        "print(json.dumps({'loaded': loaded, 'env': {k: os.environ.get(k) for k in names},"
        " 'aten': torch.backends.cpu.get_cpu_capability()}))"
    )
    seen = json.loads(_python(code, ATEN_CPU_CAPABILITY="default", MKL_CBWR="AVX2"))
    assert seen["loaded"] == []
    assert seen["env"] == {
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_CBWR": "COMPATIBLE",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "OPENBLAS_CORETYPE": "Haswell",
        "OPENBLAS_NUM_THREADS": "1",
    }  # other values in the environment are replaced
    assert seen["aten"] == "AVX2"


NUMPY_OPS = (
    "import hashlib, json, sys\n"
    "import numpy as np, threadpoolctl\n"
    "from numpy._core._multiarray_umath import __cpu_features__ as cpu\n"
    "r = np.random.default_rng(0); a = r.standard_normal((3000, 777)); b = r.standard_normal((777, 500))\n"
    "f = a.astype(np.float32)\n"
    "outs = [a @ b, f @ b.astype(np.float32), np.linalg.svd(a[:400], compute_uv=False),\n"
    "        np.exp(f), np.log(np.abs(f) + 1), np.abs(f) ** np.float32(0.7), np.tanh(a)]\n"
    "blas = [(i['architecture'], i['num_threads']) for i in threadpoolctl.threadpool_info() if i['internal_api'] == 'openblas']\n"
    "print(json.dumps({'digest': hashlib.sha256(b''.join(o.tobytes() for o in outs)).hexdigest()[:16],\n"
    "                  'x86_v4': bool(cpu.get('X86_V4')), 'blas': blas}))"
)


def test_numpy_and_openblas_run_the_avx2_machines_kernels_whatever_the_environment_says():
    """numpy's AVX-512 loops and OpenBLAS's SkylakeX kernels round otherwise than an AVX2 machine's,
    and OpenBLAS's bits move with its thread count (measured: gemm, SVD, float32 exp and power). An
    AVX2 machine with two BLAS threads is emulated with the native switch; crsbench's modes must give
    the AVX2 machine's bits on one thread whatever this environment asks for."""
    hostile = {"OPENBLAS_CORETYPE": "SkylakeX", "OPENBLAS_NUM_THREADS": "2", "NPY_DISABLE_CPU_FEATURES": ""}
    run = json.loads(_python("import crsbench\n" + NUMPY_OPS, **hostile))
    assert not run["x86_v4"] and run["blas"] and all(b == ["Haswell", 1] for b in run["blas"])
    avx2_one_thread = {
        numerics.NATIVE_SWITCH: "1",
        "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
        "OPENBLAS_CORETYPE": "Zen",  # an AMD AVX2 machine's own choice: the Haswell kernels
        "OPENBLAS_NUM_THREADS": "1",
    }
    assert json.loads(_python(NUMPY_OPS, **avx2_one_thread))["digest"] == run["digest"]
    native = json.loads(_python(NUMPY_OPS, **{numerics.NATIVE_SWITCH: "1", **hostile}))
    assert native["digest"] != run["digest"]  # the control: these operations do see the kernels


def test_the_native_switch_leaves_the_environment_alone_and_provenance_says_so():
    code = (
        "import json, crsbench.core as c\nfrom crsbench.core import provenance\n"
        "recorded = provenance.collect()['numerics']  # loads torch\n"
        "print(json.dumps([c.numerics_modes(), recorded]))"
    )
    modes, recorded = json.loads(_python(code, CRSBENCH_NATIVE_NUMERICS="1", ATEN_CPU_CAPABILITY="default"))
    assert modes["ATEN_CPU_CAPABILITY"] == "default" and modes["MKL_CBWR"] == ""
    assert modes["aten_capability"] == "default" and recorded == "native"
    modes, recorded = json.loads(_python(code))
    assert modes["aten_capability"] == "avx2" and recorded == "canonical"


def _avx512_features() -> str:
    """numpy's AVX-512 dispatch targets this CPU has (to turn off), space-separated; '' on an AVX2 CPU."""
    return _python(
        "from numpy._core._multiarray_umath import __cpu_features__ as f\n"
        "print(' '.join(k for k, v in f.items() if v and (k.startswith('AVX512') or k == 'X86_V4')))"
    )


def _chain(work: Path, *through: str, **extra: str) -> dict[str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "support.numerics_chain", str(work), *through],
        cwd=TESTS,
        env=_clean_env(**extra),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.mark.slow
def test_emulated_cpus_give_the_golden_digests(tmp_path):
    avx512 = _avx512_features()
    variants = {
        "this CPU": {},
        "numpy without AVX-512, one thread": {
            **({"NPY_DISABLE_CPU_FEATURES": avx512} if avx512 else {}),
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        },
        "other kernel modes in the environment": {
            "ATEN_CPU_CAPABILITY": "default",
            "ONEDNN_MAX_CPU_ISA": "SSE41",
            "MKL_CBWR": "AVX2",  # Intel's own branch: another path on other vendors' CPUs
            "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
            "OPENBLAS_CORETYPE": "Sandybridge",
            "OPENBLAS_NUM_THREADS": "2",
            "OMP_NUM_THREADS": "2",
        },
        "native generic kernels": {numerics.NATIVE_SWITCH: "1", "ATEN_CPU_CAPABILITY": "default"},
    }
    control = "native generic kernels"
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {
            # The control stops after extraction: its features already differ (checked below).
            name: pool.submit(_chain, tmp_path / str(i), *(["features"] if name == control else []), **env)
            for i, (name, env) in enumerate(variants.items())
        }
        digests = {name: f.result() for name, f in futures.items()}
    golden = json.loads(GOLDEN.read_text())["chain"]
    for name in list(variants)[:3]:
        assert first_difference(digests[name], golden) is None, f"{name}: {first_difference(digests[name], golden)}"
    # The control: generic kernels change the features, so the digests above could have differed. It is
    # compared with the golden file's stages up to the features only (its chain computed no runs).
    assert not any(k.startswith("runs/") for k in digests[control])
    up_to_features = {k: v for k, v in golden.items() if not k.startswith(("runs/", "table/"))}
    differs = first_difference(digests[control], up_to_features)
    assert differs is not None and differs.startswith("features"), differs


def _crsbench_before_numpy(*options: str, folder: Path) -> bool:
    """Whether a plain pytest run (no xdist, the repository's settings) of a one-test file outside
    tests/ had imported crsbench before numpy when the test ran (sys.modules keeps import order)."""
    probe = folder / "test_order.py"
    probe.write_text(
        "import sys\n\n\ndef test_order():\n    names = list(sys.modules)\n"
        "    print('ORDER', 'crsbench' in names and names.index('crsbench') < names.index('numpy'))\n"
    )
    repo = TESTS.parent
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-c", str(repo / "pyproject.toml"),
         "--rootdir", str(repo), *options, str(probe)],
        cwd=folder, env=_clean_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return "ORDER True" in proc.stdout


def test_a_plain_pytest_run_sets_the_modes_before_a_plugin_loads_numpy(tmp_path):
    # `pytest tests/x.py` without xdist: zarr's pytest plugin imports numpy at start-up, before any
    # conftest; the repository's addopts import crsbench (which sets the modes) before it.
    assert _crsbench_before_numpy(folder=tmp_path)
    # The control: without that option numpy comes first, so the check above could fail.
    assert not _crsbench_before_numpy("-o", "addopts=-ra", folder=tmp_path)
