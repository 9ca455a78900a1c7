"""MedMNIST-C's corruptions as crsbench suites (features.medmnistc, METHODS.md §25): the bytes the
`medmnistc` package itself produces for a fixed image under the same seed, one corruption per domain;
the same bytes in other processes; the process's random states left as they were; a corruption that
fails on an image named in one line; a missing package or ImageMagick said plainly."""

from __future__ import annotations

import hashlib
import random
import subprocess
import sys
import textwrap
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import numpy as np
import pytest
import torch
from PIL import Image

from crsbench.core import CrsbenchError
from crsbench.features.medmnistc import corruption_registry
from crsbench.features.perturbations import perturb, perturb_batch
from crsbench.features.suites import load_suite

# The package's own registry, reached through crsbench's loader only so that machines without
# ImageMagick (which only motion blur needs) can still import it; the objects are the package's.
CORRUPTIONS_DS = corruption_registry()

# (suite, corruption, MedMNIST dataset, grid severity, the package's severity index, channels): one per
# domain, each drawing from a different random source (numpy's global state, Python's random, the
# Generator the caller sets), on colour and greyscale images.
CASES = [
    ("medmnistc-derm", "characters", "dermamnist", 2, 2, 3),  # Python random + numpy global
    ("medmnistc-eye", "speckle_noise", "retinamnist", 3, 4, 3),  # numpy global
    ("medmnistc-rad", "impulse_noise", "chestmnist", 1, 0, 1),  # the caller's Generator, greyscale
    ("medmnistc-path", "bubble", "pathmnist", 3, 4, 3),  # Python random + numpy global
]


def _image(channels: int, size: int = 128, seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(size, size, channels), dtype=np.uint8)


def _package_bytes(dataset: str, corruption: str, index: int, image: np.ndarray, key: bytes) -> np.ndarray:
    """The package called directly, seeded as crsbench documents: SHA-256 words into numpy's
    global state and a Generator, the whole digest into Python's random."""
    words = [int.from_bytes(key[i : i + 4], "little") for i in range(0, 32, 4)]
    np.random.seed(words)
    random.seed(int.from_bytes(key, "little"))
    corruptor = CORRUPTIONS_DS[dataset][corruption]
    corruptor.rng = np.random.default_rng(words)
    pil = Image.fromarray(image[:, :, 0] if image.shape[2] == 1 else image).convert("RGB")
    out = np.asarray(corruptor.apply(pil, index))
    if image.shape[2] == 1:  # the package's dataset builder returns greyscale datasets as 'L'
        out = np.asarray(Image.fromarray(out).convert("L"))[:, :, None]
    return out


@pytest.mark.parametrize("suite, corruption, dataset, severity, index, channels", CASES)
def test_bytes_equal_the_package_under_the_same_seed(suite, corruption, dataset, severity, index, channels):
    image = _image(channels)
    name = f"{suite}.{corruption}"
    key = hashlib.sha256(f"img-7|{name}|{severity}".encode()).digest()
    ours = perturb(image, "img-7", name, severity)
    theirs = _package_bytes(dataset, corruption, index, image, key)
    assert ours.dtype == np.uint8 and ours.shape == image.shape
    assert ours.tobytes() == theirs.tobytes()
    assert not np.array_equal(ours, image)  # it corrupted something
    other = perturb(image, "img-8", name, severity)
    assert not np.array_equal(ours, other)  # another image id, another draw


def _in_child(name: str, severity: int, channels: int) -> bytes:
    return perturb(_image(channels), "img-7", name, severity).tobytes()


def test_same_bytes_in_other_processes_and_in_a_batch():
    names = [(f"{s}.{c}", sev, ch) for s, c, _, sev, _, ch in CASES]
    here = [_in_child(*n) for n in names]
    with ProcessPoolExecutor(2, mp_context=get_context("spawn")) as pool:
        assert list(pool.map(_in_child, *zip(*names, strict=True))) == here
    code = textwrap.dedent(
        """
        import sys, numpy as np
        from crsbench.features.perturbations import perturb
        image = np.random.default_rng(3).integers(0, 256, size=(128, 128, 3), dtype=np.uint8)
        sys.stdout.write(perturb(image, "img-7", "medmnistc-derm.characters", 2).tobytes().hex())
        """
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert bytes.fromhex(child.stdout) == here[0]
    # the batched paths (CPU threads, and the device path) give each image its own bytes
    images = np.stack([_image(3, seed=s) for s in range(4)])
    ids = [f"img-{s}" for s in range(4)]
    singles = [perturb(images[i], ids[i], "medmnistc-eye.speckle_noise", 3) for i in range(4)]
    for backend in ("numpy", "torch"):
        batch = perturb_batch(torch.from_numpy(images), ids, "medmnistc-eye.speckle_noise", 3, backend=backend)
        assert [b.tobytes() for b in batch.numpy()] == [s.tobytes() for s in singles]


def test_the_process_random_states_are_left_as_they_were():
    np.random.seed(11)
    random.seed(12)
    theirs = np.random.default_rng(5)  # a Generator the package's own user set on the corruption
    CORRUPTIONS_DS["chestmnist"]["impulse_noise"].rng = theirs
    numpy_before, python_before = np.random.get_state(), random.getstate()
    perturb(_image(3), "img-1", "medmnistc-derm.characters", 3)
    perturb(_image(1), "img-1", "medmnistc-rad.impulse_noise", 3)
    numpy_after, python_after = np.random.get_state(), random.getstate()
    assert python_after == python_before
    assert numpy_after[0] == numpy_before[0] and np.array_equal(numpy_after[1], numpy_before[1])
    assert numpy_after[2:] == numpy_before[2:]
    assert CORRUPTIONS_DS["chestmnist"]["impulse_noise"].rng is theirs


def test_the_severity_mapping_and_what_is_left_out_are_recorded():
    derm = load_suite("medmnistc-derm")
    assert dict(derm.severities) == {1: 1, 2: 3, 3: 5}  # mildest, middle, strongest of the package's five
    names = [p.split(".", 1)[1] for p in derm.perturbations]
    package = list(CORRUPTIONS_DS["dermamnist"])
    assert names == [n for n in package if n not in derm.unavailable]  # the package's own order
    # medmnistc 0.1.0's motion blur calls numpy's removed `fromstring` (numpy 2), and where ImageMagick
    # is missing it cannot start at all: left out either way, said why
    reason = derm.unavailable.get("motion_blur", "")
    assert set(derm.unavailable) == {"motion_blur"}
    assert "fromstring" in reason or "MagickWand library is missing" in reason
    assert derm.source.startswith("medmnistc ") and derm.source.endswith("dermamnist")
    assert len(load_suite("medmnistc-rad").perturbations) == len(CORRUPTIONS_DS["chestmnist"])


def test_a_corruption_failing_on_an_image_is_one_line_naming_it():
    small = _image(3, size=48)  # too small for the package's characters (it wants >= ~100 px)
    with pytest.raises(CrsbenchError) as err:
        perturb(small, "isic-0042", "medmnistc-derm.characters", 3)
    message = str(err.value)
    assert "\n" not in message
    assert "medmnistc-derm.characters" in message and "'isic-0042'" in message and "ValueError" in message
    with pytest.raises(CrsbenchError, match="failed on image 'img-1'"):
        perturb_batch(torch.from_numpy(small[None]), ["img-1"], "medmnistc-derm.characters", 3, backend="torch")


def _child_error(prelude: str) -> str:
    code = prelude + textwrap.dedent(
        """
        from crsbench.features.suites import load_suite
        from crsbench.core import CrsbenchError
        try:
            loaded = load_suite("medmnistc-derm")
        except CrsbenchError as exc:
            print("refused:", exc)
        else:
            print("loaded", len(loaded.perturbations), sorted(loaded.unavailable.items()))
        """
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_a_missing_package_is_one_line_saying_how_to_install():
    out = _child_error("import sys; sys.modules['medmnistc'] = None\n")
    assert out.startswith(
        "refused: the MedMNIST-C suites need the medmnistc package: pip install 'crsbench[medmnistc]'"
    )


def test_without_imagemagick_every_corruption_but_motion_blur_loads():
    # What `wand` raises where ImageMagick's library is missing, at the import the package makes.
    prelude = textwrap.dedent(
        """
        import importlib.abc, sys
        class NoMagick(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name == "wand.api":
                    raise ImportError("MagickWand shared library not found.\\nYou probably had not installed ImageMagick")
        sys.meta_path.insert(0, NoMagick())
        """
    )
    out = _child_error(prelude)
    assert out.startswith("loaded 14 [('motion_blur', ")
    assert "MagickWand library is missing" in out


def test_threads_naming_a_suite_at_once_load_it_once_and_agree():
    code = textwrap.dedent(
        """
        from concurrent.futures import ThreadPoolExecutor
        import numpy as np
        from crsbench.features.perturbations import perturb
        image = np.random.default_rng(3).integers(0, 256, size=(128, 128, 3), dtype=np.uint8)
        names = ["medmnistc-derm.characters", "medmnistc-derm.speckle_noise"] * 4
        with ThreadPoolExecutor(8) as pool:  # the suite is not loaded yet: every thread asks for it at once
            out = list(pool.map(lambda n: perturb(image, "img-7", n, 2).tobytes(), names))
        print(len(set(out[0::2])), len(set(out[1::2])), out[0].hex()[:64])
        """
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    ones, twos, head = child.stdout.split()
    assert (ones, twos) == ("1", "1")
    assert head == perturb(_image(3), "img-7", "medmnistc-derm.characters", 2).tobytes().hex()[:64]
