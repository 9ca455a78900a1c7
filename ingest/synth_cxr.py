"""Drawing the toy chest radiographs of the embedded suite (CheXpert and MIMIC-CXR), deterministic.

Anatomy (lungs, ribs, heart, mediastinum, diaphragm) is placed with a per-image zoom and offset;
each finding adds its own localized cue at its strength; the site sets the acquisition chain.
Built on the drawing primitives of `synth`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from crsbench.ingest.synth import (
    blob,
    disc,
    portable_power,
    sigmoid,
    smooth_noise,
    strokes,
    to_uint8,
    unit_grid,
    wander,
)


def render_cxr(rng: np.random.Generator, findings: dict[str, float], view: str, site: str, size: int) -> np.ndarray:
    """A chest-radiograph-like grayscale image.

    `findings` maps a label to its visual strength (1 present, about 0.5 uncertain);
    `view` is 'frontal' or 'lateral'; `site` ('chexpert' | 'mimic') sets the
    acquisition: MIMIC images get another intensity curve, zoom, noise and a border.
    """
    zoom = rng.uniform(0.95, 1.05) * (1.1 if site == "mimic" else 1.0)
    ox, oy = rng.normal(0, 0.03, 2)

    def g(x: float, y: float) -> tuple[float, float]:  # anatomy placement
        return (ox + x / zoom, oy + y / zoom)

    s = 1.0 / zoom
    img = np.full((size, size), 0.06, dtype=np.float32)
    img += 0.42 * disc(size, *g(0, 0.05), 0.86 * s, 0.92 * s, 0.05)
    if view == "frontal":
        lungs = [(*g(-0.38, -0.05), 0.29 * s, 0.58 * s), (*g(0.38, -0.05), 0.29 * s, 0.58 * s)]
        cardio = 1 + 0.6 * findings.get("Cardiomegaly", 0)
        heart = (*g(0.1, 0.33), 0.26 * s * cardio, 0.22 * s * (1 + 0.2 * (cardio - 1)))
        medi_w = 0.11 * (1 + 1.3 * findings.get("Enlarged Cardiomediastinum", 0))
    else:
        lungs = [(*g(-0.08, -0.08), 0.5 * s, 0.6 * s)]
        cardio = 1 + 0.35 * findings.get("Cardiomegaly", 0)
        heart = (*g(-0.38, 0.3), 0.24 * s * cardio, 0.26 * s * cardio)
        medi_w = 0.0
    lung_mask = np.zeros_like(img)
    for lx, ly, rx, ry in lungs:
        lung_mask = np.maximum(lung_mask, disc(size, lx, ly, rx, ry, 0.06))
    img -= 0.26 * lung_mask
    yy, xx = unit_grid(size)
    ribs = (np.cos(22 * (yy + 0.25 * (xx - ox) ** 2) * zoom) > 0.6).astype(np.float32)
    img += 0.05 * ribs * lung_mask
    img += 0.025 * smooth_noise(rng, size, 30) * lung_mask
    if view == "frontal":
        mx, my = g(0, -0.1)
        band = disc(size, mx, my, medi_w * s, 0.7 * s, 0.1)
        img = np.maximum(img, 0.48 * band)
    else:
        sx, sy = g(0.55, 0.0)
        img += 0.22 * disc(size, sx, sy, 0.08 * s, 0.8 * s, 0.05) * (0.8 + 0.2 * (np.cos(40 * yy) > 0))
    img = np.maximum(img, 0.45 * disc(size, *heart, 0.05))
    dx, dy = g(0, 0.92)
    img = np.maximum(img, 0.46 * disc(size, dx, dy, 0.85 * s, 0.3 * s, 0.05))
    img = _cxr_findings(rng, img, findings, lungs, size, s)
    return _acquire(rng, img, site, size)


Lung = tuple[float, float, float, float]  # centre x, centre y, radius x, radius y
# Draws one finding's cue at strength `a` onto `img` (in place where the arithmetic allows) and
# returns the image: (rng, img, a, lungs, size, s) -> img, s the anatomy scale 1 / zoom.
FindingCue = Callable[[np.random.Generator, np.ndarray, float, list[Lung], int, float], np.ndarray]


def _pick(rng: np.random.Generator, lungs: list[Lung]) -> Lung:
    result: Lung = lungs[int(rng.integers(len(lungs)))]
    return result


def _outer_side(lx: float) -> float:
    """Which way is outward (towards the chest wall) from a lung centred at `lx`."""
    # np.sign's NumPy scalar is kept, not made a Python float: under NumPy's promotion rules the
    # two differ in dtype once combined with the float32 canvas, and the images' bytes with them.
    side: float = np.sign(lx) if abs(lx) > 0.1 else -1.0
    return side


def _lung_opacity(
    rng: np.random.Generator, img: np.ndarray, a: float, lungs: list[Lung], size: int, s: float
) -> np.ndarray:
    lx, ly, rx, ry = _pick(rng, lungs)
    img += 0.3 * a * blob(size, lx + rng.normal(0, rx / 4), ly + rng.normal(0, ry / 4), 0.22 * s, 0.28 * s)
    return img


def _lung_lesion(
    rng: np.random.Generator, img: np.ndarray, a: float, lungs: list[Lung], size: int, s: float
) -> np.ndarray:
    for _ in range(int(rng.integers(1, 3))):
        lx, ly, rx, ry = _pick(rng, lungs)
        r = rng.uniform(0.06, 0.09) * s
        img = np.maximum(
            img, img + 0.45 * a * disc(size, lx + rng.normal(0, rx / 3), ly + rng.normal(0, ry / 3), r, r, 0.04)
        )
    return img


def _edema(rng: np.random.Generator, img: np.ndarray, a: float, lungs: list[Lung], size: int, s: float) -> np.ndarray:
    streaks = np.clip(smooth_noise(rng, size, 45), 0, None)
    for lx, ly, _rx, _ry in lungs:
        hilum = blob(size, lx * 0.7, ly + 0.05, 0.22 * s, 0.3 * s)
        img += a * hilum * (0.15 + 0.2 * streaks)
    return img


def _consolidation(
    rng: np.random.Generator, img: np.ndarray, a: float, lungs: list[Lung], size: int, s: float
) -> np.ndarray:
    lx, ly, rx, ry = _pick(rng, lungs)
    img += 0.45 * a * disc(size, lx, ly + ry * 0.45, rx * 0.75, ry * 0.35, 0.08)
    return img


def _pneumonia(
    rng: np.random.Generator, img: np.ndarray, a: float, lungs: list[Lung], size: int, s: float
) -> np.ndarray:
    lx, ly, rx, ry = _pick(rng, lungs)
    patch = np.clip(smooth_noise(rng, size, 14), 0.3, None) - 0.3
    img += 0.45 * a * patch * disc(size, lx, ly + rng.normal(0, ry / 4), rx * 0.8, ry * 0.45, 0.1)
    return img


def _atelectasis(
    rng: np.random.Generator, img: np.ndarray, a: float, lungs: list[Lung], size: int, s: float
) -> np.ndarray:
    lx, ly, rx, ry = _pick(rng, lungs)
    img += 0.4 * a * blob(size, lx, ly + ry * 0.55, rx * 0.8, 0.035 * s, rng.normal(0, 0.15))
    return img


def _pneumothorax(
    rng: np.random.Generator, img: np.ndarray, a: float, lungs: list[Lung], size: int, s: float
) -> np.ndarray:
    lx, ly, rx, ry = _pick(rng, lungs)
    side = _outer_side(lx)
    region = disc(size, lx + side * rx * 0.45, ly - ry * 0.45, rx * 0.5, ry * 0.45, 0.03)
    img = img * (1 - 0.9 * a * region) + 0.02 * a * region
    rim = np.clip(region * (1 - region) * 4, 0, 1)
    img += 0.3 * a * rim
    return img


def _pleural_effusion(
    rng: np.random.Generator, img: np.ndarray, a: float, lungs: list[Lung], size: int, s: float
) -> np.ndarray:
    for lx, ly, rx, ry in lungs if rng.random() < 0.4 else [_pick(rng, lungs)]:
        yy, xx = unit_grid(size)
        level = ly + ry * (0.45 - 0.25 * a) - 0.35 * np.abs(xx - lx) ** 2
        fluid = sigmoid((yy - level) / 0.02) * disc(size, lx, ly, rx * 1.05, ry * 1.05, 0.04)
        img = img * (1 - a * fluid) + 0.52 * a * fluid
    return img


def _pleural_other(
    rng: np.random.Generator, img: np.ndarray, a: float, lungs: list[Lung], size: int, s: float
) -> np.ndarray:
    lx, ly, rx, ry = _pick(rng, lungs)
    img += 0.4 * a * blob(size, lx + _outer_side(lx) * rx * 0.92, ly, 0.04 * s, ry * 0.6)
    return img


def _fracture(
    rng: np.random.Generator, img: np.ndarray, a: float, lungs: list[Lung], size: int, s: float
) -> np.ndarray:
    lx, ly, rx, ry = _pick(rng, lungs)
    x, y = lx + _outer_side(lx) * rx * 0.85, ly + rng.uniform(-0.4, 0.3) * ry
    img += 0.6 * a * blob(size, x, y, 0.05 * s, 0.03 * s)
    img -= 0.2 * a * blob(size, x + 0.03, y, 0.008 * s, 0.04 * s)
    return img


def _support_devices(
    rng: np.random.Generator, img: np.ndarray, a: float, lungs: list[Lung], size: int, s: float
) -> np.ndarray:
    tube = [wander(rng, (rng.normal(0, 0.04), -1.0), np.pi / 2 + rng.normal(0, 0.05), 14, 0.08, 0.05)]
    if rng.random() < 0.6:
        tube.append(wander(rng, (rng.uniform(-0.8, -0.5), -0.9), 1.2, 16, 0.08, 0.12))
    img = np.maximum(img, 0.95 * a * strokes(size, tube, 0.012))
    for _ in range(int(rng.integers(1, 4))):
        x, y = rng.uniform(-0.7, 0.7), rng.uniform(-0.8, -0.3)
        ring = disc(size, x, y, 0.04, 0.04, 0.02) - disc(size, x, y, 0.025, 0.025, 0.02)
        img = np.maximum(img, 0.95 * a * np.clip(ring, 0, 1))
    return img


# Drawn in this order, each from the same generator: the order is part of every image's bytes.
FINDING_CUES: tuple[tuple[str, FindingCue], ...] = (
    ("Lung Opacity", _lung_opacity),
    ("Lung Lesion", _lung_lesion),
    ("Edema", _edema),
    ("Consolidation", _consolidation),
    ("Pneumonia", _pneumonia),
    ("Atelectasis", _atelectasis),
    ("Pneumothorax", _pneumothorax),
    ("Pleural Effusion", _pleural_effusion),
    ("Pleural Other", _pleural_other),
    ("Fracture", _fracture),
    ("Support Devices", _support_devices),
)


def _cxr_findings(
    rng: np.random.Generator, img: np.ndarray, f: dict[str, float], lungs: list[Lung], size: int, s: float
) -> np.ndarray:
    """Each finding of non-zero strength in `f` adds its cue (Cardiomegaly and the mediastinum
    are drawn with the anatomy instead)."""
    for name, cue in FINDING_CUES:
        if a := float(f.get(name, 0.0)):
            img = cue(rng, img, a, lungs, size, s)
    return img


def _acquire(rng: np.random.Generator, img: np.ndarray, site: str, size: int) -> np.ndarray:
    img = np.clip(img, 0, 1)
    if site == "mimic":
        # Another detector and processing chain: a harder intensity curve, more noise,
        # a collimation border and a burnt-in side marker.
        img = 0.08 + 0.8 * portable_power(img, 0.7)
        img += rng.normal(0, 0.035, img.shape).astype(np.float32)
        b = max(2, size // 16)
        img[:b, :], img[-b:, :], img[:, :b], img[:, -b:] = 0.0, 0.0, 0.0, 0.0
        m = max(3, size // 12)
        img[b + 2 : b + 2 + m, -b - 2 - m : -b - 2] = 0.97
    else:
        img += rng.normal(0, 0.012, img.shape).astype(np.float32)
    img = img * rng.uniform(0.92, 1.06)
    return to_uint8(img)
