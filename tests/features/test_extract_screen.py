"""`extract --screen`: the clean condition alone, then a plain extract that reuses it (METHODS.md §2.9).

The independent expectation is a one-go plain extraction of the same set: screening then completing
must end with the very same files (features.cost.TIMED_FIELDS aside), and each run must forward
exactly the batches of the one-go item list it is said to (counted here from the split alone).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
import zarr
from support.store_files import store_files

from crsbench.core import CONDITIONS, CrsbenchError
from crsbench.features import FeatureSetRef, FeatureStore, extract, get_encoder
from crsbench.features import extraction_chunks as ex
from crsbench.ingest import Dataset, ingest, make_suite

torch.set_num_threads(1)
ENTRY = dataclasses.replace(get_encoder("tiny-convnext"), input_size=32)
REF = FeatureSetRef("aptos", ENTRY.id)
# (chunk rows, batch size); the suite's 50 images have their 10 test rows last (rows 40-49).
# 16/24: each chunk in one batch, two of them (rows 32-47, 48-49) filled up with perturbed items;
# 13/5: the last chunk short (rows 39-49), its third batch 1 clean row and 4 perturbed items;
# 16/8: chunk 32-47's clean rows fill two batches exactly (no mixed batch), the short last one mixes.
SETTINGS = [(16, 24), (13, 5), (16, 8)]


@pytest.fixture(scope="module")
def aptos(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    suite = make_suite(tmp_path_factory.mktemp("suite"), scale=0.05, image_size=32)
    return ingest("aptos2019", suite["aptos2019"], "aptos")


@pytest.fixture(scope="module")
def one_go(aptos: Dataset, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[int, int], str]:
    """The plain one-go extraction under each setting: what every other path must equal."""
    out = {}
    for rows, batch in SETTINGS:
        url = str(tmp_path_factory.mktemp("one-go") / "f.zarr")
        extract(aptos, ENTRY, url, chunk_rows=rows, batch_size=batch)
        out[(rows, batch)] = url
    return out


@pytest.fixture()
def forwarded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the items each forward of the extraction takes (the cost measure's zero inputs aside)."""
    counts: list[int] = []
    original = ex.ChunkExtractor._inputs

    def counting(self: ex.ChunkExtractor, group: list[ex.Item], pixels: ex.Pixels, chunk: ex.Chunk) -> torch.Tensor:
        counts.append(len(group))
        return original(self, group, pixels, chunk)

    monkeypatch.setattr(ex.ChunkExtractor, "_inputs", counting)
    yield counts


def expected_items(ds: Dataset, rows: int, batch: int) -> dict[str, int]:
    """Items forwarded by a one-go run, a screening run and the run completing it, from the split:
    per chunk n clean items then 15 per test row; a part takes whole batches of that list."""
    test = ds.images["split"].to_numpy() == "test"
    out = {"full": 0, "screen": 0, "after": 0}
    for start in range(0, ds.n_images, rows):
        n = min(rows, ds.n_images - start)
        items = n + (len(CONDITIONS) - 1) * int(test[start : start + n].sum())
        out["full"] += items
        out["screen"] += min(items, -(-n // batch) * batch)
        out["after"] += items - (n // batch) * batch if items > n else 0
    return out


def mixed_batches(ds: Dataset, rows: int, batch: int) -> int:
    """Chunks one of whose batches holds both clean and perturbed items."""
    test = ds.images["split"].to_numpy() == "test"
    chunks = [(min(rows, ds.n_images - s), int(test[s : s + rows].sum())) for s in range(0, ds.n_images, rows)]
    return sum(1 for n, t in chunks if t and n % batch)


def files(url: str) -> dict[str, bytes]:
    return store_files(url)


def clean_files(url: str) -> dict[str, bytes]:
    """The stored chunks of the clean arrays (their metadata gains the digests at completion)."""
    return {k: v for k, v in files(url).items() if "/clean/c/" in k}


@pytest.mark.parametrize(("rows", "batch"), SETTINGS)
def test_screen_then_full_is_byte_identical_to_one_go(
    aptos: Dataset, one_go: dict[tuple[int, int], str], forwarded: list[int], tmp_path: Path, rows: int, batch: int
) -> None:
    assert mixed_batches(aptos, rows, batch) >= 1 and aptos.n_images % rows
    expected = expected_items(aptos, rows, batch)
    url = str(tmp_path / "f.zarr")
    screened = extract(aptos, ENTRY, url, chunk_rows=rows, batch_size=batch, screen=True)
    assert sum(forwarded) == expected["screen"] and 2 * expected["screen"] < expected["full"]
    assert screened.stored.screened and not screened.stored.complete and not screened.skipped
    group = zarr.open_group(url, mode="r")[REF.path]
    assert isinstance(group, zarr.Group)
    for cond in CONDITIONS:  # the clean arrays whole and as the one-go run wrote them; nothing else
        for depth in screened.stored.depths:
            arr = group[f"{depth}/{cond}"]
            assert isinstance(arr, zarr.Array)
            assert arr.nchunks_initialized == (arr.nchunks if cond == "clean" else 0), (depth, cond)
    assert clean_files(url) == clean_files(one_go[(rows, batch)])
    assert not np.asarray(group["_chunks_done"][:]).any()  # type: ignore[index]
    forwarded.clear()
    full = extract(aptos, ENTRY, url, chunk_rows=rows, batch_size=batch)
    assert full.stored.complete and not full.skipped and sum(forwarded) == expected["after"]
    mine, theirs = files(url), files(one_go[(rows, batch)])
    assert mine.keys() == theirs.keys()  # the screening marker is gone
    assert [k for k in mine if mine[k] != theirs[k]] == []


def _die_after(arrays_to_write: int, monkeypatch: pytest.MonkeyPatch, part: str) -> None:
    """Kill the run inside the second chunk of `part` it writes: some of its arrays written, no marker."""
    original = ex.ChunkExtractor.write_chunk
    seen: list[int] = []

    def dying(self: ex.ChunkExtractor, arrays: dict, chunk: ex.Chunk, blocks: dict) -> None:
        seen.extend([chunk.index] if chunk.part == part else [])
        if len(seen) < 2:
            return original(self, arrays, chunk, blocks)
        for (depth, cond), block in list(blocks.items())[:arrays_to_write]:
            arrays[f"{ex.depth_key(depth)}/{cond}"][chunk.start : chunk.stop] = block
        raise KeyboardInterrupt

    monkeypatch.setattr(ex.ChunkExtractor, "write_chunk", dying)


def test_killed_screen_and_killed_completion_resume_to_the_one_go_bytes(
    aptos: Dataset, one_go: dict[tuple[int, int], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows, batch = SETTINGS[1]
    url = str(tmp_path / "f.zarr")
    _die_after(2, monkeypatch, ex.CLEAN_PART)
    with pytest.raises(KeyboardInterrupt):
        extract(aptos, ENTRY, url, chunk_rows=rows, batch_size=batch, screen=True)
    monkeypatch.undo()
    group = zarr.open_group(url, mode="r")[REF.path]
    assert np.asarray(group["_clean_done"][:]).tolist() == [1, 0, 0, 0]  # type: ignore[index]
    assert not FeatureStore(url).is_screened(REF)
    resumed = extract(aptos, ENTRY, url, chunk_rows=rows, batch_size=batch, screen=True)
    assert resumed.stored.screened and not resumed.skipped
    assert clean_files(url) == clean_files(one_go[(rows, batch)])
    _die_after(3, monkeypatch, ex.PERTURBED_PART)
    with pytest.raises(KeyboardInterrupt):
        extract(aptos, ENTRY, url, chunk_rows=rows, batch_size=batch)
    monkeypatch.undo()
    assert np.asarray(group["_chunks_done"][:]).tolist() == [1, 0, 0, 0]  # type: ignore[index]
    assert FeatureStore(url).is_screened(REF) and not FeatureStore(url).is_complete(REF)
    assert extract(aptos, ENTRY, url, chunk_rows=rows, batch_size=batch).stored.complete
    mine, theirs = files(url), files(one_go[(rows, batch)])
    assert mine.keys() == theirs.keys() and [k for k in mine if mine[k] != theirs[k]] == []


def test_screening_a_screened_or_complete_set_does_nothing(
    aptos: Dataset, one_go: dict[tuple[int, int], str], forwarded: list[int], tmp_path: Path
) -> None:
    rows, batch = SETTINGS[0]
    url = str(tmp_path / "f.zarr")
    extract(aptos, ENTRY, url, chunk_rows=rows, batch_size=batch, screen=True)
    before, n = files(url), len(forwarded)
    again = extract(aptos, ENTRY, url, chunk_rows=rows, batch_size=batch, screen=True)
    assert again.skipped and again.stored.screened and files(url) == before and len(forwarded) == n
    complete = one_go[(rows, batch)]
    before = files(complete)
    skipped = extract(aptos, ENTRY, complete, chunk_rows=rows, batch_size=batch, screen=True)
    assert skipped.skipped and skipped.stored.complete and files(complete) == before and len(forwarded) == n


def test_completing_a_screened_set_with_other_settings_is_refused(aptos: Dataset, tmp_path: Path) -> None:
    url = str(tmp_path / "f.zarr")
    extract(aptos, ENTRY, url, chunk_rows=16, batch_size=24, screen=True)
    with pytest.raises(CrsbenchError, match=r"different settings \(batch_size\).*--force"):
        extract(aptos, ENTRY, url, chunk_rows=16, batch_size=8)
    with pytest.raises(CrsbenchError, match="--screen and --repair do not combine"):
        extract(aptos, ENTRY, url, chunk_rows=16, batch_size=24, screen=True, repair=True)


def test_probes_plan_on_complete_sets_only(aptos: Dataset, one_go: dict[tuple[int, int], str], tmp_path: Path) -> None:
    from crsbench.probes.grid import plan_fits

    rows, batch = SETTINGS[0]
    url = str(tmp_path / "f.zarr")
    other = dataclasses.replace(ENTRY, id="tiny-convnext-b")
    extract(aptos, other, url, chunk_rows=rows, batch_size=batch, screen=True)
    extract(aptos, ENTRY, url, chunk_rows=rows, batch_size=batch)
    store = FeatureStore(url)
    assert [r.encoder_id for r in store.feature_sets()] == [ENTRY.id, "tiny-convnext-b"]
    assert [r.encoder_id for r in store.probe_sets()] == [ENTRY.id]
    assert {f.encoder_id for f in plan_fits([aptos], None, store)} == {ENTRY.id}
