"""Zero-shot classification end to end on the generated suite (tiny-clip, random-init): runs on every
condition, calib and the shift target; AUROC equal to scikit-learn on the stored predictions; a
changed template gives new runs while the old stay; bad input is one line each."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from crsbench.bench import Bench, ExtractConfig
from crsbench.core import CrsbenchError
from crsbench.features.lookup import get_encoder, tiny_encoder_ids, tiny_image_text_ids
from crsbench.features.text import text_tower_status
from crsbench.ingest.prompts import make_prompt_set
from crsbench.ingest.registry import get_adapter
from crsbench.ingest.types import Task
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.parts import parts_dir_for

DATASETS = ["isic2019", "chexpert", "mimic-cxr"]


@pytest.fixture(scope="module")
def _zs_template(tmp_path_factory: pytest.TempPathFactory, _ingested_db_template: Path) -> Path:
    db = tmp_path_factory.mktemp("zs") / "crsbench.duckdb"
    shutil.copyfile(_ingested_db_template, db)
    shutil.copytree(parts_dir_for(_ingested_db_template), parts_dir_for(db))
    bench = Bench(db)
    bench.extract(["tiny-clip"], DATASETS, ExtractConfig())
    bench.zeroshot(["tiny-clip"], ["isic2019", "chexpert"])
    return db


@pytest.fixture
def zs_db(tmp_path: Path, _zs_template: Path) -> Path:
    shutil.copytree(_zs_template.parent, tmp_path / "w")
    db = tmp_path / "w" / _zs_template.name
    Bench(db).init()
    return db


def test_tiny_clip_is_image_text_and_outside_the_image_panel() -> None:
    assert tiny_image_text_ids() == ["tiny-clip"]
    assert "tiny-clip" not in tiny_encoder_ids()
    entry = get_encoder("tiny-clip")
    assert not entry.pretrained and entry.text_tower == "open_clip"
    assert text_tower_status(entry) == "random-init"
    assert text_tower_status(get_encoder("tiny-vit")) == "-"


def test_runs_cover_every_condition_and_auroc_matches_sklearn(zs_db: Path) -> None:
    bench = Bench(zs_db)
    runs = bench.sql("select * from runs where probe = 'zeroshot'")
    per = runs.groupby(["dataset_id", "eval_dataset_id"]).size().to_dict()
    assert per == {("isic2019", "isic2019"): 17, ("chexpert", "chexpert"): 17, ("chexpert", "mimic-cxr"): 1}
    assert set(runs["label_fraction"]) == {0.0} and set(runs["seed"]) == {0} and set(runs["n_train"]) == {0}
    ds = {n: bench.sql(f"select label_names, task from datasets where dataset_id = '{n}'") for n in DATASETS}
    for name in ("isic2019", "chexpert"):
        run = runs[(runs.dataset_id == name) & (runs.condition == "clean")].iloc[0]
        preds = bench.sql(f"select row_index, probs from predictions where run_id = '{run.run_id}' order by row_index")
        probs = np.stack(preds["probs"].to_numpy())
        rows = preds["row_index"].to_numpy()
        from crsbench.warehouse.connection import Warehouse
        from crsbench.warehouse.datasets import read_dataset

        with Warehouse.open(zs_db, read_only=True) as wh:
            y = read_dataset(wh, name).labels[rows]
        if ds[name]["task"][0] == "multilabel":
            keep = [j for j in range(y.shape[1]) if 0 < y[:, j].sum() < len(y)]
            expected = np.mean([roc_auc_score(y[:, j], probs[:, j]) for j in keep])
            assert np.all((probs > 0) & (probs < 1))
        else:
            np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-5)
            expected = roc_auc_score(y, probs, multi_class="ovr", labels=list(range(probs.shape[1])))
        assert run.auroc == pytest.approx(expected, abs=1e-6)


def test_view_has_a_row_per_encoder_and_dataset(zs_db: Path) -> None:
    view = Bench(zs_db).sql("select * from zeroshot_vs_probe order by dataset_id")
    assert view[["encoder_id", "dataset_id"]].values.tolist() == [["tiny-clip", "chexpert"], ["tiny-clip", "isic2019"]]
    assert view["logreg_auroc_1pct"].isna().all()  # not probed here: NULL, and no "beats" fraction
    assert view["probe_beats_zeroshot_at"].isna().all()


def test_changed_template_gives_new_runs_old_stay(zs_db: Path, tmp_path: Path) -> None:
    bench = Bench(zs_db)
    before = bench.sql("select run_id, auroc from runs where probe = 'zeroshot' and dataset_id = 'isic2019'")
    spec = get_adapter("isic2019").prompts
    classes = "\n".join(f'{k} = "{v}"' for k, v in spec["classes"].items())
    file = tmp_path / "prompts.toml"
    file.write_text(f'[dataset.isic2019]\ntemplates = ["a photo of {{}}."]\n[dataset.isic2019.classes]\n{classes}\n')
    out = bench.zeroshot(["tiny-clip"], ["isic2019"], file)
    assert out.fitted == 1
    old_hash = make_prompt_set("x", spec, list(spec["classes"]), Task.MULTICLASS).digest
    assert out.prompt_sets["tiny-clip x isic2019"] != old_hash
    after = bench.sql("select run_id, auroc from runs where probe = 'zeroshot' and dataset_id = 'isic2019'")
    assert len(after) == 2 * len(before) and set(before.run_id) <= set(after.run_id)
    stored = bench.sql("select prompt_hash, prompts from zeroshot_prompts where dataset_id = 'isic2019'")
    assert set(stored.prompt_hash) == {old_hash, out.prompt_sets["tiny-clip x isic2019"]}
    assert {tuple(json.loads(p)["templates"]) for p in stored.prompts} >= {("a photo of {}.",)}
    view = bench.sql("select prompt_hash from zeroshot_vs_probe where dataset_id = 'isic2019'")
    assert view.prompt_hash.tolist() == [out.prompt_sets["tiny-clip x isic2019"]]
    assert bench.zeroshot(["tiny-clip"], ["isic2019"], file).fitted == 0  # idempotent


def test_encoder_without_text_tower(zs_db: Path) -> None:
    with pytest.raises(CrsbenchError, match=r"'tiny-vit' has no text tower.*encoders with one: .*tiny-clip"):
        Bench(zs_db).zeroshot(["tiny-vit"], ["isic2019"])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            'templates = ["a {}"]\n[dataset.isic2019.classes]\nMEL = "m"\nXYZ = "x"',
            r"missing: NV, BCC, AK, BKL, DF, VASC, SCC; extra: XYZ",
        ),
        (
            'templates = ["a photo"]\n[dataset.isic2019.classes]\n'
            + "\n".join(f'{k} = "{k}"' for k in get_adapter("isic2019").prompts["classes"]),
            r"template 'a photo' in templates needs exactly one \{\}",
        ),
        ('templates = ["a {}"]\nclasses = {}', r"the class list is empty"),
    ],
)
def test_bad_prompt_files(zs_db: Path, tmp_path: Path, body: str, message: str) -> None:
    file = tmp_path / "p.toml"
    file.write_text("[dataset.isic2019]\n" + body + "\n")
    with pytest.raises(CrsbenchError, match=message) as info:
        Bench(zs_db).zeroshot(["tiny-clip"], ["isic2019"], file)
    assert "\n" not in str(info.value)


def _zs_keys(bench: Bench, table: str, where: str = "") -> set[tuple[str, str, str]]:
    rows = bench.sql(f"select dataset_id, condition, eval_dataset_id from {table} where probe = 'zeroshot' {where}")
    return set(rows.itertuples(index=False, name=None))


def test_zero_shot_cells_are_declared_and_complete(zs_db: Path) -> None:
    bench = Bench(zs_db)
    declared = bench.sql("select encoder_id, dataset_id, prompt_hash from zeroshot_grid order by dataset_id")
    prompts = bench.sql("select distinct encoder_id, dataset_id, prompt_hash from zeroshot_prompts order by dataset_id")
    assert declared.values.tolist() == prompts.values.tolist()  # one prompt set per cell so far
    assert declared[["encoder_id", "dataset_id"]].values.tolist() == [
        ["tiny-clip", "chexpert"],
        ["tiny-clip", "isic2019"],
    ]
    # Declared keys: every condition of the dataset's grid (shift -> each target), one fit per cell.
    grid = bench.sql(
        "select distinct dataset_id, condition from dataset_grid where dataset_id in ('isic2019', 'chexpert')"
    )
    pairs = list(grid.itertuples(index=False, name=None))
    expected = {(d, c, d) for d, c in pairs if c != "shift"} | {("chexpert", "shift", "mimic-cxr")}  # conftest
    assert _zs_keys(bench, "grid_declared_zeroshot") == expected
    assert _zs_keys(bench, "runs") == expected  # zero-shot ran every declared key
    assert bench.sql("select bool_and(in_grid) as ok from runs_grid where probe = 'zeroshot'").ok[0]
    assert _zs_keys(bench, "grid_missing") == set()
    cells = bench.sql("select * from cell_completeness where encoder_id = 'tiny-clip'")
    assert set(cells.n_extra) == {0}
    shown = bench.grid().set_index("dataset_id")["zeroshot_encoders"].map(list).to_dict()
    assert shown["isic2019"] == shown["chexpert"] == ["tiny-clip"] and shown["mimic-cxr"] == []
    # A cell declared with a prompt set that has no runs lacks every one of its keys.
    with Warehouse.open(zs_db) as wh:
        wh.con.execute("update zeroshot_grid set prompt_hash = 'other' where dataset_id = 'isic2019'")
    isic = {k for k in expected if k[0] == "isic2019"}
    assert _zs_keys(bench, "grid_missing") == isic
    extra = bench.sql("select n_extra, complete from cell_completeness where dataset_id = 'isic2019'")
    assert extra.values.tolist() == [[len(isic), False]]
    from crsbench.reads.gaps import missing_lines

    with Warehouse.open(zs_db, read_only=True) as wh:
        lines = [line for line in missing_lines(wh) if "zeroshot" in line]
    assert len(lines) == 1 and lines[0].startswith("isic2019 x tiny-clip: ")
    assert "zeroshot depth 1 fraction 0 seed 0 missing" in lines[0]  # the whole fit: every condition


def test_changed_template_moves_the_declared_cell_to_the_new_runs(zs_db: Path, tmp_path: Path) -> None:
    bench = Bench(zs_db)
    spec = get_adapter("isic2019").prompts
    classes = "\n".join(f'{k} = "{v}"' for k, v in spec["classes"].items())
    file = tmp_path / "prompts.toml"
    file.write_text(f'[dataset.isic2019]\ntemplates = ["a photo of {{}}."]\n[dataset.isic2019.classes]\n{classes}\n')
    new = bench.zeroshot(["tiny-clip"], ["isic2019"], file).prompt_sets["tiny-clip x isic2019"]
    declared = bench.sql("select prompt_hash from zeroshot_grid where dataset_id = 'isic2019'")
    assert declared.prompt_hash.tolist() == [new]
    flags = bench.sql(
        "select p.prompt_hash = ? as new, bool_and(in_grid) as all_in, bool_or(in_grid) as any_in from runs_grid r "
        "join zeroshot_prompts p using (fit_id) where r.probe = 'zeroshot' and r.dataset_id = 'isic2019' group by 1",
        [new],
    ).set_index("new")
    assert flags.loc[True, "all_in"] and not flags.loc[False, "any_in"]  # old runs stay, as extras
    assert _zs_keys(bench, "grid_missing") == set()


def test_migration_declares_the_cells_of_earlier_zero_shot_runs(zs_db: Path) -> None:
    bench = Bench(zs_db)
    before = bench.sql("select encoder_id, dataset_id, prompt_hash from zeroshot_grid order by all")
    with Warehouse.open(zs_db) as wh:  # back to schema 14: no zeroshot_grid yet
        wh.con.execute("drop table zeroshot_grid")
        wh.con.execute("delete from schema_info where version >= 15")
    with Warehouse.open(zs_db):  # a read-write open migrates to 15
        pass
    assert bench.sql("select encoder_id, dataset_id, prompt_hash from zeroshot_grid order by all").equals(before)


def test_a_repaired_proj_depth_retires_the_zero_shot_fits_only(zs_db: Path) -> None:
    from crsbench.features.store import PROJ, FeatureSetRef, key_depth
    from crsbench.warehouse.integrity import fits_reading

    assert key_depth("proj") == PROJ and key_depth("d025") == 0.25
    ref = FeatureSetRef("isic2019", "tiny-clip")
    with Warehouse.open(zs_db, read_only=True) as wh:
        zs = sorted(set(wh.sql("select fit_id from runs where probe = 'zeroshot' and dataset_id = 'isic2019'").fit_id))
        assert fits_reading(wh.con, ref, [PROJ]) == zs
        assert fits_reading(wh.con, ref, [0.25]) == []
        assert fits_reading(wh.con, ref, [1.0, PROJ]) == zs  # zero-shot runs record depth 1.0 too
