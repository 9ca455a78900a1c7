"""Drawing the toy images of the embedded suite: pure numpy + PIL, deterministic.

Each renderer takes its own random generator and returns uint8 pixels. The class
signal is deliberately carried by several cues at once (colour, texture frequency,
shape, lesion counts, localized opacities) so random-initialised encoders pick it up
from pooled features, and so blur (texture), contrast (colour), noise, JPEG and
field-of-view crops (peripheral findings) each take some of it away.
"""

from __future__ import annotations

import functools

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

# The generator writes the real CheXpert/MIMIC label set, so it takes the adapter's definition.
from crsbench.ingest.adapter_cxr import CXR_LABELS as CXR_LABELS

# ---------------------------------------------------------------------------- helpers


@functools.lru_cache(maxsize=8)
def _grid(size: int) -> tuple[np.ndarray, np.ndarray]:
    c = (np.arange(size, dtype=np.float32) + 0.5) / size * 2 - 1
    yy, xx = np.meshgrid(c, c, indexing="ij")
    return yy, xx


def smooth_noise(rng: np.random.Generator, size: int, cells: int) -> np.ndarray:
    """Band-limited noise, about unit variance, with `cells` features across the image."""
    small = rng.standard_normal((cells, cells)).astype(np.float32)
    img = Image.fromarray(small, mode="F").resize((size, size), Image.Resampling.BICUBIC)
    out = np.asarray(img, dtype=np.float32)
    return out / (out.std() + 1e-6)


def blob(size: int, cx: float, cy: float, rx: float, ry: float, angle: float = 0.0) -> np.ndarray:
    """A Gaussian bump centred at (cx, cy) in [-1, 1] coordinates."""
    yy, xx = _grid(size)
    dx, dy = xx - cx, yy - cy
    ca, sa = np.cos(angle), np.sin(angle)
    u, v = (ca * dx + sa * dy) / rx, (-sa * dx + ca * dy) / ry
    return np.exp(-0.5 * (u * u + v * v)).astype(np.float32)


def disc(size: int, cx: float, cy: float, rx: float, ry: float, edge: float = 0.02) -> np.ndarray:
    """A soft-edged filled ellipse (1 inside, 0 outside)."""
    yy, xx = _grid(size)
    d = np.sqrt(((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2)
    return _sigmoid((1.0 - d) / max(edge, 1e-3))


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


def _sigmoid(z: np.ndarray) -> np.ndarray:
    # tanh form: no overflow warnings for large |z|
    return (0.5 * (1.0 + np.tanh(0.5 * z))).astype(np.float32)


def to_uint8(img: np.ndarray) -> np.ndarray:
    return (np.clip(img, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


# ------------------------------------------------------------------ dermoscopy (ISIC)

# Per class: lesion RGB, radius, border irregularity, edge softness, texture (amplitude,
# cells) and an extra structure drawn on top. Roughly follows the dermoscopic look.
DERM_STYLE: dict[str, dict] = {
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
    yy, xx = _grid(size)
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
    alpha = _sigmoid((r_theta - dist) / style["edge"] / max(radius, 0.1))
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
        yy, xx = _grid(size)
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
    yy, xx = _grid(size)
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


# ------------------------------------------------------------- chest X-ray (CheXpert/MIMIC)


def render_cxr(rng: np.random.Generator, findings: dict[str, float], view: str, site: str, size: int) -> np.ndarray:
    """A chest-radiograph-like grayscale image.

    `findings` maps a label to its visual strength (1 present, about 0.5 uncertain);
    `view` is 'frontal' or 'lateral'; `site` ('chexpert' | 'mimic') sets the
    acquisition: MIMIC images get another intensity curve, zoom, noise and a border.
    """
    zoom = rng.uniform(0.95, 1.05) * (1.1 if site == "mimic" else 1.0)
    ox, oy = rng.normal(0, 0.03, 2)
    g = lambda x, y: (ox + x / zoom, oy + y / zoom)  # noqa: E731 - anatomy placement
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
    yy, xx = _grid(size)
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


def _pick(rng: np.random.Generator, lungs: list) -> tuple[float, float, float, float]:
    return lungs[int(rng.integers(len(lungs)))]


def _cxr_findings(
    rng: np.random.Generator, img: np.ndarray, f: dict[str, float], lungs: list, size: int, s: float
) -> np.ndarray:
    def amp(name: str) -> float:
        return float(f.get(name, 0.0))

    if a := amp("Lung Opacity"):
        lx, ly, rx, ry = _pick(rng, lungs)
        img += 0.3 * a * blob(size, lx + rng.normal(0, rx / 4), ly + rng.normal(0, ry / 4), 0.22 * s, 0.28 * s)
    if a := amp("Lung Lesion"):
        for _ in range(int(rng.integers(1, 3))):
            lx, ly, rx, ry = _pick(rng, lungs)
            r = rng.uniform(0.06, 0.09) * s
            img = np.maximum(
                img, img + 0.45 * a * disc(size, lx + rng.normal(0, rx / 3), ly + rng.normal(0, ry / 3), r, r, 0.04)
            )
    if a := amp("Edema"):
        streaks = np.clip(smooth_noise(rng, size, 45), 0, None)
        for lx, ly, rx, ry in lungs:
            hilum = blob(size, lx * 0.7, ly + 0.05, 0.22 * s, 0.3 * s)
            img += a * hilum * (0.15 + 0.2 * streaks)
    if a := amp("Consolidation"):
        lx, ly, rx, ry = _pick(rng, lungs)
        img += 0.45 * a * disc(size, lx, ly + ry * 0.45, rx * 0.75, ry * 0.35, 0.08)
    if a := amp("Pneumonia"):
        lx, ly, rx, ry = _pick(rng, lungs)
        patch = np.clip(smooth_noise(rng, size, 14), 0.3, None) - 0.3
        img += 0.45 * a * patch * disc(size, lx, ly + rng.normal(0, ry / 4), rx * 0.8, ry * 0.45, 0.1)
    if a := amp("Atelectasis"):
        lx, ly, rx, ry = _pick(rng, lungs)
        img += 0.4 * a * blob(size, lx, ly + ry * 0.55, rx * 0.8, 0.035 * s, rng.normal(0, 0.15))
    if a := amp("Pneumothorax"):
        lx, ly, rx, ry = _pick(rng, lungs)
        side = np.sign(lx) if abs(lx) > 0.1 else -1.0
        region = disc(size, lx + side * rx * 0.45, ly - ry * 0.45, rx * 0.5, ry * 0.45, 0.03)
        img = img * (1 - 0.9 * a * region) + 0.02 * a * region
        rim = np.clip(region * (1 - region) * 4, 0, 1)
        img += 0.3 * a * rim
    if a := amp("Pleural Effusion"):
        for lx, ly, rx, ry in lungs if rng.random() < 0.4 else [_pick(rng, lungs)]:
            yy, xx = _grid(size)
            level = ly + ry * (0.45 - 0.25 * a) - 0.35 * np.abs(xx - lx) ** 2
            fluid = _sigmoid((yy - level) / 0.02) * disc(size, lx, ly, rx * 1.05, ry * 1.05, 0.04)
            img = img * (1 - a * fluid) + 0.52 * a * fluid
    if a := amp("Pleural Other"):
        lx, ly, rx, ry = _pick(rng, lungs)
        side = np.sign(lx) if abs(lx) > 0.1 else -1.0
        img += 0.4 * a * blob(size, lx + side * rx * 0.92, ly, 0.04 * s, ry * 0.6)
    if a := amp("Fracture"):
        lx, ly, rx, ry = _pick(rng, lungs)
        side = np.sign(lx) if abs(lx) > 0.1 else -1.0
        x, y = lx + side * rx * 0.85, ly + rng.uniform(-0.4, 0.3) * ry
        img += 0.6 * a * blob(size, x, y, 0.05 * s, 0.03 * s)
        img -= 0.2 * a * blob(size, x + 0.03, y, 0.008 * s, 0.04 * s)
    if a := amp("Support Devices"):
        tube = [wander(rng, (rng.normal(0, 0.04), -1.0), np.pi / 2 + rng.normal(0, 0.05), 14, 0.08, 0.05)]
        if rng.random() < 0.6:
            tube.append(wander(rng, (rng.uniform(-0.8, -0.5), -0.9), 1.2, 16, 0.08, 0.12))
        img = np.maximum(img, 0.95 * a * strokes(size, tube, 0.012))
        for _ in range(int(rng.integers(1, 4))):
            x, y = rng.uniform(-0.7, 0.7), rng.uniform(-0.8, -0.3)
            ring = disc(size, x, y, 0.04, 0.04, 0.02) - disc(size, x, y, 0.025, 0.025, 0.02)
            img = np.maximum(img, 0.95 * a * np.clip(ring, 0, 1))
    return img


def _acquire(rng: np.random.Generator, img: np.ndarray, site: str, size: int) -> np.ndarray:
    img = np.clip(img, 0, 1)
    if site == "mimic":
        # Another detector and processing chain: a harder intensity curve, more noise,
        # a collimation border and a burnt-in side marker.
        img = 0.08 + 0.8 * img**0.7
        img += rng.normal(0, 0.035, img.shape).astype(np.float32)
        b = max(2, size // 16)
        img[:b, :], img[-b:, :], img[:, :b], img[:, -b:] = 0.0, 0.0, 0.0, 0.0
        m = max(3, size // 12)
        img[b + 2 : b + 2 + m, -b - 2 - m : -b - 2] = 0.97
    else:
        img += rng.normal(0, 0.012, img.shape).astype(np.float32)
    img = img * rng.uniform(0.92, 1.06)
    return to_uint8(img)
