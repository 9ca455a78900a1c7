"""`ingest --replace` with other images retires the old runs and features; `probe` refits (issue 17.2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image
from support.synthetic import write_features

from crsbench.cli import main
from crsbench.cli.output import console
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import read_dataset

PROBE = ["probe", "--probe", "logreg", "--depth", "1.0", "--fraction", "1.0", "--seed", "0", "--seed", "1"]


def _manifest(folder: Path, n: int, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    (folder / "img").mkdir(parents=True)
    rows = []
    for i in range(n):
        Image.fromarray(rng.integers(0, 255, (8, 8), dtype=np.uint8)).save(folder / "img" / f"{i}.png")
        rows.append({"path": f"img/{i}.png", "label": "ab"[i % 2]})
    pd.DataFrame(rows).to_csv(folder / "manifest.csv", index=False)
    return folder / "manifest.csv"


def _cli(args: list[str], capsys) -> tuple[int, dict | str]:
    capsys.readouterr()
    console.configure(json_mode=True)
    try:
        rc = main(["--json", *args])
    finally:
        console.configure()
    out, err = capsys.readouterr()
    return rc, (json.loads(out) if rc == 0 and out.strip() else " ".join(err.split()))


def _extract(db: Path) -> None:
    """Stand-in for `crsbench extract`: synthetic features of the stored dataset, in the real layout."""
    with Warehouse.open(db, read_only=True) as wh:
        ds = read_dataset(wh, "m")
    write_features(str(db) + ".features.zarr", ds, "enc", 8, depths=(1.0,), chunk_rows=64)


def _runs(db: Path, view: str = "runs") -> pd.DataFrame:
    with Warehouse.open(db, read_only=True) as wh:
        return wh.sql(f"select * from {view} order by run_id")


def test_replace_retires_old_runs_and_probe_refits(tmp_path, capsys):
    db = tmp_path / "w.duckdb"
    ingest = ["ingest", "manifest", "--name", "m", "--option", "task=multiclass", "--db", str(db)]
    rc, _ = _cli([ingest[0], ingest[1], str(_manifest(tmp_path / "v1", 60, 1)), *ingest[2:]], capsys)
    assert rc == 0
    _extract(db)
    rc, first = _cli([*PROBE, "--db", str(db)], capsys)
    assert rc == 0 and first["fitted"] == 2
    old = _runs(db)
    old_test = int(old.loc[old.condition == "clean", "n_test"].iloc[0])

    v2 = _manifest(tmp_path / "v2", 40, 2)
    rc, err = _cli([ingest[0], ingest[1], str(v2), *ingest[2:], "--replace"], capsys)
    assert rc == 1 and "retires 2 fits" in err and "pass --yes" in err, err
    pd.testing.assert_frame_equal(_runs(db), old)  # refused: nothing changed

    rc, _ = _cli([ingest[0], ingest[1], str(v2), *ingest[2:], "--replace", "--yes"], capsys)
    assert rc == 0
    assert _runs(db).empty
    archived = _runs(db, "retired_runs")
    assert set(archived["run_id"]) == set(old["run_id"])  # kept, not deleted
    assert Path(str(db) + ".features.zarr.retired").is_dir()
    with Warehouse.open(db, read_only=True) as wh:
        assert wh.sql("select count(*) n from retired_predictions")["n"].item() > 0

    rc, err = _cli([*PROBE, "--db", str(db)], capsys)
    assert rc == 1 and "no feature sets for m" in err, err  # the stale features went with the old images
    # A store that replace did not know about still holds old features: refused, not fitted.
    (retired,) = Path(str(db) + ".features.zarr.retired").iterdir()
    shutil.move(retired, Path(str(db) + ".features.zarr") / "m")
    rc, err = _cli([*PROBE, "--db", str(db)], capsys)
    assert rc == 1 and "re-extract" in err, err
    shutil.rmtree(Path(str(db) + ".features.zarr") / "m")
    _extract(db)
    rc, second = _cli([*PROBE, "--db", str(db)], capsys)
    assert rc == 0 and second["fitted"] == 2 and second["skipped"] == 0
    new = _runs(db)
    assert not set(new["fit_id"]) & set(old["fit_id"])
    new_test = int(new.loc[new.condition == "clean", "n_test"].iloc[0])
    assert new_test != old_test and (new["n_test"][new.condition == "clean"] == new_test).all()
    with Warehouse.open(db, read_only=True) as wh:
        seed = wh.sql("select auroc_mean, auroc_n, n_seeds from metrics_seed where condition = 'clean'")
    clean = new[new.condition == "clean"]
    assert seed["auroc_n"].tolist() == [2] and seed["n_seeds"].tolist() == [2]
    assert seed["auroc_mean"].item() == pytest.approx(clean["auroc"].mean(), abs=1e-12)


def test_replacing_with_the_same_data_retires_nothing(tmp_path, capsys):
    db = tmp_path / "w.duckdb"
    path = _manifest(tmp_path / "v1", 40, 1)
    args = ["ingest", "manifest", str(path), "--name", "m", "--option", "task=multiclass", "--db", str(db)]
    assert _cli(args, capsys)[0] == 0
    _extract(db)
    assert _cli([*PROBE, "--db", str(db)], capsys)[0] == 0
    before = _runs(db)
    rc, _ = _cli([*args, "--replace"], capsys)  # no question: nothing to retire
    assert rc == 0
    pd.testing.assert_frame_equal(_runs(db), before)
    rc, again = _cli([*PROBE, "--db", str(db)], capsys)
    assert rc == 0 and again["fitted"] == 0


def test_features_of_other_image_content_under_the_same_ids_are_refused(tmp_path):
    from support.synthetic import make_dataset

    from crsbench.features.store import FeatureStore
    from crsbench.probes.grid import GridContext, plan_fits, run_grid

    ds = make_dataset("derm", "multiclass", 60, 3, seed=1)
    url = str(tmp_path / "f.zarr")
    write_features(url, ds, "enc", 8, depths=(1.0,), chunk_rows=64)
    ds.images.loc[7, "sha256"] = "0" * 64  # image 7 re-encoded: same id, other bytes
    store = FeatureStore(url)
    fits = plan_fits(["derm"], ["enc"], store, probes=["logreg"], fractions=(1.0,), seeds=(0,), depths=(1.0,))
    with pytest.raises(Exception, match=r"derm/enc .* was extracted from other images"):
        run_grid(fits, GridContext({"derm": ds}, store, lambda r, p: None))
