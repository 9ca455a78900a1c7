"""The data dictionary inside the warehouse: every object and column commented, `crsbench
describe`, docs/DATA_DICTIONARY.md kept in step, and the sql/ layout (one object per file)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
from support.runs_factory import PROFILES, encoder_runs, frame

import crsbench
from crsbench.cli import main
from crsbench.warehouse.dictionary import describe, entries, uncommented
from crsbench.warehouse.panels import freeze_panel
from crsbench.warehouse.shipped_sql import CONSTANTS_FILE, sql_files

ROOT = Path(__file__).resolve().parents[2]
PUBLIC_VIEWS = {
    "metrics_seed",
    "axes_cell",
    "axes_encoder",
    "axes_scoped",
    "crs_candidates",
    "axes_normalised",
    "crs_cell",
    "crs_encoder",
    "pareto_pairs",
    "crs_cohort_anchors",
    "crs_cohort_cell",
    "crs_cohort_encoder",
    "rank_agreement",
    "rank_agreement_cohort",
    "rank_agreement_regime",
    "axis_correlations",
    "runs",
    "predictions",
}


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = tmp_path_factory.mktemp("dictionary") / "w.duckdb"
    with crsbench.Warehouse.open(path) as wh:
        wh.append_runs(frame([r for e in list(PROFILES)[:3] for r in encoder_runs(e)]))
        freeze_panel(wh, "p", ["e1", "e2", "e3"], allow_small=True)
    return path


def test_every_table_view_macro_and_column_carries_a_comment(db):
    with crsbench.Warehouse.open(db, read_only=True) as wh:
        items = entries(wh.con)
        assert uncommented(wh.con) == []
        kinds = {e.name: e.kind for e in items}
        n_columns = sum(len(e.fields) for e in items if "macro" not in e.kind)
    assert {n for n, k in kinds.items() if k == "view"} >= PUBLIC_VIEWS
    assert {"datasets", "runs", "reference_anchors"} <= set(kinds)
    assert kinds["fn_crs_scores"] == "table macro" and kinds["fn_exact_mean"] == "macro"
    assert n_columns > 300  # the check covers the real catalogue, not an empty one


def test_comments_name_a_methods_section_that_exists(db):
    methods = (ROOT / "docs" / "METHODS.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^#+ §(\d+(?:\.\d+)?)", methods, flags=re.M))
    with crsbench.Warehouse.open(db, read_only=True) as wh:
        # schema_info (migration bookkeeping) documents no method
        method_objects = [e for e in entries(wh.con) if e.name != "schema_info"]
    texts = [e.comment for e in method_objects]
    texts += [f.comment for e in method_objects for f in e.fields if f.comment]
    cited = {s for t in texts for s in re.findall(r"§(\d+(?:\.\d+)?)", t)}
    assert cited and cited <= headings, sorted(cited - headings)
    missing = [t for t in texts if "METHODS.md" not in t and not t.startswith("Parquet part file")]
    assert missing == []


def test_describe_lists_everything_and_one_object_with_its_columns(db, capsys):
    assert main(["--json", "describe", "--db", str(db)]) == 0
    listed = json.loads(capsys.readouterr().out)["objects"]
    assert {o["name"] for o in listed} >= PUBLIC_VIEWS
    assert main(["--json", "describe", "crs_encoder", "--db", str(db)]) == 0
    (one,) = json.loads(capsys.readouterr().out)["objects"]
    with crsbench.Warehouse.open(db, read_only=True) as wh:
        columns = list(wh.sql("select * from crs_encoder limit 0").columns)
    assert [f["name"] for f in one["fields"]] == columns
    assert "higher is better" in next(f["comment"] for f in one["fields"] if f["name"] == "crs")
    assert main(["describe", "crs_encodr", "--db", str(db)]) == 1
    assert "did you mean 'crs_encoder'" in capsys.readouterr().err


def test_data_dictionary_doc_is_generated_from_the_file():
    spec = importlib.util.spec_from_file_location("data_dictionary", ROOT / "scripts" / "data_dictionary.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = (ROOT / "docs" / "DATA_DICTIONARY.md").read_text(encoding="utf-8")
    assert module.render() == committed, "stale: run python scripts/data_dictionary.py"


def test_sql_files_hold_one_object_each_opening_with_what_a_row_is():
    # The constant macros are generated from crsbench.core, not shipped as a file; they come first.
    (generated, _), *shipped = sql_files()
    assert generated == CONSTANTS_FILE
    names = [name for name, _ in shipped]
    assert names == sorted(n for n in names if n.startswith("macros/")) + sorted(
        n for n in names if n.startswith("views/")
    )
    for name, text in shipped:
        assert (ROOT / "sql" / name).is_file(), name
        created = re.findall(r"^create (?:or replace )?(macro|view|table) (?:if not exists )?(\w+)", text, flags=re.M)
        assert len(created) == 1, name
        kind, obj = created[0]
        assert re.fullmatch(rf"{'macros' if kind == 'macro' else 'views'}/\d{{3}}_{obj}\.sql", name)
        assert obj.startswith("fn_") == (kind == "macro"), name  # the naming convention
        head = text[: re.search(r"^create ", text, flags=re.M).start()]
        assert head.startswith("--") and "docs/METHODS.md §" in head, name
        assert re.search(rf"^comment on (macro|macro table|view|table) {obj} is", text, flags=re.M), name


def test_an_upgraded_warehouse_drops_the_macros_renamed_to_fn(tmp_path):
    path = tmp_path / "old.duckdb"
    with crsbench.Warehouse.open(path) as wh:
        wh.con.execute("create macro crs_scores(a) as table select a")
        wh.con.execute("create macro exact_mean(x) as avg(x)")
    with crsbench.Warehouse.open(path) as wh:
        assert describe(wh.con, "fn_crs_scores")
        left = wh.sql(
            "select function_name from duckdb_functions() where function_name in ('crs_scores', 'exact_mean')"
        )
    assert left.empty


_STOP_WORDS = "a an the of for in on to by per and or is as at with this that its it be from one each when which are"
_STOP = set(_STOP_WORDS.split())


def _stem(token: str) -> str:
    return token[:-1] if len(token) > 3 and token.endswith("s") else token


def _beyond_name(name: str, comment: str) -> set[str]:
    """The words a comment adds to its column's name (stop words, plural -s and the METHODS.md
    reference left out): a comment that only rephrases the name adds at most one."""
    text = re.sub(r"docs/METHODS\.md\s*(§[\d.]+(?:\s*(?:-|,|and)\s*§?[\d.]+)*)?\.?", " ", comment)
    words = {_stem(t) for t in re.findall(r"[a-z0-9]+", text.lower())} - _STOP
    return words - {_stem(t) for t in name.lower().split("_")}


def test_beyond_name_flags_a_rephrased_name():
    assert _beyond_name("brier_change", "The change in brier. docs/METHODS.md §12.") == set()
    assert _beyond_name("recorded_at", "When it was recorded.") == {"was"}
    assert len(_beyond_name("mean_confidence", "Mean over test images of max_k p_k.")) >= 2


def test_no_column_comment_only_rephrases_its_name(db):
    from crsbench.analyses import analyses
    from crsbench.analyses.columns import GENERIC

    with crsbench.Warehouse.open(db, read_only=True) as wh:
        fields = [(f"{e.name}.{f.name}", f.name, f.comment) for e in entries(wh.con) for f in e.fields if f.comment]
    declared = [(name, spec.column_docs) for name, spec in analyses().items()]
    fields += [(f"analysis {a}: {k}", k.split(".")[-1], v) for a, docs in declared for k, v in docs.items()]
    fields += [(f"analysis columns: {k}", k, v) for k, v in GENERIC.items()]
    assert len(fields) > 400
    rephrased = [where for where, name, comment in fields if len(_beyond_name(name, comment)) < 2]
    assert rephrased == []


def test_the_formula_and_metric_comments_define_their_terms(db):
    with crsbench.Warehouse.open(db, read_only=True) as wh:
        comments = {(e.name, f.name): f.comment for e in entries(wh.con) for f in e.fields}
    for view in ("crs_encoder", "crs_cell", "crs_cohort_cell", "crs_cohort_encoder"):
        ideal = comments[(view, "ideal")]
        for symbol in ("x~_a =", "lo_a", "hi_a", "w_a = 0.25"):
            assert symbol in ideal, (view, symbol)
    assert "prediction accuracy scores" not in comments[("runs", "mean_confidence")]
    assert "predicted class" in comments[("runs", "mean_confidence")]
    assert "pretrained or random-init" in comments[("metrics_seed", "regime")]
