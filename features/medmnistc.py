"""MedMNIST-C's corruptions (Di Salvo et al., 2024) as crsbench's corruption suites (METHODS.md §25).

One suite per imaging domain, each with the corruption set the `medmnistc` package gives the closest
MedMNIST dataset: derm -> dermamnist, eye -> retinamnist, rad -> chestmnist, path -> pathmnist. The
corruptions, their parameters and their order come from the package's own registry
(`medmnistc.corruptions.registry.CORRUPTIONS_DS`); nothing of them is copied here. Install with
`pip install 'crsbench[medmnistc]'`.

Seeding. MedMNIST-C draws from numpy's global random state, Python's `random` and (impulse noise)
a `numpy.random.Generator` its caller sets on the corruption object. Each call here seeds all three
from the image's key, SHA-256(`image_id|perturbation|severity`) read as eight little-endian uint32
words, under a lock, and puts the process's previous states back afterwards: the same image gives
the same bytes in any process, and nothing else in the process sees its random state move.

An image goes through the package as its own dataset builder sends it: a PIL RGB image in, and for
a one-channel image the result converted back to greyscale (PIL 'L').
"""

from __future__ import annotations

import contextlib
import functools
import random
import sys
import threading
import types
from collections.abc import Iterator, Mapping
from importlib import metadata
from typing import Any

import numpy as np
import torch
from PIL import Image

from crsbench.core import CrsbenchError
from crsbench.features.perturbations import REGISTRY, Perturbation
from crsbench.features.suites import LoadedSuite, Suite, register_suite

PACKAGE = "medmnistc"
INSTALL = "pip install 'crsbench[medmnistc]'"
# Imaging domain -> the MedMNIST dataset whose corruption set the domain's suite uses.
DATASETS: Mapping[str, str] = {"derm": "dermamnist", "eye": "retinamnist", "rad": "chestmnist", "path": "pathmnist"}
# Grid severity -> the package's severity (1..5): its mildest, middle and strongest, as the
# protocol's three severities run from mild to severe. The package indexes them from 0.
PACKAGE_SEVERITIES: Mapping[int, int] = {1: 1, 2: 3, 3: 5}
# The package calibrates its corruptions on 224 px images; each is tried once on one at load.
PROBE_SIZE = 224

_LOCK = threading.Lock()  # the global random states are process-wide: one seeded call at a time


@contextlib.contextmanager
def seeded(key: bytes) -> Iterator[np.random.Generator]:
    """Seed numpy's global state and Python's `random` from `key`; yield a Generator from it; restore."""
    words = np.frombuffer(key, dtype="<u4")
    with _LOCK:
        numpy_state, python_state = np.random.get_state(), random.getstate()
        try:
            np.random.seed(words)
            random.seed(int.from_bytes(key, "little"))
            yield np.random.default_rng(words)
        finally:
            np.random.set_state(numpy_state)
            random.setstate(python_state)


def corrupt(corruption: Any, image: np.ndarray, severity: int, key: bytes) -> np.ndarray:
    """One HxWxC uint8 image through a MedMNIST-C corruption at the package's severity (1..5), seeded."""
    grey = image.shape[2] == 1
    pil = Image.fromarray(image[:, :, 0] if grey else image).convert("RGB")
    with seeded(key) as rng:
        previous = getattr(corruption, "rng", None)
        corruption.rng = rng  # impulse noise reads it (the package's dataset builder sets it so)
        try:
            out = corruption.apply(pil, severity - 1)
        finally:
            corruption.rng = previous
    if grey:
        out = np.asarray(Image.fromarray(np.asarray(out)).convert("L"))[:, :, None]
    out = np.ascontiguousarray(out, dtype=np.uint8)
    if out.shape != image.shape:
        raise CrsbenchError(f"returned a {out.shape} image for a {image.shape} one")
    return out


def _reference(corruption: Any, image: np.ndarray, level: float, key: bytes) -> np.ndarray:
    return corrupt(corruption, image, int(level), key)


def _batched(corruption: Any, images: torch.Tensor, level: float, keys: list[bytes]) -> torch.Tensor:
    arrays = images.numpy()
    return torch.from_numpy(
        np.stack([corrupt(corruption, a, int(level), k) for a, k in zip(arrays, keys, strict=True)])
    )


def _wand_without_imagemagick() -> None:
    """Stand in for the `wand` package where ImageMagick's MagickWand library is missing.

    Only motion blur uses ImageMagick, and the package's registry imports it at load; with the
    stand-in module the registry loads and motion blur fails on the probe image (left out, said why)."""

    def missing(*_: Any, **__: Any) -> Any:
        raise CrsbenchError("ImageMagick's MagickWand library is missing (Debian: libmagickwand-6.q16-6)")

    image = types.ModuleType("wand.image")
    image.Image = type("Image", (), {"__init__": missing})  # type: ignore[attr-defined]
    api = types.ModuleType("wand.api")
    api.library = None  # type: ignore[attr-defined]  # reached only through an Image, which refuses first
    wand = types.ModuleType("wand")
    wand.image, wand.api = image, api  # type: ignore[attr-defined]
    sys.modules.update({"wand": wand, "wand.image": image, "wand.api": api})


def corruption_registry() -> Mapping[str, Mapping[str, Any]]:
    """The package's corruption registry: MedMNIST dataset -> corruption name -> corruption object."""
    try:
        from medmnistc.corruptions import registry
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".")[0] == PACKAGE:
            raise CrsbenchError(f"the MedMNIST-C suites need the {PACKAGE} package: {INSTALL}") from None
        raise
    except ImportError as exc:
        if "MagickWand" not in str(exc):
            raise
        for name in [m for m in sys.modules if m == "wand" or m.startswith(("wand.", f"{PACKAGE}."))]:
            del sys.modules[name]
        _wand_without_imagemagick()
        from medmnistc.corruptions import registry
    return registry.CORRUPTIONS_DS  # type: ignore[no-any-return]


def probe_failure(corruption: Any) -> str | None:
    """Why a corruption cannot run here (its error on a grey 224 px probe image at each mapped
    severity), or None. medmnistc 0.1.0's motion blur, for one, calls numpy's removed `fromstring`."""
    probe = np.full((PROBE_SIZE, PROBE_SIZE, 3), 128, np.uint8)
    for severity in PACKAGE_SEVERITIES.values():
        try:
            corrupt(corruption, probe, severity, bytes(32))
        except Exception as exc:  # the package's own error, whatever it is, is the reason
            return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return None


def load(dataset: str, suite: str) -> LoadedSuite:
    """Register the suite's corruptions (those that run here) as perturbations '<suite>.<name>'."""
    registered: list[str] = []
    unavailable: dict[str, str] = {}
    for name, corruption in corruption_registry()[dataset].items():
        reason = probe_failure(corruption)
        if reason is not None:
            unavailable[name] = reason
            continue
        perturbation = f"{suite}.{name}"
        REGISTRY.add(
            perturbation,
            Perturbation(
                perturbation,
                {grid: float(own) for grid, own in PACKAGE_SEVERITIES.items()},
                functools.partial(_reference, corruption),
                functools.partial(_batched, corruption),
                on_cpu=True,
                description=f"MedMNIST-C {name} ({dataset}); level: the package's severity 1..5",
            ),
        )
        registered.append(perturbation)
    source = f"{PACKAGE} {metadata.version(PACKAGE)}, {dataset}"
    return LoadedSuite(tuple(registered), dict(PACKAGE_SEVERITIES), unavailable, source)


for _domain, _dataset in DATASETS.items():
    register_suite(
        Suite(
            f"medmnistc-{_domain}",
            _domain,
            f"robustness (MedMNIST-C, {_domain})",
            INSTALL,
            functools.partial(load, _dataset),
        )
    )
