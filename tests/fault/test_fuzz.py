"""Property-based fuzzing of the readers at the edge: a manifest or npz either ingests into a valid
dataset or fails with a one-line InputError; nothing else escapes (issue 17 item 8).

Derandomised (a fixed seed) so CI is repeatable; `make soak` raises the example counts.
"""

from __future__ import annotations

import itertools
import os
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from PIL import Image

from crsbench.core import SPLITS, CrsbenchError
from crsbench.ingest import ingest
from crsbench.ingest.images import decode_pixels
from crsbench.ingest.labels import MAX_LABELS, is_missing

SOAK = int(os.environ.get("CRSBENCH_SOAK", "0"))
FUZZ = settings(
    max_examples=400 if SOAK else 25,
    deadline=None,
    derandomize=not SOAK,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
N_IMAGES = 36
_counter = itertools.count()


@pytest.fixture(scope="module")
def image_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("fuzz")
    rng = np.random.default_rng(0)
    (folder / "img").mkdir()
    for i in range(N_IMAGES):
        Image.fromarray(rng.integers(0, 255, (6, 6), dtype=np.uint8)).save(folder / "img" / f"{i}.png")
    return folder


def _check_dataset(ds) -> None:
    names = list(ds.label_names)
    assert len(names) == len(set(names)) and 0 < len(names) <= min(ds.n_images, MAX_LABELS)
    for name in names:
        assert name == unicodedata.normalize("NFC", name).strip() and not is_missing(name)
        assert "\u200b" not in name
    y = np.asarray(ds.labels)
    onehot = y if y.ndim == 2 else np.eye(len(names), dtype=np.int64)[y]
    for split in SPLITS:  # every class/label reaches every split
        assert onehot[ds.split_rows(split)].sum(axis=0).min() > 0


LABEL_SPELLINGS = st.one_of(
    st.sampled_from(
        [
            "a",
            "b",
            "c",
            " a",
            "a ",
            "A",
            "n\u00e9vus",
            unicodedata.normalize("NFD", "n\u00e9vus"),
            "b\u200b",
            "\ufeffc",
            "nan",
            "NaN",
            "",
            "NA",
            "null",
            "None",
            "1",
            "0",
            "1.0",
            "-1",
        ]
    ),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6),
)
CLEAN_SPELLINGS = st.sampled_from(
    ["a", " a", "a ", "b\u200b", "b", "n\u00e9vus", unicodedata.normalize("NFD", "n\u00e9vus")]
)
CELL = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=4)


@st.composite
def manifests(draw) -> tuple[str, str]:
    """CSV text with quirks: separators in quotes, CRLF, BOM, blank lines, extra columns, bad paths."""
    task = draw(st.sampled_from(["multiclass", "ordinal", "multilabel"]))
    # Half the cases are plausible files with quirks (so the accept path is exercised too),
    # half are hostile throughout.
    hostile = draw(st.booleans())
    n = draw(st.integers(0, N_IMAGES)) if hostile else draw(st.integers(24, N_IMAGES))
    extra = (
        draw(st.lists(st.sampled_from(["group", "split", "image_id", "x", "Label", "label "]), max_size=2, unique=True))
        if hostile
        else []
    )
    if task == "multilabel":
        labels = draw(st.lists(st.sampled_from(["l1", "l2", "l\u00e9"]), min_size=1, max_size=3, unique=True))
        header = ["path", *labels, *extra]
    else:
        header = ["path", "label", *extra]
    rows = []
    for i in range(n):
        path = (
            draw(
                st.sampled_from(
                    [
                        f"img/{i}.png",
                        f"img/{i}.png",
                        f"./img/{i}.png",
                        "img/missing.png",
                        "../etc/passwd",
                        f"img\\{i}.png",
                        "",
                    ]
                )
            )
            if hostile
            else f"img/{i}.png"
        )
        row = [path]
        if task == "multilabel":
            cells = ["0", "1", "1.0", "nan", "", "2"] if hostile else ["0", "1", "1.0", " 0", "0.0"]
            row += [draw(st.sampled_from(cells)) for _ in labels]
        elif task == "ordinal" and not hostile:
            row.append(draw(st.sampled_from(["0", "1", " 1", "2 "])))
        else:
            row.append(draw(LABEL_SPELLINGS) if hostile else draw(CLEAN_SPELLINGS))
        for col in extra:
            row.append(
                draw(st.sampled_from(["train", "calib", "test", "val", "", "bogus"])) if col == "split" else draw(CELL)
            )
        rows.append(row)
    newline = draw(st.sampled_from(["\n", "\r\n"]))

    def quote(cell: str) -> str:
        return '"' + cell.replace('"', '""') + '"' if any(c in cell for c in ',"\r\n') else cell

    text = newline.join(",".join(quote(c) for c in r) for r in [header, *rows]) + newline
    if draw(st.booleans()):
        text = "\ufeff" + text
    return task, text, hostile


@FUZZ
@given(case=manifests(), skip_bad=st.booleans())
def test_manifest_fuzz_ingests_or_fails_with_one_line(image_dir, case, skip_bad):
    task, text, hostile = case
    path = image_dir / f"m{next(_counter)}.csv"
    path.write_text(text, encoding="utf-8")
    try:
        ds = ingest("manifest", path, "fuzz", task=task, skip_bad=skip_bad)
    except CrsbenchError as exc:
        assert "\n" not in str(exc) and str(exc)
        event("refused (hostile)" if hostile else "refused (plausible)")
        return
    event("ingested")
    _check_dataset(ds)


DTYPES = st.sampled_from([np.uint8, np.uint16, np.int64, np.float32, np.float64, np.bool_, "U2"])


@st.composite
def npz_arrays(draw) -> dict[str, np.ndarray]:
    if not draw(st.booleans()):  # plausible: MedMNIST-like arrays with a quirk or two
        arrays = {}
        channels = draw(st.sampled_from([(), (1,), (3,)]))
        label_dtype = draw(st.sampled_from([np.uint8, np.int64, np.float64]))
        for split, n in (("train", 18), ("val", 6), ("test", 6)):
            arrays[f"{split}_images"] = draw(hnp.arrays(np.uint8, (n, 4, 4, *channels)))
            labels = (np.arange(n) % 3).astype(label_dtype)
            arrays[f"{split}_labels"] = labels.reshape(-1, 1) if draw(st.booleans()) else labels
        return arrays
    arrays = {}
    width = draw(st.sampled_from([1, 1, 1, 2, 3]))
    for split, n in (
        ("train", draw(st.integers(0, 24))),
        ("val", draw(st.integers(0, 8))),
        ("test", draw(st.integers(0, 8))),
    ):
        hw = draw(st.tuples(st.integers(0, 5), st.integers(1, 5)))
        channels = draw(st.sampled_from([(), (), (1,), (3,), (4,), (5,), (2,)]))
        image_dtype = draw(st.sampled_from([np.uint8, np.uint8, np.uint8, np.uint16, np.float32]))
        arrays[f"{split}_images"] = draw(hnp.arrays(image_dtype, (n, *hw, *channels)))
        label_dtype = draw(DTYPES)
        shape = (n, width) if draw(st.booleans()) or width > 1 else (n,)
        if label_dtype == "U2":
            labels = draw(hnp.arrays("U2", shape, elements=st.sampled_from(["a", "1", ""])))
        elif np.dtype(label_dtype).kind == "f":
            labels = draw(
                hnp.arrays(
                    label_dtype,
                    shape,
                    elements=st.sampled_from([0.0, 1.0, 2.0, 0.5, -1.0, float("nan"), float("inf"), 1e9]),
                )
            )
        elif label_dtype is np.bool_:
            labels = draw(hnp.arrays(label_dtype, shape))
        else:
            top = 10**9 if np.dtype(label_dtype).itemsize >= 4 else 2 ** (8 * np.dtype(label_dtype).itemsize) - 1
            labels = draw(hnp.arrays(label_dtype, shape, elements=st.sampled_from([0, 1, 2, 3, top])))
        arrays[f"{split}_labels"] = labels
    if draw(st.booleans()):
        arrays.pop(draw(st.sampled_from(sorted(arrays))))
    return arrays


@FUZZ
@given(arrays=npz_arrays(), skip_bad=st.booleans())
def test_npz_fuzz_ingests_or_fails_with_one_line(tmp_path, arrays, skip_bad):
    path = tmp_path / f"x{next(_counter)}.npz"
    np.savez(path, **arrays)
    try:
        ds = ingest("medmnist", path, "fuzz", skip_bad=skip_bad)
    except CrsbenchError as exc:
        assert "\n" not in str(exc) and str(exc)
        event("refused")
        return
    event("ingested")
    _check_dataset(ds)
    for rel in ds.images["rel_path"]:  # whatever ingest accepted, extraction can decode
        pixels = decode_pixels(ds.root, rel)
        assert pixels.dtype == np.uint8 and pixels.ndim == 3 and pixels.shape[2] in (1, 3)


@FUZZ
@given(
    pixels=hnp.arrays(
        st.sampled_from([np.uint8, np.uint16, np.int32, np.float32, np.float64, np.bool_]),
        hnp.array_shapes(min_dims=2, max_dims=3, min_side=0, max_side=6),
    )
)
def test_decoder_returns_uint8_hwc_or_input_error(tmp_path, pixels):
    path = tmp_path / f"d{next(_counter)}.npz"
    np.savez(path, imgs=pixels[None])
    try:
        out = decode_pixels(tmp_path, f"{path.name}#imgs/0")
    except CrsbenchError as exc:
        assert "\n" not in str(exc)
        return
    assert out.dtype == np.uint8 and out.ndim == 3 and out.shape[2] in (1, 3) and min(out.shape[:2]) >= 1
    if pixels.dtype == np.uint16:  # scaled by bit depth: within one grey level of x >> 8
        grey = pixels if pixels.ndim == 2 else pixels[..., 0]
        assert np.abs(out[..., 0].astype(int) - (grey >> 8).astype(int)).max() <= 1
