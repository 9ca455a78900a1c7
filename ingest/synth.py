"""Drawing the toy images of the embedded suite: pure numpy + PIL, deterministic.

Each renderer takes its own random generator and returns uint8 pixels. The class
signal is deliberately carried by several cues at once (colour, texture frequency,
shape, lesion counts, localized opacities) so random-initialised encoders pick it up
from pooled features, and so blur (texture), contrast (colour), noise, JPEG and
field-of-view crops (peripheral findings) each take some of it away.

This module holds the shared drawing primitives and the dermoscopy and fundus renderers;
chest radiographs are drawn by `synth_cxr`.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

# ---------------------------------------------------------------------------- helpers


@functools.lru_cache(maxsize=8)
def unit_grid(size: int) -> tuple[np.ndarray, np.ndarray]:
    c = (np.arange(size, dtype=np.float32) + 0.5) / size * 2 - 1
    yy, xx = np.meshgrid(c, c, indexing="ij")
    return yy, xx


def smooth_noise(rng: np.random.Generator, size: int, cells: int) -> np.ndarray:
    """Band-limited noise, about unit variance, with `cells` features across the image."""
    small = rng.standard_normal((cells, cells)).astype(np.float32)
    img = Image.fromarray(small, mode="F").resize((size, size), Image.Resampling.BICUBIC)
    out = np.asarray(img, dtype=np.float32)
    result: np.ndarray = out / (out.std() + 1e-6)
    return result


def blob(size: int, cx: float, cy: float, rx: float, ry: float, angle: float = 0.0) -> np.ndarray:
    """A Gaussian bump centred at (cx, cy) in [-1, 1] coordinates."""
    yy, xx = unit_grid(size)
    dx, dy = xx - cx, yy - cy
    ca, sa = np.cos(angle), np.sin(angle)
    u, v = (ca * dx + sa * dy) / rx, (-sa * dx + ca * dy) / ry
    result: np.ndarray = np.exp(-0.5 * (u * u + v * v)).astype(np.float32)
    return result


def disc(size: int, cx: float, cy: float, rx: float, ry: float, edge: float = 0.02) -> np.ndarray:
    """A soft-edged filled ellipse (1 inside, 0 outside)."""
    yy, xx = unit_grid(size)
    d = np.sqrt(((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2)
    return sigmoid((1.0 - d) / max(edge, 1e-3))


def strokes(size: int, paths: list[list[tuple[float, float]]], width: float) -> np.ndarray:
    """Polylines (points in [-1, 1]) drawn into a float mask, slightly softened."""
    canvas = Image.new("L", (size, size), 0)
    draw = ImageDraw.Draw(canvas)
    w = max(1, round(width * size))
    for path in paths:
        pts = [((x + 1) / 2 * size, (y + 1) / 2 * size) for x, y in path]
        draw.line(pts, fill=255, width=w, joint="curve")
    canvas = canvas.filter(ImageFilter.GaussianBlur(radius=max(0.5, size / 256)))
    return np.asarray(canvas, dtype=np.float32) / 255.0


def wander(
    rng: np.random.Generator, start: tuple[float, float], heading: float, steps: int, step: float, turn: float
) -> list[tuple[float, float]]:
    """A smooth random walk: vessels, hairs, wires."""
    x, y = start
    pts = [(x, y)]
    for _ in range(steps):
        heading += rng.normal(0, turn)
        x, y = x + step * np.cos(heading), y + step * np.sin(heading)
        pts.append((float(x), float(y)))
    return pts


def spots(
    size: int,
    rng: np.random.Generator,
    n: int,
    centre: tuple[float, float],
    spread: float,
    radius: tuple[float, float],
    limit: float = 0.85,
) -> np.ndarray:
    """n small Gaussian spots scattered around a centre, kept inside radius `limit`."""
    out = np.zeros((size, size), dtype=np.float32)
    for _ in range(n):
        for _try in range(8):
            x, y = rng.normal(centre[0], spread), rng.normal(centre[1], spread)
            if x * x + y * y < limit * limit:
                break
        r = rng.uniform(*radius)
        out = np.maximum(out, blob(size, x, y, r, r))
    return out


def sigmoid(z: np.ndarray) -> np.ndarray:
    # tanh form: no overflow warnings for large |z|
    return (0.5 * (1.0 + np.tanh(0.5 * z))).astype(np.float32)


def portable_power(img: np.ndarray, exponent: float) -> np.ndarray:
    """`img ** exponent` for a float32 image, with the same bits on every x86-64 CPU.

    numpy computes a float32 power with the CPU's best kernel: on AVX-512 machines Intel's SVML,
    elsewhere its own AVX2 loop, and the two differ in the last bit of ~1 in 5 values, enough to
    change pixels after rounding to uint8 (the MIMIC-CXR stand-in's bytes differed between CPUs;
    docs/METHODS.md §4.3). Computing in float64 and rounding once to float32 gives the correctly
    rounded float32 result whatever float64 kernel ran (their errors are far below a float32 ulp).
    """
    exact = np.power(img.astype(np.float64), float(np.float32(exponent)))
    result: np.ndarray = exact.astype(np.float32)
    return result


def to_uint8(img: np.ndarray) -> np.ndarray:
    result: np.ndarray = (np.clip(img, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    return result


# ------------------------------------------------------------------ dermoscopy (ISIC)

# Per class: lesion RGB, radius, border irregularity, edge softness, texture (amplitude,
# cells) and an extra structure drawn on top. Roughly follows the dermoscopic look.
DERM_STYLE: dict[str, dict[str, Any]] = {
    "MEL": dict(rgb=(0.30, 0.17, 0.13), radius=0.50, irregular=0.30, edge=0.02, tex=(0.45, 10), extra="veil"),
    "NV": dict(rgb=(0.52, 0.33, 0.22), radius=0.36, irregular=0.05, edge=0.03, tex=(0.12, 6), extra="network"),
    "BCC": dict(rgb=(0.85, 0.62, 0.62), radius=0.34, irregular=0.10, edge=0.05, tex=(0.10, 5), extra="vessels"),
    "AK": dict(rgb=(0.80, 0.45, 0.40), radius=0.42, irregular=0.12, edge=0.10, tex=(0.40, 40), extra="scale"),
    "BKL": dict(rgb=(0.66, 0.50, 0.33), radius=0.40, irregular=0.15, edge=0.02, tex=(0.25, 22), extra="milia"),
    "DF": dict(rgb=(0.55, 0.38, 0.30), radius=0.24, irregular=0.04, edge=0.04, tex=(0.10, 4), extra="scar"),
    "VASC": dict(rgb=(0.62, 0.12, 0.22), radius=0.30, irregular=0.06, edge=0.02, tex=(0.15, 8), extra="lacunae"),
    "SCC": dict(rgb=(0.84, 0.50, 0.46), radius=0.38, irregular=0.20, edge=0.04, tex=(0.30, 30), extra="keratin"),
}


def render_derm(rng: np.random.Generator, cls: str, size: int) -> np.ndarray:
    """A dermoscopy-like RGB image of one lesion of class `cls`."""
    style = DERM_STYLE[cls]
    yy, xx = unit_grid(size)
    tone = np.array([0.89, 0.71, 0.60]) * rng.uniform(0.85, 1.05) + rng.normal(0, 0.02, 3)
    skin = tone[None, None, :] * (1 + 0.06 * smooth_noise(rng, size, 3)[..., None])
    skin = skin + 0.02 * smooth_noise(rng, size, 48)[..., None]
    cx, cy = rng.normal(0, 0.08, 2)
    radius = style["radius"] * rng.uniform(0.85, 1.15)
    theta = np.arctan2(yy - cy, xx - cx)
    dist = np.sqrt((xx - cx) ** 2 + (yy - cy) ** 2)
    r_theta = np.ones_like(theta)
    for h in range(2, 7):
        r_theta += style["irregular"] * rng.normal(0, 1) / h * np.cos(h * theta + rng.uniform(0, 2 * np.pi))
    r_theta *= radius
    alpha = sigmoid((r_theta - dist) / style["edge"] / max(radius, 0.1))
    amp, cells = style["tex"]
    rgb = np.clip(np.array(style["rgb"]) + rng.normal(0, 0.03, 3), 0, 1)
    lesion = rgb[None, None, :] * (1 + amp * smooth_noise(rng, size, cells)[..., None])
    img = skin * (1 - alpha[..., None]) + lesion * alpha[..., None]
    img = _derm_extra(rng, style["extra"], img, alpha, (cx, cy), radius, size)
    if rng.random() < 0.3:  # hair: a nuisance shared by all classes
        hairs = [
            wander(rng, (rng.uniform(-1, 1), -1.0), rng.uniform(1.0, 2.1), 30, 0.08, 0.15)
            for _ in range(rng.integers(1, 4))
        ]
        img = img * (1 - 0.7 * strokes(size, hairs, 0.008)[..., None])
    img = img * rng.uniform(0.9, 1.08)
    return to_uint8(img)


def _derm_extra(
    rng: np.random.Generator,
    kind: str,
    img: np.ndarray,
    alpha: np.ndarray,
    centre: tuple[float, float],
    radius: float,
    size: int,
) -> np.ndarray:
    cx, cy = centre
    if kind == "veil":  # blue-white veil and regression: patchy blue-grey
        veil = np.clip(smooth_noise(rng, size, 6), 0, None) * alpha
        img = img * (1 - 0.6 * veil[..., None]) + np.array([0.45, 0.50, 0.62]) * 0.6 * veil[..., None]
    elif kind == "network":  # pigment network: a regular grid of darker lines
        yy, xx = unit_grid(size)
        f = rng.uniform(14, 18)
        grid = (np.abs(np.sin(f * xx)) < 0.25) | (np.abs(np.sin(f * yy)) < 0.25)
        img = img * (1 - 0.25 * (grid * alpha)[..., None])
    elif kind == "vessels":  # arborizing red vessels
        paths = [
            wander(
                rng,
                (cx + rng.normal(0, radius / 3), cy + rng.normal(0, radius / 3)),
                rng.uniform(0, 2 * np.pi),
                10,
                radius / 6,
                0.6,
            )
            for _ in range(5)
        ]
        v = strokes(size, paths, 0.012) * alpha
        img = img * (1 - v[..., None]) + np.array([0.75, 0.10, 0.15]) * v[..., None]
    elif kind == "scale":  # rough whitish scale
        s = np.clip(smooth_noise(rng, size, 60), 0.8, None) - 0.8
        img = img + 0.5 * (s * alpha)[..., None]
    elif kind == "milia":  # milia-like bright cysts
        m = spots(size, rng, 12, (cx, cy), radius / 2, (0.015, 0.03))
        img = img + 0.45 * (m * alpha)[..., None]
    elif kind == "scar":  # central white scar-like patch with a brown ring
        w = blob(size, cx, cy, radius * 0.45, radius * 0.45)
        img = img * (1 - 0.8 * w[..., None]) + np.array([0.93, 0.88, 0.85]) * 0.8 * w[..., None]
    elif kind == "lacunae":  # red-purple lacunae
        m = spots(size, rng, 14, (cx, cy), radius / 2, (0.03, 0.06))
        img = img * (1 - 0.5 * (m * alpha)[..., None]) + np.array([0.40, 0.02, 0.18]) * 0.5 * (m * alpha)[..., None]
    elif kind == "keratin":  # central white-yellow keratin mass
        k = (
            np.clip(
                blob(size, cx, cy, radius * 0.5, radius * 0.4, rng.uniform(0, np.pi))
                + 0.3 * smooth_noise(rng, size, 20),
                0,
                1,
            )
            * alpha
        )
        img = img * (1 - 0.7 * k[..., None]) + np.array([0.95, 0.92, 0.75]) * 0.7 * k[..., None]
    return img


# ---------------------------------------------------------------------- fundus (APTOS)

# Expected lesion counts per DR grade 0..4: microaneurysms, haemorrhages, hard exudates,
# cotton-wool spots, new-vessel tufts. Counts grow with the grade.
FUNDUS_LESIONS: dict[str, tuple[float, ...]] = {
    "microaneurysm": (0, 6, 14, 22, 28),
    "haemorrhage": (0, 0, 4, 10, 14),
    "exudate": (0, 0, 8, 14, 18),
    "cotton_wool": (0, 0, 0, 3, 5),
    "new_vessels": (0, 0, 0, 0, 7),
}


def render_fundus(rng: np.random.Generator, grade: int, size: int) -> np.ndarray:
    """A fundus-photo-like RGB image with diabetic-retinopathy lesions of one grade."""
    yy, xx = unit_grid(size)
    fov = disc(size, 0, 0, 0.92, 0.92, 0.01)
    base = np.array([0.78, 0.33, 0.14]) * rng.uniform(0.8, 1.1) + rng.normal(0, 0.02, 3)
    radial = 1 - 0.35 * (xx**2 + yy**2)
    img = base[None, None, :] * (radial * (1 + 0.05 * smooth_noise(rng, size, 5)))[..., None]
    side = rng.choice([-1.0, 1.0])
    dx, dy = side * rng.uniform(0.38, 0.5), rng.normal(0, 0.05)
    od = disc(size, dx, dy, 0.12, 0.13, 0.08)
    img = img * (1 - od[..., None]) + np.array([0.98, 0.85, 0.55]) * od[..., None]
    macula = blob(size, -side * 0.1, 0.0, 0.1, 0.1)
    img = img * (1 - 0.35 * macula[..., None])
    vessels = [
        wander(rng, (dx, dy), a + rng.normal(0, 0.2), 18, 0.07, 0.15)
        for a in np.linspace(0, 2 * np.pi, 6, endpoint=False)
    ]
    v = strokes(size, vessels, 0.012)
    img = img * (1 - 0.45 * v[..., None]) + np.array([0.45, 0.05, 0.05]) * 0.45 * v[..., None]
    counts = {k: rng.poisson(lam[grade]) if lam[grade] else 0 for k, lam in FUNDUS_LESIONS.items()}
    if grade > 0:
        counts["microaneurysm"] = max(counts["microaneurysm"], 2)
    red = np.maximum(
        spots(size, rng, counts["microaneurysm"], (0, 0), 0.4, (0.008, 0.014)),
        spots(size, rng, counts["haemorrhage"], (0, 0), 0.4, (0.025, 0.05)),
    )
    img = img * (1 - 0.8 * red[..., None]) + np.array([0.35, 0.02, 0.02]) * 0.8 * red[..., None]
    ex = spots(size, rng, counts["exudate"], (-side * 0.15, 0), 0.3, (0.01, 0.025))
    img = img * (1 - 0.9 * ex[..., None]) + np.array([0.98, 0.92, 0.45]) * 0.9 * ex[..., None]
    cw = spots(size, rng, counts["cotton_wool"], (0, 0), 0.35, (0.04, 0.07))
    img = img * (1 - 0.5 * cw[..., None]) + np.array([0.95, 0.85, 0.78]) * 0.5 * cw[..., None]
    if counts["new_vessels"]:
        tufts = [
            wander(rng, (dx + rng.normal(0, 0.1), dy + rng.normal(0, 0.1)), rng.uniform(0, 6.3), 12, 0.025, 1.2)
            for _ in range(counts["new_vessels"])
        ]
        nv = strokes(size, tufts, 0.006)
        img = img * (1 - 0.7 * nv[..., None]) + np.array([0.85, 0.10, 0.10]) * 0.7 * nv[..., None]
    img = img * fov[..., None] * rng.uniform(0.85, 1.1)
    return to_uint8(img)
