"""A corruption suite in a dataset's grid, end to end on the generated suite with tiny models
(warehouse.grid_suites, METHODS.md §25): `grid extend --suite medmnistc-derm` declares its conditions,
`extract` adds them to the sets (the bytes they held unchanged), `probe` fills them in `runs` as fits
of their own, the frozen panel's crs_encoder never moves, and view suite_robustness equals the
paper's formula computed here from `runs`, ranking the encoders. Bad requests fail in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
from support.one_model_support import cli

from crsbench.bench import Bench, ProbeConfig
from crsbench.cli import main
from crsbench.core import CrsbenchError
from crsbench.features.conditions import registered_conditions
from crsbench.features.extraction import extract
from crsbench.features.lookup import get_encoder
from crsbench.features.store import FeatureSetRef, FeatureStore
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import read_dataset

pytestmark = pytest.mark.slow

torch.set_num_threads(1)

ENCODERS = ("tiny-resnet18", "tiny-vit")
SUITE = "medmnistc-derm"


def _cli(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> Any:
    capsys.readouterr()
    got = main(["--json", *args])
    out, err = capsys.readouterr()
    assert got == code, (args, err)
    return json.loads(out) if code == 0 and out.strip() else err


def _sql(db: Path, query: str) -> pd.DataFrame:
    with Warehouse.open(db, read_only=True) as wh:
        return wh.sql(query)


def _scores(db: Path) -> pd.DataFrame:
    crs = _sql(db, "select * from crs_encoder order by all")
    axes = _sql(db, "select * from axes_cell order by encoder_id")
    return pd.concat([crs, axes], axis=1)


def _ingested(root: Path, name: str, size: int) -> Path:
    """isic2019 of the generated suite at `size` px, ingested as `name` into root/<name>.duckdb."""
    db = root / f"{name}.duckdb"
    bench = Bench(db)
    source = bench.make_suite(root / f"suite-{size}", scale=0.2, image_size=size)["isic2019"]
    bench.ingest("isic2019", source, name)
    return db


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """isic probed and frozen in panel p by two tiny encoders; then the suite declared (through the
    CLI, for its JSON), extracted and probed."""
    root = tmp_path_factory.mktemp("suites")
    db = _ingested(root, "isic", 112)
    bench = Bench(db)
    bench.restrict_grid(ProbeConfig(probes=("logreg",), depths=(1.0,), seeds=(0,)))
    bench.extract(ENCODERS, ["isic"])
    bench.probe()
    bench.freeze_panel("p", ENCODERS, allow_small=True)
    store = FeatureStore(bench.store)
    ref = FeatureSetRef("isic", ENCODERS[0])
    held = {c: store.array(ref, 1.0, c)[:].tobytes() for c in ("clean", "jpeg-s2", "rician-s3")}
    before = _scores(db)
    code, out, err = cli("--json", "grid", "extend", "--suite", SUITE, "--db", str(db))
    assert code == 0, err
    declared = _scores(db)
    missing = _sql(db, "select * from grid_missing")
    owed = bench.status()
    extracted = bench.extract(ENCODERS, ["isic"])
    bench.probe()
    return {
        "db": db,
        "store": store,
        "ref": ref,
        "held": held,
        "before": before,
        "extended": json.loads(out),
        "declared": declared,
        "missing": missing,
        "owed": owed,
        "extracted": extracted,
        "root": root,
    }


def test_extend_declares_the_suite_on_the_full_label_fits_and_records_the_mapping(story):
    (added,) = story["extended"]["suites"]["isic"]
    assert added["suite"] == SUITE and added["fits"] == 1  # the restricted grid's one full-label fit
    assert added["conditions"] == 14 * 3  # dermamnist's 15 corruptions but motion blur, x 3 severities
    assert added["severities"] == {"1": 1, "2": 3, "3": 5} or added["severities"] == {1: 1, 2: 3, 3: 5}
    assert set(added["unavailable"]) == {"motion_blur"}
    grid = _sql(story["db"], "select condition, origin from dataset_grid where contains(condition, '.')")
    assert len(grid) == 42 and grid["condition"].str.startswith(f"{SUITE}.").all()
    assert set(grid["origin"]) == {f"suite {SUITE} ({added['source']}; severities s1=1, s2=3, s3=5)"}


def test_the_scores_do_not_move_while_the_suite_is_owed_nor_after(story):
    pd.testing.assert_frame_equal(story["declared"], story["before"])
    owed = story["missing"]
    assert len(owed) == 2 * 42 and owed["condition"].str.startswith(f"{SUITE}.").all()
    # status names what the suite is owed, and lists no cell as left out of the CRS for it
    assert story["owed"].incomplete_cells == []
    assert story["owed"].suites_owed == [f"isic x {e}: suite {SUITE} lacks 42 runs" for e in sorted(ENCODERS)]
    pd.testing.assert_frame_equal(_scores(story["db"]), story["before"])
    assert _sql(story["db"], "select count(*) n from grid_missing")["n"].item() == 0
    assert Bench(story["db"]).status().suites_owed == []


def test_extract_adds_the_conditions_and_keeps_the_bytes_the_set_held(story):
    store, ref = story["store"], story["ref"]
    conditions = store.attrs(ref)["conditions"]
    assert [c for c in conditions if "." not in c] == list(registered_conditions())
    assert sum(c.startswith(f"{SUITE}.") for c in conditions) == 42
    for condition, data in story["held"].items():
        assert store.array(ref, 1.0, condition)[:].tobytes() == data
    assert set(story["extracted"]["status"]) == {"extracted"}


def test_probe_fills_the_suite_conditions_as_fits_of_their_own(story):
    runs = _sql(story["db"], "select encoder_id, fit_id, condition, auroc from runs")
    suite_runs = runs[runs["condition"].str.contains(".", regex=False)]
    assert len(suite_runs) == 2 * 42 and suite_runs["auroc"].notna().all()
    assert sorted(suite_runs.groupby("encoder_id")["condition"].nunique()) == [42, 42]
    protocol_fits = set(runs.loc[~runs.index.isin(suite_runs.index), "fit_id"])
    assert not protocol_fits & set(suite_runs["fit_id"])
    assert (runs.groupby("fit_id")["condition"].count() == runs.groupby("fit_id")["condition"].nunique()).all()


def test_suite_robustness_is_the_papers_formula_over_the_suite_and_ranks_the_encoders(story):
    runs = _sql(
        story["db"],
        "select encoder_id, condition, auroc from runs where probe = 'logreg' and depth = 1.0 "
        "and label_fraction = 1.0 and eval_dataset_id = dataset_id",
    )
    expected = {}
    for encoder, rows in runs.groupby("encoder_id"):
        by = dict(zip(rows["condition"], rows["auroc"], strict=True))
        drops = np.array([max(0.0, by["clean"] - a) for c, a in by.items() if c.startswith(f"{SUITE}.")])
        assert len(drops) == 42
        expected[encoder] = 1 - (0.5 * drops.mean() + 0.5 * drops.max())
    view = _sql(story["db"], "select * from suite_robustness order by rank").set_index("encoder_id")
    assert set(view.index) == set(ENCODERS) and view["complete"].all() and (view["suite"] == SUITE).all()
    for encoder, value in expected.items():
        assert view.loc[encoder, "robustness"] == pytest.approx(value, abs=1e-12)
    assert list(view.index) == sorted(expected, key=lambda e: -expected[e])
    assert list(view["rank"]) == [1, 2] and (~view["pretrained"]).all()
    paper = _sql(story["db"], "select encoder_id, robustness from axes_cell").set_index("encoder_id")["robustness"]
    assert view["paper_robustness"].to_dict() == paper.to_dict()


def test_the_report_and_status_show_the_suite_under_its_title(story, tmp_path):
    result = Bench(story["db"]).report(out=tmp_path / "r.html", panel="p")
    assert result.sections["suites"] == "ok"
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    section = page[page.index('data-section="suites"') :]
    section = section[: section.index("</section>")]
    view = _sql(story["db"], "select * from suite_robustness order by rank")
    best, second = view["encoder_id"]
    assert "<h3>robustness (MedMNIST-C, derm)</h3>" in section
    assert (
        f"robustness (MedMNIST-C, derm), isic: {best} is the most robust ({view['robustness'][0]:.3f}; "
        f"the paper&#x27;s robustness axis {view['paper_robustness'][0]:.3f}); then {second} "
        f"{view['robustness'][1]:.3f}." in section
    )


def test_a_suite_for_another_domain_or_an_unknown_one_is_refused_listing_the_suites(story, capsys):
    db = str(story["db"])
    err = _cli(capsys, "grid", "extend", "--suite", "medmnistc-eye", "-d", "isic", "--db", db, code=1)
    assert "suite 'medmnistc-eye' is for domain 'eye', but dataset 'isic' is declared 'derm'" in err
    assert "medmnistc-derm (derm)" in err and "medmnistc-rad (rad)" in err and len(err.strip().splitlines()) == 1
    err = _cli(capsys, "grid", "extend", "--suite", "medmnistc-eye", "--db", db, code=1)
    assert "no dataset here is (datasets: isic (derm))" in err
    err = _cli(capsys, "grid", "extend", "--suite", "medmnistc-dermx", "--db", db, code=1)
    assert "unknown corruption suite 'medmnistc-dermx'; did you mean 'medmnistc-derm'" in err
    assert _sql(story["db"], "select count(*) n from dataset_grid where contains(condition, '.')")["n"].item() == 42


def test_a_suite_failing_on_the_test_images_is_refused_before_anything_is_declared(story, capsys):
    db = _ingested(story["root"], "small", 48)
    err = _cli(capsys, "grid", "extend", "--suite", SUITE, "--db", str(db), code=1)
    assert "suite 'medmnistc-derm' cannot corrupt dataset 'small': medmnistc-derm.characters fails" in err
    assert "of 48x48x3" in err and "failed on image 'ISIC_" in err and "nothing was declared" in err
    assert _sql(db, "select count(*) n from dataset_grid where contains(condition, '.')")["n"].item() == 0
    # A corruption that fails on an image during extraction (asked for directly here): one line naming
    # the image and the corruption, and nothing written for the chunk that holds it.
    with Warehouse.open(db, read_only=True) as wh:
        dataset = read_dataset(wh, "small")
    store = str(db) + ".features.zarr"
    with pytest.raises(CrsbenchError) as failed:
        conditions = [*registered_conditions(), f"{SUITE}.characters-s1"]
        extract(dataset, get_encoder("tiny-resnet18"), store, conditions=conditions, chunk_rows=16)
    message = str(failed.value)
    assert "\n" not in message and message.startswith(f"perturbation {SUITE}.characters (severity 1) failed on image")
    group = FeatureStore(store).group(FeatureSetRef("small", "tiny-resnet18"))
    done = group["_chunks_done"][:]
    test_chunks = {i // 16 for i in np.flatnonzero((dataset.images["split"] == "test").to_numpy())}
    assert not group.attrs.get("complete") and not done[sorted(test_chunks)].any()
    assert group["d100"][f"{SUITE}.characters-s1"].nchunks_initialized == 0


def test_a_suite_named_at_ingest_declares_what_grid_extend_declares_or_nothing_at_all(story, capsys):
    source = str(story["root"] / "suite-112" / "isic2019")
    at_ingest, extended = story["root"] / "at-ingest.duckdb", story["root"] / "extended.duckdb"
    out = _cli(capsys, "ingest", "isic2019", source, "--name", "isic", "--suite", SUITE, "--db", str(at_ingest))
    assert out["suites"] == [SUITE]
    _cli(capsys, "ingest", "isic2019", source, "--name", "isic", "--db", str(extended))
    _cli(capsys, "grid", "extend", "--suite", SUITE, "--db", str(extended))
    grid = "select * exclude (declared_at) from dataset_grid order by all"
    assert _sql(at_ingest, grid).equals(_sql(extended, grid))
    suite_rows = _sql(at_ingest, "select * from dataset_grid where contains(condition, '.')")
    full_label_fits = _sql(at_ingest, "select distinct probe, depth, seed from dataset_grid where label_fraction = 1")
    assert len(suite_rows) == 42 * len(full_label_fits) and set(suite_rows["label_fraction"]) == {1.0}
    assert suite_rows["origin"].str.startswith(f"suite {SUITE} (medmnistc").all()
    # Refused before anything is written: another domain's suite, and a suite failing on the images.
    refused = story["root"] / "refused.duckdb"
    err = _cli(capsys, "ingest", "isic2019", source, "--name", "isic", "--suite", "medmnistc-eye",
               "--db", str(refused), code=1)  # fmt: skip
    assert "suite 'medmnistc-eye' is for domain 'eye'" in err and len(err.strip().splitlines()) == 1
    small = str(Bench(refused).make_suite(story["root"] / "suite-48-at-ingest", scale=0.2, image_size=48)["isic2019"])
    err = _cli(capsys, "ingest", "isic2019", small, "--name", "small", "--suite", SUITE, "--db", str(refused), code=1)
    assert "medmnistc-derm.characters fails" in err and len(err.strip().splitlines()) == 1
    assert not refused.exists()  # nothing written: not even an empty warehouse
