"""What an encoder costs to run, measured once when its feature set is created (issue 44, points 4-5).

Stored as the set's `cost` attribute (a dict, `COST_ATTR`):
- `params`: parameters of the model as extracted (every tensor of `model.parameters()`).
- `flops_per_image`: torch's own counter (`torch.utils.flop_counter.FlopCounterMode`) over one
  forward of one zero image at the entry's input size, through the depth tap as extraction runs
  it. Its convention: a multiply-add is 2 FLOPs (a linear layer 2*in*out per row, a conv
  2*Cin*Cout*k*k*Hout*Wout per image); biases, norms and activations are not counted.
- `images_per_s`: `TIMED_BATCH` zero images (at most the extraction batch) forwarded through
  the tap, after one untimed warm-up forward: batch / the median wall time of `TIMED_REPEATS`
  forwards (CUDA synchronised). It times the model alone: no decode, perturbation, transfer or write.
- `peak_memory_bytes`: on CUDA, `torch.cuda.max_memory_allocated` over the timed forwards (weights
  included, after a reset of the peak); elsewhere None, with `peak_memory_note` saying why.
- `widths`: embedding width per depth key; `stored_bytes_per_image`: every array of the set as
  stored (compressed) over its images, added when the set completes (`with_stored_bytes`).
- `device`, `dtype`: where and in which compute dtype all of it was measured.

None of it touches the extraction's numerics: the forwards run on separate zero tensors under
`torch.no_grad` with the RNG state forked, and the stored feature arrays never see them.
A set created before this was measured has no `cost`: every field reads "not measured" (NULL).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

import torch
import zarr
from torch.utils.flop_counter import FlopCounterMode

from crsbench.core import NOT_MEASURED

COST_ATTR = "cost"
TIMED_BATCH = 8
TIMED_REPEATS = 3
# The fields that time one run: they differ between two runs that store identical bytes otherwise.
TIMED_FIELDS = ("images_per_s", "peak_memory_bytes")
# Why a CPU peak is NULL: torch keeps no peak of host allocations, and a process RSS would count
# far more than the model (the dataset, the store, the interpreter).
CPU_MEMORY_NOTE = "not measured on cpu"


def count_flops(forward: Callable[[torch.Tensor], object], x: torch.Tensor) -> int:
    """FLOPs of `forward(x)` as torch's FlopCounterMode counts them (a multiply-add is 2)."""
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        forward(x)
    return int(counter.get_total_flops())


def counted_flops(forward: Callable[[torch.Tensor], object], x: torch.Tensor) -> tuple[int | None, str | None]:
    """`count_flops`, or None and why: a model the counter cannot follow is stored "not measured"
    (NULL) rather than stopping its extraction, since the cost is a by-product."""
    try:
        return count_flops(forward, x), None
    except Exception as err:  # any op or hook the counter trips on
        return None, f"not counted: {type(err).__name__}: {err}"


def _fork_rng(dev: torch.device) -> Any:
    """The RNG state (CPU and this CUDA device) restored afterwards: measuring draws nothing from the seeds."""
    return torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else [])


def _sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def images_per_second(forward: Callable[[torch.Tensor], object], x: torch.Tensor) -> float:
    """len(x) over the median wall time of TIMED_REPEATS forwards of x, after one warm-up."""
    dev = x.device
    with torch.no_grad():
        forward(x)
        _sync(dev)
        times = []
        for _ in range(TIMED_REPEATS):
            started = time.perf_counter()
            forward(x)
            _sync(dev)
            times.append(time.perf_counter() - started)
    return float(x.shape[0] / max(statistics.median(times), 1e-12))


def measure_compute(
    forward: Callable[[torch.Tensor], object],
    model: torch.nn.Module,
    input_size: int,
    dtype: torch.dtype,
    dev: torch.device,
    batch_size: int,
    widths: Mapping[str, int],
) -> dict[str, Any]:
    """Every cost field but the stored bytes, measured with `forward` (the depth tap) on `dev` in `dtype`."""
    one = torch.zeros((1, 3, input_size, input_size), dtype=dtype, device=dev)
    batch = torch.zeros((min(batch_size, TIMED_BATCH), 3, input_size, input_size), dtype=dtype, device=dev)
    with _fork_rng(dev):
        flops, flops_note = counted_flops(forward, one)
        if dev.type == "cuda":
            torch.cuda.reset_peak_memory_stats(dev)
        rate = images_per_second(forward, batch)
        peak = int(torch.cuda.max_memory_allocated(dev)) if dev.type == "cuda" else None
    return {
        "params": int(sum(p.numel() for p in model.parameters())),
        "flops_per_image": flops,
        "flops_note": flops_note,
        "images_per_s": rate,
        "timed_batch": int(batch.shape[0]),
        "peak_memory_bytes": peak,
        "peak_memory_note": None if peak is not None else CPU_MEMORY_NOTE,
        "widths": dict(widths),
        "device": str(dev),
        "dtype": str(dtype).removeprefix("torch."),
    }


def stored_bytes(group: zarr.Group) -> int:
    """Bytes of every array in the set's group, as stored (compressed)."""
    return int(sum(node.nbytes_stored() for _, node in group.members(max_depth=None) if isinstance(node, zarr.Array)))


def with_stored_bytes(group: zarr.Group, n_images: int) -> None:
    """Add `stored_bytes_per_image` to the set's cost (a set without a cost stays without one)."""
    cost = group.attrs.get(COST_ATTR)
    if isinstance(cost, dict):
        group.attrs[COST_ATTR] = {**cost, "stored_bytes_per_image": stored_bytes(group) / max(n_images, 1)}


def gflops(value: float | None) -> str:
    """FLOPs as GFLOPs text; "not measured" for None (never 0)."""
    return NOT_MEASURED if value is None else f"{value / 1e9:.3g}"
