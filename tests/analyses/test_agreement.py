"""Analysis `agreement`: mutual k-NN overlap, CKA and neighbour composition against computations
written here from their definitions (METHODS.md §17)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import torch
from support.synthetic import make_dataset, write_features

from crsbench.analyses import run_analysis
from crsbench.analyses.agreement import matrix as am
from crsbench.analyses.agreement import measures as m
from crsbench.core import CrsbenchError
from crsbench.features.store import FeatureStore
from crsbench.warehouse.catalog import sync_catalog
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset, read_dataset

torch.set_num_threads(1)

ENCODERS = {"enc-a": (12, 0), "enc-b": (16, 1), "enc-c": (8, 2)}  # id -> (dim, seed)


def brute_neighbours(x: np.ndarray, k: int) -> np.ndarray:
    """From the definition: the k other rows of highest cosine similarity, ties to the lower row."""
    u = x.astype(np.float64) / np.linalg.norm(x.astype(np.float64), axis=1, keepdims=True)
    cos = u @ u.T
    n = len(x)
    out = np.empty((n, k), dtype=np.int64)
    for i in range(n):
        others = np.array([j for j in range(n) if j != i])
        order = np.lexsort((others, -cos[i, others]))  # last key first: similarity, then index
        out[i] = others[order[:k]]
    return out


def brute_overlap(x: np.ndarray, y: np.ndarray, k: int) -> float:
    """The mean over images of |N_A(i) & N_B(i)| / k, as an exact fraction rounded once."""
    na, nb = brute_neighbours(x, k), brute_neighbours(y, k)
    return float(sum(Fraction(len(set(na[i]) & set(nb[i])), k) for i in range(len(x))) / len(x))


def closed_form_cka(x: np.ndarray, y: np.ndarray) -> float:
    """HSIC form with the centring matrix H on the raw (uncentred) Gram matrices."""
    n = len(x)
    h = np.eye(n) - np.ones((n, n)) / n
    kx, ky = x @ x.T, y @ y.T
    hsic = np.trace(kx @ h @ ky @ h)
    return float(hsic / np.sqrt(np.trace(kx @ h @ kx @ h) * np.trace(ky @ h @ ky @ h)))


@pytest.fixture(scope="module")
def bench_db(tmp_path_factory):
    root = tmp_path_factory.mktemp("agreement")
    db = root / "bench.duckdb"
    derm = make_dataset("derm", "multiclass", 150, 3, seed=1)
    derm.metadata = derm_metadata(derm.images["image_id"].to_numpy())
    with Warehouse.open(db) as wh:
        for ds in (derm, make_dataset("cxr", "multilabel", 90, 3, seed=2)):
            load_dataset(wh, ds)
        stored = {n: read_dataset(wh, n) for n in ("derm", "cxr")}
    store = str(root / "bench.duckdb.features.zarr")
    for ds in stored.values():
        for enc, (dim, seed) in ENCODERS.items():
            write_features(store, ds, enc, dim, seed=seed, depths=(0.5, 1.0), chunk_rows=64)
            catalogued(store, ds, enc)
    with Warehouse.open(db) as wh:
        sync_catalog(wh, FeatureStore(store))
    return db, store, stored


def derm_metadata(ids: np.ndarray):
    """Long metadata rows: sex on every image but a third (no row: no value), site on all but every
    seventh, and a manifest key called `group` (which must not be mistaken for the patient id)."""
    import pandas as pd

    rng = np.random.default_rng(7)
    rows = [
        (i, "sex", str(v))
        for i, v, keep in zip(ids, rng.choice(["f", "m"], len(ids)), rng.random(len(ids)), strict=True)
        if keep > 1 / 3
    ]
    rows += [
        (i, "site", str(v))
        for j, (i, v) in enumerate(zip(ids, rng.choice(["head", "trunk", "leg"], len(ids)), strict=True))
        if j % 7
    ]
    rows += [(i, "group", "a" if j % 2 else "b") for j, i in enumerate(ids)]
    return pd.DataFrame(rows, columns=["image_id", "key", "value"], dtype=object)


def catalogued(store: str, ds, encoder: str) -> None:
    """The attributes extraction writes and the catalog reads, on a synthetic feature set."""
    import zarr

    group = zarr.open_group(store, mode="a")[f"{ds.name}/{encoder}"]
    group.attrs.update({"n_images": ds.n_images, "depths": ["d025", "d050", "d075", "d100"]})


def _features(store: str, dataset: str, encoder: str, depth: str = "d100") -> np.ndarray:
    import zarr

    return np.asarray(zarr.open_group(store, mode="r")[f"{dataset}/{encoder}/{depth}/clean"][:], dtype=np.float64)


def test_neighbour_lists_equal_the_brute_force_exactly():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 9)).astype(np.float16)
    x[7] = x[3]  # an exact duplicate: distance 0 to row 3, which must come first for both
    assert np.array_equal(m.neighbour_lists(x, 10), brute_neighbours(x.astype(np.float64), 10))


def test_self_agreement_is_one_and_a_shuffled_copy_is_at_chance():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 16))
    perm = rng.permutation(300)
    frame = am.agreement_matrix({"a": x, "a-copy": x.copy(), "a-shuffled": x[perm]}, 10, replicates=400, seed=0)
    knn = frame[frame["measure"] == am.MUTUAL_KNN].set_index("encoder_b")
    copy = knn[knn["encoder_a"] == "a"].loc["a-copy"]
    assert (copy["estimate"], copy["lo"], copy["hi"]) == (1.0, 1.0, 1.0)
    shuffled = knn[knn["encoder_a"] == "a"].loc["a-shuffled"]
    assert shuffled["chance"] == pytest.approx(10 / 299)
    assert shuffled["lo"] <= shuffled["chance"] <= shuffled["hi"]
    assert shuffled["estimate"] == pytest.approx(brute_overlap(x, x[perm], 10), abs=0)


@pytest.mark.parametrize("n,d", [(40, 12), (15, 30)])  # both sides of n < D (the Gram path)
def test_cka_equals_the_closed_form(n, d):
    rng = np.random.default_rng(n)
    x = rng.normal(size=(n, d)) + 3.0
    y = x[:, : d // 2] @ rng.normal(size=(d // 2, d + 5)) + 0.3 * rng.normal(size=(n, d + 5))
    assert m.linear_cka(x, y) == pytest.approx(closed_form_cka(x, y), abs=1e-9)
    assert m.linear_cka(x, x) == pytest.approx(1.0, abs=1e-12)


def test_the_same_resamples_serve_every_pair():
    hits = np.random.default_rng(2).integers(0, 11, (3, 5000))
    together = m.resampled_means(hits, 10, 200, seed=5)
    alone = m.resampled_means(hits[1:2], 10, 200, seed=5)
    assert np.array_equal(together[1:2], alone)  # bit for bit: a pair's interval ignores its neighbours
    assert not np.array_equal(together, m.resampled_means(hits, 10, 200, seed=6))
    # replicate means are means of resampled images: within [min, max] and centred on the estimate
    assert together.min() >= 0 and abs(together[0].mean() - hits[0].mean() / 10) < 0.01


def test_analysis_equals_the_brute_force_for_every_pair_and_composition(bench_db):
    db, store, stored = bench_db
    with Warehouse.open(db) as wh:
        result = run_analysis(wh, "agreement", {"replicates": 200})
        tables = {
            r[0] for r in wh.con.execute("select table_name from analyses where analysis = 'agreement'").fetchall()
        }
        comment = wh.con.execute(
            "select comment from duckdb_columns() where table_name = 'analysis_agreement_encoder_agreement' "
            "and column_name = 'chance'"
        ).fetchone()
    assert "analysis_agreement_encoder_agreement" in tables and "analysis_agreement_neighbour_composition" in tables
    assert comment and "k / (n - 1)" in comment[0]
    pairs = result.tables["encoder_agreement"]
    knn = pairs[pairs["measure"] == am.MUTUAL_KNN]
    assert len(knn) == 2 * 3  # two datasets x three pairs
    for row in knn.itertuples():
        x, y = _features(store, row.dataset_id, row.encoder_a), _features(store, row.dataset_id, row.encoder_b)
        assert row.estimate == brute_overlap(x, y, 10)
        assert row.lo <= row.estimate <= row.hi and row.chance == 10 / (len(x) - 1)
    cka = pairs[pairs["measure"] == am.CKA]
    for row in cka.itertuples():
        x, y = _features(store, row.dataset_id, row.encoder_a), _features(store, row.dataset_id, row.encoder_b)
        assert row.estimate == pytest.approx(closed_form_cka(x, y), abs=1e-9)
    comp = result.tables["neighbour_composition"].set_index(["dataset_id", "encoder_id", "field"])
    labels = stored["derm"].labels
    neigh = brute_neighbours(_features(store, "derm", "enc-b"), 10)
    share = sum(Fraction(int((labels[neigh[i]] == labels[i]).sum()), 10) for i in range(len(labels))) / len(labels)
    assert comp.loc[("derm", "enc-b", "label"), "estimate"] == float(share)
    counts = np.bincount(labels)
    expected_chance = (counts * (counts - 1)).sum() / (len(labels) * (len(labels) - 1))
    assert comp.loc[("derm", "enc-b", "label"), "chance"] == pytest.approx(expected_chance)


def brute_composition(neigh: np.ndarray, values: list[str | None]) -> tuple[float, float, int]:
    """(share, chance, images) from the definition: over the images with a value, the share of the
    k neighbours with the same value; chance: a neighbour drawn at random from the n - 1 others."""
    n, k = neigh.shape
    valued = [i for i in range(n) if values[i] is not None]
    share = sum(Fraction(sum(values[j] == values[i] for j in neigh[i]), k) for i in valued) / len(valued)
    chance = Fraction(
        sum(sum(values[j] == values[i] for j in range(n) if j != i) for i in valued), len(valued) * (n - 1)
    )
    return float(share), float(chance), len(valued)


def test_composition_covers_every_metadata_key_against_the_brute_force(bench_db):
    db, store, stored = bench_db
    with Warehouse.open(db) as wh:
        result = run_analysis(wh, "agreement", {"dataset": "derm", "replicates": 100, "transfer": False}, store=False)
        meta = wh.sql("select image_id, key, value from image_metadata where dataset_id = 'derm'")
    comp = result.tables["neighbour_composition"].set_index(["encoder_id", "field"])
    ids = stored["derm"].images["image_id"].tolist()
    assert set(comp.loc["enc-a"].index) == {"label", "sex", "site", "meta:group"}  # ids never repeat: no group
    for encoder in ENCODERS:
        neigh = brute_neighbours(_features(store, "derm", encoder), 10)
        for key, field in (("sex", "sex"), ("site", "site"), ("group", "meta:group")):
            given = dict(meta[meta["key"] == key][["image_id", "value"]].itertuples(index=False))
            share, chance, valued = brute_composition(neigh, [given.get(i) for i in ids])
            row = comp.loc[(encoder, field)]
            assert (row["estimate"], row["n_images"]) == (share, valued)
            assert row["chance"] == pytest.approx(chance, abs=1e-12)
            assert row["lo"] <= row["estimate"] <= row["hi"]
    assert comp.loc[("enc-a", "sex"), "n_images"] < comp.loc[("enc-a", "site"), "n_images"] < len(ids)


def test_every_depth_and_one_split_on_request(bench_db):
    db, store, stored = bench_db
    with Warehouse.open(db) as wh:
        params = {"dataset": "derm", "encoders": "enc-a,enc-c", "depth": 0.5, "split": "train", "replicates": 100}
        result = run_analysis(wh, "agreement", params, store=False)
    row = result.summary.iloc[0]
    train = np.flatnonzero(stored["derm"].images["split"].to_numpy() == "train")
    x, y = _features(store, "derm", "enc-a", "d050")[train], _features(store, "derm", "enc-c", "d050")[train]
    assert (row["depth"], row["mutual_knn"]) == (0.5, brute_overlap(x, y, 10))


BAD_INPUT = [
    (
        {"dataset": "derm", "encoders": "enc-a,enc-z"},
        r"encoder enc-z has no complete features on dataset 'derm' \(encoders with features there: enc-a, enc-b, enc-c\)",
    ),
    ({"dataset": "derm", "k": 150}, "k = 150 is not below the 150 images"),
    ({"dataset": "cxr", "k": 50}, "has 90 images, fewer than 2k = 100"),
    ({"dataset": "derm", "depth": 0.75}, r"depth 0.75 was not extracted for encoder enc-a .*extracted: d050, d100"),
    ({"dataset": "nope"}, "dataset 'nope' is not in the warehouse"),
]


def test_bad_input_is_one_line_and_writes_nothing(bench_db):
    db, _, _ = bench_db
    with Warehouse.open(db) as wh:
        before = wh.con.execute("select count(*) from analyses").fetchone()
        for params, message in BAD_INPUT:
            with pytest.raises(CrsbenchError, match=message) as info:
                run_analysis(wh, "agreement", params)
            assert "\n" not in str(info.value)
        assert wh.con.execute("select count(*) from analyses").fetchone() == before


def _fitted_probe(x_train: np.ndarray, y: np.ndarray, task, k: int, seed: int = 0):
    from crsbench.analyses.agreement.transfer import StoredProbe
    from crsbench.probes.kinds.estimators import logreg

    mean, std = x_train.mean(axis=0), x_train.std(axis=0)
    fit = logreg((x_train - mean) / std, y, task, k, seed)
    return StoredProbe(seed, fit.weights.numpy(), fit.bias.numpy(), mean, std)


def test_self_transfer_keeps_all_of_the_auroc_and_a_scrambled_map_loses_it():
    from crsbench.analyses.agreement.transfer import transfer_rows
    from crsbench.ingest.types import Task

    ds = make_dataset("derm", "multiclass", 400, 3, seed=4)
    rng = np.random.default_rng(4)
    signal = np.eye(3)[ds.labels] @ rng.normal(size=(3, 12)) * 1.5
    x = signal + rng.normal(size=(400, 12))
    train, test = ds.split_rows("train"), ds.split_rows("test")
    probe = _fitted_probe(x[train], ds.labels[train], Task.MULTICLASS, 3)
    noise = rng.normal(size=(400, 12))  # an encoder that sees nothing of the labels
    feats = {"a": (x[train], x[test]), "noise": (noise[train], noise[test])}
    common = {"m_images": len(train), "ridge": 1e-6, "seed": 0}
    (same,) = transfer_rows("a", "a", feats, [probe], ds.labels[test], Task.MULTICLASS, **common)
    assert same["auroc_b"] > 0.8
    assert abs(same["retention"] - 1.0) < 1e-6 and same["lo"] <= 1.0 <= same["hi"]
    assert same["ece_mapped"] == pytest.approx(same["ece_b"], abs=1e-6)
    (lost,) = transfer_rows("noise", "a", feats, [probe], ds.labels[test], Task.MULTICLASS, **common)
    assert lost["retention"] < 0.8 and lost["hi"] < 1.0


def test_transfer_reads_the_stored_probes_of_a_sweep(bench_db):
    from crsbench.analyses.agreement.successor import SuccessorOptions
    from crsbench.bench import Bench, ProbeConfig

    db, _, _ = bench_db
    config = ProbeConfig(probes=("logreg",), depths=(1.0,), fractions=(1.0,), seeds=(0,))
    Bench(db).probe(["enc-a", "enc-b"], ["derm"], config=config)
    with Warehouse.open(db) as wh:
        result = run_analysis(wh, "agreement", {"dataset": "derm", "replicates": 100}, store=False)
    moved = result.tables["classifier_transfer"]
    # every ordered pair whose second encoder has a stored probe: enc-c has none (a note says so)
    assert sorted(zip(moved["encoder_a"], moved["encoder_b"], strict=True)) == [
        ("enc-a", "enc-b"),
        ("enc-b", "enc-a"),
        ("enc-c", "enc-a"),
        ("enc-c", "enc-b"),
    ]
    assert any("no stored logreg probe at depth 1.0 of enc-c," in n for n in result.notes)
    assert ((moved["lo"] <= moved["retention"]) & (moved["retention"] <= moved["hi"])).all()
    # the successor test reads the same probes: enc-a's probe on enc-b's mapped features
    report = Bench(db).successor("enc-a", "enc-b", "derm", SuccessorOptions(replicates=100))
    (row,) = report.table.to_dict("records")
    expected = moved[(moved["encoder_a"] == "enc-b") & (moved["encoder_b"] == "enc-a")]["retention"].mean()
    assert row["retention"] == pytest.approx(expected, abs=1e-12)
    assert row["random_init"] is not None  # the synthetic sets are random-init: enc-c is the floor
    assert f"a linear map keeps {expected:.3f} of enc-a's AUROC" in report.readings[0]


VIEWS = ("encoder_agreement", "neighbour_composition", "classifier_transfer")


def test_the_named_views_are_empty_before_the_analysis_and_its_tables_after(tmp_path, bench_db):
    from crsbench.analyses import get_analysis
    from crsbench.analyses.registry import output_comments

    spec = get_analysis("agreement")
    table_comments = "select table_name, comment from duckdb_tables() where table_name like 'analysis_agreement_%'"
    with Warehouse.open(tmp_path / "fresh.duckdb") as wh:  # the analysis never ran here
        declared_tables = dict(wh.con.execute(table_comments).fetchall())
        for view in VIEWS:
            assert wh.sql(f"select * from {view}").empty
            assert list(wh.sql(f"select * from {view} limit 0").columns) == list(spec.outputs[view])
        declared = wh.sql(
            "select table_name, column_name, comment from duckdb_columns() where table_name like 'analysis_agreement_%'"
        )
    db, _, _ = bench_db
    with Warehouse.open(db) as wh:
        run_analysis(wh, "agreement", {"replicates": 50})
        written_tables = dict(wh.con.execute(table_comments).fetchall())  # as the registry wrote them
    with Warehouse.open(db) as wh:  # a reopen re-applies the shipped SQL: the stored output stays
        for view in VIEWS:
            stored = wh.sql(f"select * from analysis_agreement_{view} order by all")
            shown = wh.sql(f"select * from {view} order by all")
            # classifier_transfer has rows once a probe is stored (test_transfer_reads_... sweeps one)
            assert len(shown) > 0 or view == "classifier_transfer"
            assert list(shown.columns) == list(stored.columns)
            pd.testing.assert_frame_equal(shown, stored, check_dtype=False)
            comment = wh.con.execute("select comment from duckdb_views() where view_name = ?", [view]).fetchone()
            assert comment and "docs/METHODS.md §17" in comment[0]
        after = wh.sql(
            "select table_name, column_name, comment from duckdb_columns() where table_name like 'analysis_agreement_%'"
        )
    # the declared empty tables carry the comments the analysis registry writes on its output
    for view in VIEWS:
        table = f"analysis_agreement_{view}"
        written = [s for s in output_comments(spec, view, table, list(spec.outputs[view])) if " column " in s]
        mine = declared[declared["table_name"] == table]
        assert len(mine) == len(written) == len(spec.outputs[view])
        for row in mine.itertuples():
            assert row.comment == spec.column_doc(view, row.column_name)
    assert len(declared_tables) == 3 and all(written_tables[t] == c for t, c in declared_tables.items())
    kept = after.merge(declared, on=["table_name", "column_name"], suffixes=("_after", "_declared"))
    assert (kept["comment_after"] == kept["comment_declared"]).all()


def test_agreement_on_one_dataset_keeps_the_others_rows_unless_replace_all(bench_db):
    """`analyze agreement -d derm` after a run on both datasets: cxr's rows are the stored ones, byte for
    byte; derm's are the fresh run's (here with k=5); `--replace-all` leaves derm's alone (issue 42)."""
    from crsbench.cli import main

    db, _, _ = bench_db
    tables = [f"analysis_agreement_{part}" for part in ("encoder_agreement", "neighbour_composition", "summary")]

    def stored() -> dict[str, pd.DataFrame]:
        with Warehouse.open(db, read_only=True) as wh:
            return {t: wh.sql(f"select * from {t}") for t in tables}

    def rows_of(frame: pd.DataFrame, dataset: str) -> pd.DataFrame:
        return frame[frame["dataset_id"] == dataset].reset_index(drop=True)

    base = ["analyze", "agreement", "--replicates", "50", "--set", "transfer=false", "--db", str(db)]
    assert main(base) == 0
    before = stored()
    assert all(set(before[t]["dataset_id"]) == {"cxr", "derm"} for t in tables)
    assert main([*base, "-d", "derm", "--set", "k=5"]) == 0
    after = stored()
    with Warehouse.open(db, read_only=True) as wh:
        params = {"dataset": "derm", "replicates": 50, "transfer": False, "k": 5}
        fresh = run_analysis(wh, "agreement", params, store=False)
    frames = {**fresh.tables, "summary": fresh.summary}
    for table in tables:
        assert rows_of(after[table], "cxr").equals(rows_of(before[table], "cxr"))
        new = frames[table.removeprefix("analysis_agreement_")].reset_index(drop=True)
        pd.testing.assert_frame_equal(rows_of(after[table], "derm"), new, check_dtype=False)
    derm = rows_of(after["analysis_agreement_encoder_agreement"], "derm")
    assert (derm.loc[derm["measure"] == am.MUTUAL_KNN, "k"] == 5).all()
    assert main([*base, "-d", "derm", "--replace-all"]) == 0
    assert all(set(frame["dataset_id"]) == {"derm"} for frame in stored().values())


def test_the_shipped_view_files_are_the_ones_the_registry_generates():
    """sql/views/195..196, 270..275, 330..333 and 350..351 are generated (scripts/analysis_sql.py) from the
    bootstrap, agreement, screen and retrieval registrations: each shipped file is the render, and no
    generated file is left behind that nothing declares."""
    from crsbench.analyses.views import shipped_files
    from crsbench.warehouse.shipped_sql import sql_files

    generated = shipped_files()
    shipped = dict(sql_files())
    assert sorted(generated) == [
        "views/195_analysis_bootstrap_dataset_crs_replicates.sql",
        "views/196_dataset_crs_replicates.sql",
        "views/270_analysis_agreement_encoder_agreement.sql",
        "views/271_analysis_agreement_neighbour_composition.sql",
        "views/272_analysis_agreement_classifier_transfer.sql",
        "views/273_encoder_agreement.sql",
        "views/274_neighbour_composition.sql",
        "views/275_classifier_transfer.sql",
        "views/330_analysis_screen_screen_scores.sql",
        "views/331_analysis_screen_screen_replicates.sql",
        "views/332_screen_scores.sql",
        "views/333_screen_replicates.sql",
        "views/350_analysis_retrieval_retrieval_scores.sql",
        "views/351_retrieval_scores.sql",
    ]
    for name, text in generated.items():
        assert shipped[name] == text, f"sql/{name} is stale: run python scripts/analysis_sql.py"
    leftover = [n for n, t in shipped.items() if "by `python scripts/analysis_sql.py`" in t and n not in generated]
    assert leftover == []
