"""Degenerate feature sets (issue 34 point 4): constant features warn at extraction and are stored
as flagged; a flagged encoder's cells are marked, it gets no rank (panel and cohort) and is no
cohort member until `crsbench feature-sets --confirm`; extraction re-hashes what it decodes."""

from __future__ import annotations

import dataclasses
import json
import shutil

import numpy as np
import pandas as pd
import pytest
import torch
import zarr
from PIL import Image
from support.runs_factory import DATASETS, SHIFT, cell_runs, frame

from crsbench.bench import Bench
from crsbench.cli import main
from crsbench.cli.output import console
from crsbench.core import CRS_DEPTH, InputError
from crsbench.features import extract, get_encoder
from crsbench.features.degenerate import Verdict, assess, degeneracy, numerical_rank
from crsbench.features.loaders import build_model
from crsbench.ingest import ingest, make_suite
from crsbench.warehouse import catalog
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel

torch.set_num_threads(1)
ENTRY = dataclasses.replace(get_encoder("tiny-convnext"), input_size=32)
FAST = {"chunk_rows": 64, "batch_size": 64, "conditions": ("clean",), "threads": 1}


@pytest.fixture(scope="module")
def aptos(tmp_path_factory):
    out = tmp_path_factory.mktemp("suite")
    paths = make_suite(out, scale=0.05, image_size=32)
    return ingest("aptos2019", paths["aptos2019"], "aptos")


def test_rank_and_reasons_against_hand_built_matrices():
    rng = np.random.default_rng(0)
    assert numerical_rank(np.full((50, 16), 3.25)) == 0
    assert numerical_rank(rng.normal(size=(50, 2)) @ rng.normal(size=(2, 16))) == 2
    assert numerical_rank(rng.normal(size=(50, 16))) == 16
    assert degeneracy(np.full((50, 16), 3.25), "d100") == (
        "constant features at d100 (every one of the 16 columns is the same on 50 images)"
    )
    low = rng.normal(size=(200, 2)) @ rng.normal(size=(2, 64))
    assert degeneracy(low, "d050") == (
        "numerical rank 2 at d050, far below its width 64 (under 10% of the 64 attainable on 200 images)"
    )
    assert degeneracy(rng.normal(size=(200, 64)), "d100") is None


def test_constant_features_warn_at_extraction_and_are_stored(aptos, tmp_path):
    flat = build_model(ENTRY)
    with torch.no_grad():
        for p in flat.parameters():
            p.zero_()  # every image maps to the same features
    with pytest.warns(
        UserWarning,
        match=r"aptos/tiny-convnext is degenerate: constant features at d100.*"
        r"crsbench feature-sets --confirm tiny-convnext aptos",
    ):
        attrs = extract(aptos, ENTRY, str(tmp_path / "flat.zarr"), model=flat, **FAST)
    assert attrs.stored.complete and (attrs.stored.degenerate or "").startswith("constant features at d100")
    sound = extract(aptos, ENTRY, str(tmp_path / "sound.zarr"), **FAST)
    assert sound.stored.degenerate is None


def test_an_image_changed_after_ingest_is_refused_naming_it(aptos, tmp_path):
    root = tmp_path / "data"
    shutil.copytree(aptos.root, root)
    ds = dataclasses.replace(aptos, root=root)
    rel = str(ds.images["rel_path"].iloc[5])
    with Image.open(root / rel) as img:
        edited = np.asarray(img).copy()
    edited[0, 0] = 255 - edited[0, 0]  # one pixel
    Image.fromarray(edited).save(root / rel)
    for processes in (False, True):  # decoded in threads, then in worker processes
        with pytest.raises(InputError, match=rf"image {rel} changed since ingest \(SHA-256 [0-9a-f]{{12}}, ingested"):
            extract(
                ds, ENTRY, str(tmp_path / f"f{processes}.zarr"), **{**FAST, "threads": 2}, pixel_processes=processes
            )


FLAT = "flat"  # an encoder whose features are constant: AUROC 0.5, perfect calibration, no drops


def _runs(encoder: str, quality: float, seed: int, **profile: float) -> list[dict]:
    rows = []
    for k, ds in enumerate(DATASETS):
        rng = np.random.default_rng([k, seed])
        rows += cell_runs(encoder, ds, rng, quality=quality, shift_target=SHIFT.get(ds), **profile)  # type: ignore[arg-type]
    return rows


@pytest.fixture(scope="module")
def flagged_db(tmp_path_factory):
    """Members near chance (as tiny random-init encoders are) and a non-member `flat` with AUROC 0.5,
    perfect calibration and no drops: unflagged, it would take CRS rank 1 (issue 34's case)."""
    rows = _runs(FLAT, 0.5, 7, ece_shift=-0.3, fragility=0.0)
    for i, (encoder, quality) in enumerate((("e1", 0.5), ("e2", 0.52), ("e3", 0.51))):
        rows += _runs(encoder, quality, i)
    db = tmp_path_factory.mktemp("flagged") / "w.duckdb"
    store = str(db) + ".features.zarr"
    root = zarr.open_group(store, mode="a", zarr_format=3)
    with Warehouse.open(db) as wh:
        wh.append_runs(frame(rows))
        freeze_panel(wh, "p", ["e1", "e2", "e3"], allow_small=True)
        for encoder in ("e1", FLAT):
            attrs = {"image_digest": "x", "dim": 8, "n_images": 10, "complete": True}
            if encoder == FLAT:
                attrs["degenerate"] = "constant features at d100 (every one of the 8 columns is the same on 10 images)"
            root.require_group(f"derm/{encoder}").attrs.update(attrs)
            catalog.record_attrs(wh, store, catalog.FeatureSetRef("derm", encoder), attrs)
    return db


def _rows(db, view: str, where: str = "") -> dict:
    with Warehouse.open(db, read_only=True) as wh:
        return {r["encoder_id"]: r for r in wh.sql(f"select * from {view} {where}").to_dict("records")}


def test_confirming_a_sound_set_is_a_one_line_error(flagged_db, capsys):
    console.configure(json_mode=False)
    capsys.readouterr()
    assert main(["feature-sets", "--confirm", "e1", "derm", "--db", str(flagged_db)]) == 1
    assert capsys.readouterr().err.strip() == (
        "error: feature set derm/e1 is not flagged as degenerate; there is nothing to confirm"
    )
    assert main(["panel", "freeze", "q", "--encoders", f"e1,{FLAT}", "--allow-small", "--db", str(flagged_db)]) == 1
    assert "error: panel 'q': flat has a degenerate feature set on derm (constant features" in capsys.readouterr().err
    assert main(["--json", "feature-sets", "--db", str(flagged_db)]) == 0
    rows = json.loads(capsys.readouterr().out)["feature_sets"]
    console.configure()
    assert {r["encoder_id"]: r["degenerate"] for r in rows}["flat"].startswith("constant features")


def test_a_flagged_encoder_gets_no_rank_until_confirmed(flagged_db, capsys):
    board = _rows(flagged_db, "crs_encoder", "where panel = 'p'")
    assert board[FLAT]["flagged"] and not board["e1"]["flagged"]
    assert abs(board[FLAT]["auroc"] - 0.5) < 0.02 and board[FLAT]["coverage"] == "full"
    assert pd.isna(board[FLAT]["crs_rank"]) and pd.isna(board[FLAT]["auroc_rank"])
    cells = _rows(flagged_db, "crs_cell", "where panel = 'p' and dataset_id = 'derm'")
    assert cells[FLAT]["flagged"] and not cells["e1"]["flagged"]
    cohort = _rows(flagged_db, "crs_cohort_encoder")
    assert not cohort[FLAT]["in_panel"] and pd.isna(cohort[FLAT]["crs_rank"]) and cohort["e1"]["in_panel"]

    bench = Bench(flagged_db)
    lb = bench.leaderboard("p")
    assert lb.board.set_index("encoder_id").loc[FLAT, "flagged"]
    assert lb.flagged == [
        "flagged: flat on derm: constant features at d100 (every one of the 8 columns is the same on 10 images); "
        "it gets no rank until you confirm the set: crsbench feature-sets --confirm flat derm"
    ]
    assert bench.status().flagged == lb.flagged
    capsys.readouterr()
    assert main(["leaderboard", "--panel", "p", "--db", str(flagged_db)]) == 0
    out = capsys.readouterr().out
    assert "flagged: flat on derm" in " ".join(out.split())

    # Confirmed through Bench (the CLI's --confirm): ranked again, at the place it takes against the panel
    capsys.readouterr()
    assert main(["feature-sets", "--confirm", FLAT, "derm", "--db", str(flagged_db)]) == 0
    assert "confirmed feature set flat x derm" in capsys.readouterr().out
    board = _rows(flagged_db, "crs_encoder", "where panel = 'p'")
    members = [board[m]["crs"] for m in ("e1", "e2", "e3")]
    assert not board[FLAT]["flagged"]
    assert board[FLAT]["crs_rank"] == 1 + sum(c > board[FLAT]["crs"] for c in members) == 1  # what it hid
    assert _rows(flagged_db, "crs_cohort_encoder")[FLAT]["in_panel"]
    assert bench.status().flagged == []
    store_attrs = zarr.open_group(str(flagged_db) + ".features.zarr", mode="r")["derm/flat"].attrs
    assert store_attrs["degenerate_confirmed_at"]  # kept in the store (the truth), so a --sync keeps it


# -- only the depth the CRS reads flags a set (issue 42 point 9) ------------------------------------


def _feature_group(path, constant_depths: tuple[str, ...]) -> zarr.Group:
    """A set's clean features at the four depths: 60 images x 16 columns, full rank except the
    `constant_depths`, where every image has the same features."""
    group = zarr.open_group(str(path), mode="w", zarr_format=3)
    rng = np.random.default_rng(1)
    for depth in ("d025", "d050", "d075", "d100"):
        values = np.full((60, 16), 0.5) if depth in constant_depths else rng.normal(size=(60, 16))
        group.create_array(f"{depth}/clean", data=values.astype(np.float16))
    return group


def test_only_the_crs_depth_flags_a_set_other_depths_warn(tmp_path):
    assert CRS_DEPTH == 1.0  # METHODS §6: the axes and the CRS read the final block
    shallow = _feature_group(tmp_path / "shallow.zarr", ("d025", "d050"))
    verdict = assess(shallow)
    assert verdict.reason is None and shallow.attrs["degenerate"] is None
    expected = (
        "constant features at d050 (every one of the 16 columns is the same on 60 images); "
        "constant features at d025 (every one of the 16 columns is the same on 60 images)"
    )
    assert verdict.other_depths == shallow.attrs["degenerate_other_depths"] == expected
    assert verdict.other_depths_warning("derm/e") == (
        f"feature set derm/e is degenerate at a depth the CRS does not read: {expected}; it stays ranked "
        "(the CRS reads d100 only), but probes at that depth learn little from it (the depth profile, E3)"
    )

    final = _feature_group(tmp_path / "final.zarr", ("d100", "d025"))
    verdict = assess(final)
    assert verdict.reason == final.attrs["degenerate"]
    assert verdict.reason == "constant features at d100 (every one of the 16 columns is the same on 60 images)"
    assert verdict.other_depths is not None and verdict.other_depths.startswith("constant features at d025")

    # Re-assessed once sound, the set keeps no stale note.
    rng = np.random.default_rng(2)
    for depth in ("d025", "d050"):
        shallow[f"{depth}/clean"][:] = rng.normal(size=(60, 16)).astype(np.float16)
    assert assess(shallow) == Verdict(None, None)
    assert "degenerate_other_depths" not in shallow.attrs


def test_extraction_warns_about_an_unused_depth_and_does_not_flag(aptos, tmp_path, monkeypatch):
    from crsbench.features import degenerate

    real = degenerate.degeneracy

    def shallow_only(features: np.ndarray, where: str) -> str | None:
        return "constant features at d025 (stand-in)" if where == "d025" else real(features, where)

    monkeypatch.setattr(degenerate, "degeneracy", shallow_only)
    with pytest.warns(
        UserWarning,
        match=r"aptos/tiny-convnext is degenerate at a depth the CRS does not read: "
        r"constant features at d025 \(stand-in\); it stays ranked",
    ) as seen:
        attrs = extract(aptos, ENTRY, str(tmp_path / "f.zarr"), **FAST)
    assert not any("gets no rank" in str(w.message) for w in seen)
    assert attrs.stored.degenerate is None
    assert attrs.stored.raw["degenerate_other_depths"] == "constant features at d025 (stand-in)"


def test_a_set_degenerate_only_at_an_unused_depth_stays_ranked(tmp_path):
    """Two non-members as good as the best member: `shallow` degenerate at d025 only is ranked with
    no flag; `final`, degenerate at d100, has no rank and the leaderboard says why."""
    rows = []
    for i, (encoder, quality) in enumerate((("e1", 0.6), ("e2", 0.7), ("e3", 0.8), ("shallow", 0.8), ("final", 0.8))):
        rows += _runs(encoder, quality, i)
    db = tmp_path / "w.duckdb"
    store = str(db) + ".features.zarr"
    verdicts = {
        "shallow": assess(_feature_group(tmp_path / "a.zarr", ("d025",))),
        "final": assess(_feature_group(tmp_path / "b.zarr", ("d100",))),
    }
    root = zarr.open_group(store, mode="a", zarr_format=3)
    with Warehouse.open(db) as wh:
        wh.append_runs(frame(rows))
        freeze_panel(wh, "p", ["e1", "e2", "e3"], allow_small=True)
        for encoder, verdict in verdicts.items():
            attrs = {"image_digest": "x", "dim": 16, "n_images": 60, "complete": True, "degenerate": verdict.reason}
            root.require_group(f"derm/{encoder}").attrs.update(attrs)
            catalog.record_attrs(wh, store, catalog.FeatureSetRef("derm", encoder), attrs)
    board = _rows(db, "crs_encoder", "where panel = 'p'")
    assert not board["shallow"]["flagged"] and board["shallow"]["crs_rank"] >= 1
    assert board["final"]["flagged"] and pd.isna(board["final"]["crs_rank"])
    assert Bench(db).leaderboard("p").flagged == [
        "flagged: final on derm: constant features at d100 (every one of the 16 columns is the same on 60 images); "
        "it gets no rank until you confirm the set: crsbench feature-sets --confirm final derm"
    ]
