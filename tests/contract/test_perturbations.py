"""Contract of every perturbation (crsbench.features.perturbations.REGISTRY): validated input,
seeded determinism, images keep shape, dtype and range, both paths agree, complete metadata."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from crsbench.features.perturbations import REGISTRY, Perturbation, parse_condition, perturb, perturb_batch
from tests.contract.support import names, refused_naming

PERTURBATION_NAMES = names(REGISTRY)


def _image(seed: int = 0, shape: tuple[int, ...] = (24, 20, 3)) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=shape, dtype=np.uint8)


def _severities(name: str) -> list[int]:
    return sorted(REGISTRY.get(name).levels)


@pytest.mark.parametrize("name", PERTURBATION_NAMES)
def test_metadata_is_complete(name):
    entry = REGISTRY.get(name)
    assert isinstance(entry, Perturbation) and entry.name == name
    assert len(entry.description.split()) >= 3
    assert entry.levels and all(isinstance(s, int) and s >= 1 for s in entry.levels)
    assert all(np.isfinite(float(v)) for v in entry.levels.values())
    assert callable(entry.reference) and callable(entry.batched) and isinstance(entry.on_cpu, bool)
    for severity in entry.levels:  # every severity is a condition the store can name and read back
        assert parse_condition(f"{name}-s{severity}") == (name, severity)


BAD_IMAGES = {
    "float image": (_image().astype(np.float32), ("float32",)),
    "batch of images": (_image()[None], ((1, 24, 20, 3),)),
    "empty image": (np.zeros((0, 0, 3), np.uint8), ((0, 0, 3),)),
    "1-D image": (np.zeros(16, np.uint8), ((16,),)),
}


@pytest.mark.parametrize("case", BAD_IMAGES)
@pytest.mark.parametrize("name", PERTURBATION_NAMES)
def test_bad_image_is_refused_by_name(name, case):
    image, named = BAD_IMAGES[case]
    with refused_naming(*named):
        perturb(image, "img-0", name, _severities(name)[0])


@pytest.mark.parametrize("name", PERTURBATION_NAMES)
def test_unknown_severity_is_refused_by_name(name):
    missing = max(_severities(name)) + 1
    with refused_naming(missing, name):
        perturb(_image(), "img-0", name, missing)


@pytest.mark.parametrize("name", PERTURBATION_NAMES)
def test_bad_batch_is_refused_by_name(name):
    images = torch.from_numpy(np.stack([_image(0), _image(1)]))
    with refused_naming("3 ids"):
        perturb_batch(images, ["a", "b", "c"], name, _severities(name)[0])
    with refused_naming("torch.float32"):
        perturb_batch(images.float(), ["a", "b"], name, _severities(name)[0])


@pytest.mark.parametrize("shape", [(24, 20, 3), (17, 23), (9, 9, 1)])
@pytest.mark.parametrize("name", PERTURBATION_NAMES)
def test_every_severity_keeps_shape_and_dtype_and_is_deterministic(name, shape):
    image = _image(3, shape)
    for severity in _severities(name):
        out = perturb(image, "img-7", name, severity)
        assert out.shape == image.shape and out.dtype == np.uint8  # uint8 is the [0, 255] range
        again = perturb(image.copy(), "img-7", name, severity)
        assert out.tobytes() == again.tobytes()
    np.testing.assert_array_equal(image, _image(3, shape))  # the input is left as it was


@pytest.mark.parametrize("name", PERTURBATION_NAMES)
def test_the_strongest_severity_changes_the_image(name):
    # A smooth image with structure, so a blur, a crop, a codec, a contrast change and noise all show.
    yy, xx = np.mgrid[0:32, 0:32]
    image = np.stack([(xx * 8) % 256, (yy * 8) % 256, ((xx + yy) * 4) % 256], axis=-1).astype(np.uint8)
    out = perturb(image, "img-1", name, max(_severities(name)))
    assert not np.array_equal(out, image)


@pytest.mark.parametrize("name", PERTURBATION_NAMES)
def test_batched_torch_path_matches_the_reference_on_cpu(name):
    images = np.stack([_image(4), _image(5)])
    ids = ["a", "b"]
    severity = _severities(name)[-1]
    reference = np.stack([perturb(img, i, name, severity) for img, i in zip(images, ids, strict=True)])
    batched = perturb_batch(torch.from_numpy(images), ids, name, severity, backend="torch").numpy()
    assert batched.dtype == np.uint8 and batched.shape == images.shape
    np.testing.assert_array_equal(batched, reference)  # exact on a CPU (module docstring's stated tolerance)
