"""Contract of every adapter (crsbench.ingest.registry.ADAPTERS): complete metadata (description,
licence, citation, options), a missing source and unknown options refused by name, and for each
adapter with a sample layout here: a deterministic parse into the declared image columns."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from crsbench.core import no_progress
from crsbench.ingest import ADAPTERS, AdapterEntry, Task, ingest, make_suite, open_image
from crsbench.ingest.source import RowLog
from crsbench.ingest.types import IMAGE_COLUMNS
from tests.contract.support import names, refused_naming

ADAPTER_NAMES = names(ADAPTERS)
SPLITS = {"train", "calib", "test"}
CLASSES = ("alpha", "beta", "gamma")
N_IMAGES = 60


def _required(entry: AdapterEntry) -> dict[str, str]:
    """A value for every option without a default (its first choice), so the reader is reached."""
    return {k: (o.choices[0] if o.choices else "x") for k, o in entry.options.items() if o.default is None}


def _pngs(folder: Path, rels: list[str]) -> None:
    for i, rel in enumerate(rels):
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        pixels = np.random.default_rng(i).integers(0, 256, size=(16, 16), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / rel)


def _folder_sample(root: Path) -> tuple[Path, dict[str, str]]:
    _pngs(root, [f"{CLASSES[i % 3]}/{i:03d}.png" for i in range(N_IMAGES)])
    return root, {}


def _manifest_sample(root: Path) -> tuple[Path, dict[str, str]]:
    rels = [f"img/{i:03d}.png" for i in range(N_IMAGES)]
    _pngs(root, rels)
    frame = pd.DataFrame({"path": rels, "label": [CLASSES[i % 3] for i in range(N_IMAGES)]})
    frame.to_csv(root / "manifest.csv", index=False)
    return root / "manifest.csv", {"task": "multiclass"}


def _medmnist_sample(root: Path) -> tuple[Path, dict[str, str]]:
    rng = np.random.default_rng(0)
    arrays = {}
    for split, n in (("train", 40), ("val", 12), ("test", 12)):
        arrays[f"{split}_images"] = rng.integers(0, 256, size=(n, 16, 16), dtype=np.uint8)
        arrays[f"{split}_labels"] = (np.arange(n) % 3).reshape(-1, 1)
    np.savez(root / "toy.npz", **arrays)
    return root / "toy.npz", {}


def _suite_sample(adapter: str) -> Callable[[Path], tuple[Path, dict[str, str]]]:
    def build(root: Path) -> tuple[Path, dict[str, str]]:
        return make_suite(root, scale=0.25, image_size=32, seed=0)[adapter], {}

    return build


# A sample source per built-in layout; an adapter without one (a plugin) gets every other check.
SAMPLES: dict[str, Callable[[Path], tuple[Path, dict[str, str]]]] = {
    "folder": _folder_sample,
    "manifest": _manifest_sample,
    "medmnist": _medmnist_sample,
    **{name: _suite_sample(name) for name in ("isic2019", "aptos2019", "chexpert", "mimic-cxr")},
}


@pytest.mark.parametrize("name", ADAPTER_NAMES)
def test_metadata_is_complete(name):
    entry = ADAPTERS.get(name)
    assert isinstance(entry, AdapterEntry) and entry.name == name
    assert len(entry.description.split()) >= 3
    assert len(entry.licence.strip()) >= 7 and len(entry.citation.strip()) >= 7  # "unknown" at least
    assert entry.task is None or isinstance(entry.task, Task)
    assert re.match(r"^[a-z][a-z_]{0,31}$", entry.domain)
    for key, option in entry.options.items():
        assert option.help.strip(), f"option {key} has no help"
        if option.choices is not None and option.default is not None:
            assert option.default in option.choices, f"option {key}: default outside its choices"
    if entry.prompts is not None:
        assert entry.prompts.get("classes") and entry.prompts.get("templates")


@pytest.mark.parametrize("name", ADAPTER_NAMES)
def test_missing_source_is_refused_by_name(name, tmp_path):
    entry = ADAPTERS.get(name)
    missing = tmp_path / "no-such-source"
    with refused_naming("no-such-source"):
        entry.read(missing, RowLog(False), entry.resolve_options(_required(entry)), no_progress)
    with refused_naming("no-such-source"):
        ingest(name, missing, "contract", **_required(entry))


@pytest.mark.parametrize("name", ADAPTER_NAMES)
def test_unknown_option_is_refused_by_name(name):
    with refused_naming("no_such_option", name):
        ADAPTERS.get(name).resolve_options({**_required(ADAPTERS.get(name)), "no_such_option": "1"})


@pytest.mark.parametrize("name", ADAPTER_NAMES)
def test_sample_parses_deterministically_into_the_declared_columns(name, tmp_path):
    if name not in SAMPLES:
        pytest.skip(f"no sample layout for adapter {name!r} in the contract suite")
    entry = ADAPTERS.get(name)
    path, options = SAMPLES[name](tmp_path)
    ds = ingest(name, path, "contract", **options)
    again = ingest(name, path, "contract", **options)
    pd.testing.assert_frame_equal(ds.images, again.images)
    np.testing.assert_array_equal(ds.labels, again.labels)

    assert list(ds.images.columns[: len(IMAGE_COLUMNS)]) == list(IMAGE_COLUMNS)
    images = ds.images
    n = len(images)
    assert n > 0 and images["image_id"].is_unique
    assert set(images["split"]) == SPLITS
    assert images["sha256"].str.fullmatch(r"[0-9a-f]{64}").all()
    first = np.asarray(open_image(ds.root, images["rel_path"].iloc[0], "L"))  # a stored path opens as an image
    assert first.ndim == 2 and first.size > 0
    assert entry.task is None or ds.task is entry.task
    assert ds.domain == entry.domain
    k = len(ds.label_names)
    if ds.task is Task.MULTILABEL:
        assert ds.labels.shape == (n, k) and set(np.unique(ds.labels)) <= {0, 1}
    else:
        assert ds.labels.shape == (n,) and ds.labels.min() >= 0 and ds.labels.max() < k
