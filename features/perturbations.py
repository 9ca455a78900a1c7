"""Seeded image perturbations (METHODS.md §2.3 table): a reference and a batched torch path.

`perturb(image, image_id, perturbation, severity)` is the reference: numpy / PIL on one
uint8 HxWxC image (rician borrows torch's float64 log/cos/sin, below). `perturb_batch` is
the accelerated path used during extraction (torch, any device, a whole batch at once).
They agree exactly, by construction:

* gaussian_blur, contrast, fov_crop run the same float32 element-wise operations in the
  same order (shared kernel weights and interpolation plans), and IEEE-754 makes each of
  +, -, *, / correctly rounded on every backend; no fused ops are used; sqrt is taken where
  it is correctly rounded (`noise.sqrt32`);
* jpeg is the same PIL codec call in both paths;
* rician draws its noise from a counter-based hash (`noise.uniforms`) computed with integer
  operations that numpy and torch evaluate identically; the float64 Box-Muller transform
  (log, cos, sin) is torch's in both paths (numpy's float64 cos/sin are scalar libm calls
  on AVX2 machines, ~4x slower than torch's vectorised ones), so on a CPU the two agree
  exactly; on an accelerator its own log/cos/sin may differ by one float64 ulp.

Stated tolerance (tested): identical bytes for every perturbation on a CPU; on an
accelerator a rician pixel may differ by at most 1 grey level and in practice none does
(likewise against numpy's own libm: tested). Randomness is keyed by
SHA-256(`image_id|perturbation|severity`), so the same call gives the same bytes in any
process on any machine.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import Any, TypeAlias

import numpy as np
import torch
from PIL import Image

from crsbench.core import CLEAN, PERTURBATION_PLUGINS, CrsbenchError, Registry
from crsbench.features.noise import RICIAN_PIECE, float32_scalar, gaussian_pair, key_words, sqrt32

REFERENCE_SIZE = 224  # blur sigmas are given at 224 px and scale with the image's short side
RICIAN_TOLERANCE = 1  # grey levels; every other perturbation is exact


@dataclasses.dataclass(frozen=True)
class Perturbation:
    name: str
    levels: dict[int, float]  # severity -> the table's parameter
    reference: Callable[[np.ndarray, float, bytes], np.ndarray]  # HxWxC uint8 -> same
    batched: Callable[[torch.Tensor, float, list[bytes]], torch.Tensor]  # BxHxWxC uint8
    on_cpu: bool = False  # the batched path runs on the CPU whatever the device (codecs)
    description: str = ""  # one line: what it does and what its level parameter is (the class docstring)


def _entry(name: str, cls: type, levels: dict[int, float], on_cpu: bool = False) -> Perturbation:
    doc = (cls.__doc__ or "").strip().splitlines()
    return Perturbation(name, levels, cls.reference, cls.batched, on_cpu, doc[0] if doc else "")  # type: ignore[attr-defined]


# The built-in entries below are registered as this module loads; their names and severities are core's
# PERTURBATIONS x SEVERITIES (the protocol). Plugins add theirs; `features.conditions` derives the conditions.
# `features.suites` is loaded with it: a corruption suite's perturbations ('<suite>.<name>') are
# registered on demand, the first time one is named in a process (its resolver).
REGISTRY: Registry[Perturbation] = Registry(
    "perturbation", make=_entry, builtins=("crsbench.features.suites",), entry_point_group=PERTURBATION_PLUGINS
)


def register_perturbation(name: str, levels: dict[int, float], on_cpu: bool = False) -> Callable[[type], type]:
    """Class decorator: its `reference` and `batched` static methods become perturbation `name`."""
    return REGISTRY.register(name, levels=levels, on_cpu=on_cpu)


def seed_key(image_id: str, perturbation: str, severity: int) -> bytes:
    return hashlib.sha256(f"{image_id}|{perturbation}|{severity}".encode()).digest()


def parse_condition(condition: str) -> tuple[str, int] | None:
    """'jpeg-s2' -> ('jpeg', 2); 'clean' -> None."""
    if condition == CLEAN:
        return None
    name, _, sev = condition.rpartition("-s")
    if name not in REGISTRY or not sev.isdigit() or int(sev) not in REGISTRY.get(name).levels:
        raise CrsbenchError(f"unknown condition {condition!r}")
    return name, int(sev)


def _lookup(perturbation: str, severity: int) -> tuple[Perturbation, float]:
    entry = REGISTRY.get(perturbation)
    if severity not in entry.levels:
        raise CrsbenchError(f"severity {severity!r} of {perturbation}; expected one of {tuple(sorted(entry.levels))}")
    return entry, entry.levels[severity]


def perturb(image: np.ndarray, image_id: str, perturbation: str, severity: int) -> np.ndarray:
    """The reference perturbation of one uint8 image (HxWxC or HxW); returns the same shape."""
    image = np.asarray(image)
    if image.dtype != np.uint8 or image.ndim not in (2, 3) or image.size == 0:
        raise CrsbenchError(f"perturb expects a non-empty uint8 HxW or HxWxC image, got {image.dtype} {image.shape}")
    entry, level = _lookup(perturbation, severity)
    hwc = image[:, :, None] if image.ndim == 2 else image
    try:
        out = entry.reference(np.ascontiguousarray(hwc), level, seed_key(image_id, perturbation, severity))
    except Exception as exc:  # a plugin's or a suite's own error: named with the image, in one line
        raise CrsbenchError(failure(perturbation, severity, image_id, exc)) from None
    return out[:, :, 0] if image.ndim == 2 else out


def failure(perturbation: str, severity: int, image_id: str, exc: BaseException) -> str:
    """One line: which perturbation failed on which image, and its error."""
    said = str(exc).splitlines()[0] if str(exc) else ""
    return (
        f"perturbation {perturbation} (severity {severity}) failed on image {image_id!r}: {type(exc).__name__}: {said}"
    )


def perturb_batch(
    images: torch.Tensor, image_ids: Sequence[str], perturbation: str, severity: int, backend: str = "auto"
) -> torch.Tensor:
    """The batched path: uint8 [B, H, W, C] on any device -> perturbed, same device.

    backend "torch" runs the batched torch kernels (where the tensors are); "numpy" runs
    the reference per image on CPU threads; "auto" picks torch on accelerators and numpy
    on the CPU, where numpy's element-wise loops are the faster of the two.
    """
    if images.dtype != torch.uint8 or images.ndim != 4 or images.numel() == 0 or len(image_ids) != images.shape[0]:
        raise CrsbenchError(
            f"perturb_batch expects non-empty uint8 [B, H, W, C] and one id per image, "
            f"got {images.dtype} {tuple(images.shape)} and {len(image_ids)} ids"
        )
    entry, level = _lookup(perturbation, severity)
    if backend == "auto":
        backend = "numpy" if images.device.type == "cpu" else "torch"
    if backend == "numpy":  # the reference per image (`perturb` keys each image itself)
        arrays = images.cpu().numpy()
        out = list(
            _CODEC_POOL.map(
                lambda a_i: perturb(a_i[0], a_i[1], perturbation, severity), zip(arrays, image_ids, strict=True)
            )
        )
        return torch.from_numpy(np.stack(out)).to(images.device)
    if backend != "torch":
        raise CrsbenchError(f"unknown perturbation backend {backend!r}")
    keys = [seed_key(i, perturbation, severity) for i in image_ids]
    try:
        if entry.on_cpu:
            return entry.batched(images.cpu(), level, keys).to(images.device)
        return entry.batched(images, level, keys)
    except CrsbenchError:
        raise
    except Exception:  # find the image it failed on: the reference path names it
        return perturb_batch(images, image_ids, perturbation, severity, backend="numpy")


# The kernels below run one code path on numpy arrays (the reference) and on torch tensors (the
# batched path); `xp` is the backend module. Neither library's types describe the other's, so an
# array of either backend is typed as the union's common ground, Any.
_Array: TypeAlias = Any


def _to_uint8(x: _Array, xp: ModuleType) -> _Array:
    """Round half to even and clip, identically in numpy and torch."""
    if xp is np:
        return np.clip(np.rint(x), 0, 255).astype(np.uint8)
    return torch.clamp(torch.round(x), 0, 255).to(torch.uint8)


# -- gaussian blur -------------------------------------------------------------------------------


def blur_kernel(sigma_at_224: float, height: int, width: int) -> np.ndarray:
    """Normalised 1-D Gaussian taps (float32), radius ceil(3 sigma), sigma scaled to the image."""
    sigma = sigma_at_224 * min(height, width) / REFERENCE_SIZE
    radius = min(max(1, math.ceil(3 * sigma)), min(height, width) - 1)
    taps = np.exp(-(np.arange(-radius, radius + 1, dtype=np.float64) ** 2) / (2 * sigma * sigma))
    normalised: np.ndarray = (taps / taps.sum()).astype(np.float32)
    return normalised


def _blur_axis(x: _Array, taps: Sequence[Any], axis: int, xp: ModuleType) -> _Array:
    """Separable correlation along `axis` with mirror padding; taps accumulated in order."""
    r = len(taps) // 2
    n = x.shape[axis]
    if xp is np:
        return _blur_axis_numpy(x, taps, axis)
    idx = torch.arange(-r, n + r, device=x.device).abs()
    idx = torch.where(idx > n - 1, 2 * (n - 1) - idx, idx)
    padded = x.index_select(axis, idx)

    def take(k: int) -> torch.Tensor:
        narrowed: torch.Tensor = padded.narrow(axis, k, n)
        return narrowed

    # Symmetric taps: centre first, then each mirrored pair summed before its multiply.
    acc = take(r) * taps[r]
    for j in range(1, r + 1):
        acc = acc + (take(r + j) + take(r - j)) * taps[r + j]
    return acc


def _blur_axis_numpy(x: np.ndarray, taps: Sequence[Any], axis: int) -> np.ndarray:
    """The same sums and products in the same order, on views and in place: the CPU hot path
    (fresh temporaries per tap cost more than the arithmetic at these sizes)."""
    r, n = len(taps) // 2, x.shape[axis]
    pad = [(0, 0)] * x.ndim
    pad[axis] = (r, r)
    padded = np.pad(x, pad, mode="reflect")

    def take(k: int) -> np.ndarray:
        index = [slice(None)] * x.ndim
        index[axis] = slice(k, k + n)
        return padded[tuple(index)]

    acc = np.multiply(take(r), taps[r])
    pair = np.empty_like(acc)
    for j in range(1, r + 1):
        np.add(take(r + j), take(r - j), out=pair)
        pair *= taps[r + j]
        acc += pair
    summed: np.ndarray = acc
    return summed


@register_perturbation("gaussian_blur", {1: 1.0, 2: 2.0, 3: 4.0})
class GaussianBlur:
    """Gaussian blur; level: sigma in pixels at 224 px, scaled with the image's short side."""

    @staticmethod
    def reference(img: np.ndarray, sigma: float, key: bytes) -> np.ndarray:
        taps = [np.float32(t) for t in blur_kernel(sigma, img.shape[0], img.shape[1])]
        x = img.astype(np.float32)
        out: np.ndarray = _to_uint8(_blur_axis(_blur_axis(x, taps, 1, np), taps, 0, np), np)
        return out

    @staticmethod
    def batched(imgs: torch.Tensor, sigma: float, keys: list[bytes]) -> torch.Tensor:
        kernel = blur_kernel(sigma, imgs.shape[1], imgs.shape[2])
        taps = [torch.tensor(t, dtype=torch.float32, device=imgs.device) for t in kernel]
        x = imgs.to(torch.float32)
        out: torch.Tensor = _to_uint8(_blur_axis(_blur_axis(x, taps, 2, torch), taps, 1, torch), torch)
        return out


# -- jpeg -----------------------------------------------------------------------------------------


def _jpeg_one(img: np.ndarray, quality: int) -> np.ndarray:
    pil = Image.fromarray(img[:, :, 0] if img.shape[2] == 1 else img)
    buf = io.BytesIO()
    pil.save(buf, format="JPEG", quality=int(quality))
    out = np.array(Image.open(io.BytesIO(buf.getvalue())).convert(pil.mode))
    return out.reshape(img.shape)


_CODEC_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="crsbench-jpeg")


@register_perturbation("jpeg", {1: 30, 2: 15, 3: 5}, on_cpu=True)
class Jpeg:
    """JPEG re-encoding with PIL; level: the JPEG quality (lower is stronger)."""

    @staticmethod
    def reference(img: np.ndarray, quality: float, key: bytes) -> np.ndarray:
        return _jpeg_one(img, int(quality))

    @staticmethod
    def batched(imgs: torch.Tensor, quality: float, keys: list[bytes]) -> torch.Tensor:
        arrays = imgs.numpy()
        # PIL releases the GIL while coding, so threads give real parallelism here.
        out = list(_CODEC_POOL.map(lambda a: _jpeg_one(a, int(quality)), arrays))
        return torch.from_numpy(np.stack(out))


# -- contrast -------------------------------------------------------------------------------------


@register_perturbation("contrast", {1: 0.7, 2: 0.5, 3: 0.3})
class Contrast:
    """Contrast reduction towards the image mean; level: the contrast factor c in (x - m) c + m."""

    @staticmethod
    def reference(img: np.ndarray, c: float, key: bytes) -> np.ndarray:
        m = np.float32(img.mean(dtype=np.float64))
        x = img.astype(np.float32)
        out: np.ndarray = _to_uint8((x - m) * np.float32(c) + m, np)
        return out

    @staticmethod
    def batched(imgs: torch.Tensor, c: float, keys: list[bytes]) -> torch.Tensor:
        # The integer sum is exact, and sum / n in float64 is correctly rounded as in numpy.
        sums = imgs.to(torch.int64).flatten(1).sum(dim=1).to(torch.float64)
        m = (sums / imgs[0].numel()).to(torch.float32).view(-1, 1, 1, 1)
        x = imgs.to(torch.float32)
        cc = torch.tensor(c, dtype=torch.float32, device=imgs.device)
        out: torch.Tensor = _to_uint8((x - m) * cc + m, torch)
        return out


# -- rician noise ---------------------------------------------------------------------------------


def _rician(x: _Array, sigma: float, nr: _Array, ni: _Array, xp: ModuleType) -> _Array:
    """x' = sqrt((x + n_r)^2 + n_i^2) on [0, 1] intensities, back to uint8."""
    s = float32_scalar(sigma, x, xp)
    a = x + nr * s
    b = ni * s
    return _to_uint8(sqrt32(a * a + b * b, xp) * float32_scalar(255, x, xp), xp)


@register_perturbation("rician", {1: 0.03, 2: 0.06, 3: 0.12})
class Rician:
    """Rician noise on [0, 1] intensities; level: the noise sigma, drawn from the SHA-256 key."""

    @staticmethod
    def reference(img: np.ndarray, sigma: float, key: bytes) -> np.ndarray:
        k0, k1 = key_words(key)
        flat = img.reshape(-1)
        out = np.empty_like(flat)
        # Element-wise, so pieces give the same bytes; a piece stays in cache, and at most
        # torch's grain size it runs on the calling thread (this runs beside the forward).
        for start in range(0, flat.size, RICIAN_PIECE):
            stop = min(start + RICIAN_PIECE, flat.size)
            z0, z1 = gaussian_pair(np.arange(start, stop, dtype=np.uint32), k0, k1, np)
            x = flat[start:stop].astype(np.float32) / np.float32(255)
            out[start:stop] = _rician(x, sigma, z0.astype(np.float32), z1.astype(np.float32), np)
        return out.reshape(img.shape)

    @staticmethod
    def batched(imgs: torch.Tensor, sigma: float, keys: list[bytes]) -> torch.Tensor:
        n = imgs[0].numel()
        counter = torch.arange(n, dtype=torch.int64, device=imgs.device).unsqueeze(0)
        words = torch.tensor([key_words(k) for k in keys], dtype=torch.int64, device=imgs.device)
        out = torch.empty_like(imgs)
        step = max(1, (1 << 24) // n)  # bound the int64 temporaries to ~16M elements
        for start in range(0, imgs.shape[0], step):
            sl = slice(start, start + step)
            k0, k1 = words[sl, :1], words[sl, 1:]
            z0, z1 = gaussian_pair(counter, k0, k1, torch)
            x = imgs[sl].reshape(z0.shape[0], -1).to(torch.float32) / float32_scalar(255, imgs, torch)
            res = _rician(x, sigma, z0.to(torch.float32), z1.to(torch.float32), torch)
            out[sl] = res.view_as(imgs[sl])
        return out


# -- field-of-view crop --------------------------------------------------------------------------


def linear_plan(kept: int, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Source indices and float32 weights to resize `kept` samples to `size` (half-pixel centres)."""
    src = (np.arange(size, dtype=np.float64) + 0.5) * (kept / size) - 0.5
    src = np.clip(src, 0.0, kept - 1)
    i0 = np.floor(src).astype(np.int64)
    i1 = np.minimum(i0 + 1, kept - 1)
    w1 = (src - i0).astype(np.float32)
    w0 = (np.float32(1) - w1).astype(np.float32)
    return i0, i1, w0, w1


def crop_box(size: int, keep: float) -> tuple[int, int]:
    kept = max(1, math.floor(size * keep + 0.5))
    return (size - kept) // 2, kept


def _resize_axis(
    x: _Array, plan: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], axis: int, xp: ModuleType
) -> _Array:
    i0, i1, w0, w1 = plan
    shape = [1] * x.ndim
    shape[axis] = -1
    if xp is np:
        return np.take(x, i0, axis=axis) * w0.reshape(shape) + np.take(x, i1, axis=axis) * w1.reshape(shape)
    dev = x.device

    def t(a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(a).to(dev)

    return x.index_select(axis, t(i0)) * t(w0).view(shape) + x.index_select(axis, t(i1)) * t(w1).view(shape)


@register_perturbation("fov_crop", {1: 0.90, 2: 0.75, 3: 0.60})
class FovCrop:
    """Field-of-view crop, centred, resized back bilinearly; level: the kept fraction of each side."""

    @staticmethod
    def reference(img: np.ndarray, keep: float, key: bytes) -> np.ndarray:
        (top, kh), (left, kw) = crop_box(img.shape[0], keep), crop_box(img.shape[1], keep)
        x = img[top : top + kh, left : left + kw].astype(np.float32)
        x = _resize_axis(x, linear_plan(kh, img.shape[0]), 0, np)
        out: np.ndarray = _to_uint8(_resize_axis(x, linear_plan(kw, img.shape[1]), 1, np), np)
        return out

    @staticmethod
    def batched(imgs: torch.Tensor, keep: float, keys: list[bytes]) -> torch.Tensor:
        h, w = imgs.shape[1], imgs.shape[2]
        (top, kh), (left, kw) = crop_box(h, keep), crop_box(w, keep)
        x = imgs[:, top : top + kh, left : left + kw].to(torch.float32)
        x = _resize_axis(x, linear_plan(kh, h), 1, torch)
        out: torch.Tensor = _to_uint8(_resize_axis(x, linear_plan(kw, w), 2, torch), torch)
        return out
