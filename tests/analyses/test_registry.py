"""The analysis registry, its writer and the `crsbench analyze` command."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from support.analyses_support import append, run_row

from crsbench.analyses import AnalysisResult, Param, analyses, register_analysis, registry, resolve_params, run_analysis
from crsbench.cli import main
from crsbench.core import CrsbenchError
from crsbench.warehouse.connection import Warehouse


@pytest.fixture
def toy_analysis():
    calls = []

    @register_analysis("toy", params={"size": 2, "label": "x"})
    def toy(wh, params):
        """A toy analysis for the tests."""
        calls.append(dict(params))
        parts = {"numbers": pd.DataFrame({"i": range(params["size"]), "label": params["label"]})}
        if params["size"] > 2:
            parts["extra"] = pd.DataFrame({"note": ["big"]})
        return AnalysisResult(tables=parts, summary=pd.DataFrame({"n": [params["size"]]}), notes=["ok"])

    yield calls
    registry.ANALYSES.remove("toy")


def test_every_encoder_analysis_is_registered():
    assert {"e1", "e2", "e3", "e4", "e6"} <= set(analyses())
    assert analyses()["e6"].defaults == {"reference": None}


def test_writer_stores_tables_records_them_and_drops_stale_ones(tmp_path, toy_analysis):
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        run_analysis(wh, "toy", {"size": 3})
        assert toy_analysis == [{"size": 3, "label": "x"}]  # defaults filled in
        assert wh.sql("select count(*) as n from analysis_toy_numbers")["n"][0] == 3
        rows = wh.sql("select table_name, params from analyses where analysis = 'toy' order by 1")
        assert rows["table_name"].tolist() == ["analysis_toy_extra", "analysis_toy_numbers", "analysis_toy_summary"]
        assert json.loads(rows["params"][0]) == {"label": "x", "size": 3}
        run_analysis(wh, "toy", {"size": 1, "label": None})  # None = default
        rows = wh.sql("select table_name from analyses where analysis = 'toy' order by 1")
        assert rows["table_name"].tolist() == ["analysis_toy_numbers", "analysis_toy_summary"]
        tables = set(wh.sql("select table_name from information_schema.tables")["table_name"])
        assert "analysis_toy_extra" not in tables
        assert wh.sql("select * from analysis_toy_numbers")["i"].tolist() == [0]


def test_an_invalid_part_name_stores_nothing(tmp_path, toy_analysis):
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        run_analysis(wh, "toy", {"size": 2})
        bad = AnalysisResult(
            tables={"numbers": pd.DataFrame({"i": [9]}), "Bad-Name": pd.DataFrame({"x": [1]})},
            summary=pd.DataFrame({"n": [1]}),
        )
        with pytest.raises(ValueError, match="invalid output part"):
            registry.store_result(wh, "toy", bad, {})
        assert wh.sql("select * from analysis_toy_numbers")["i"].tolist() == [0, 1]


def test_unknown_names_and_params_are_user_errors(tmp_path, toy_analysis):
    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        with pytest.raises(CrsbenchError, match="unknown analysis 'nope'"):
            run_analysis(wh, "nope")
        with pytest.raises(CrsbenchError, match="does not take panel"):
            run_analysis(wh, "toy", {"panel": "p"})
    with pytest.raises(ValueError, match="registered twice"):
        register_analysis("toy")(lambda wh, params: None)


def test_cli_runs_an_analysis_and_lists_the_registry(tmp_path, capsys):
    db = tmp_path / "w.duckdb"
    with Warehouse.open(db) as wh:
        append(wh, [run_row("e", "d", depth=d, auroc=a, ece=0.1) for d, a in ((0.5, 0.9), (1.0, 0.8))])
    assert main(["--json", "analyze", "e3", "--db", str(db)]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["summary"][0]["best_depth"] == 0.5
    assert "analysis_e3_sweeps" in payload["tables"]
    assert main(["analyze", "e3", "--panel", "p", "--db", str(db)]) == 1
    assert "does not take panel" in capsys.readouterr().err
    assert main(["analyze", "e2", "--set", "methods=temperature", "--db", str(db)]) == 0
    assert main(["analyze", "e2", "--set", "methods", "--db", str(db)]) == 1
    assert main(["--json", "analyze", "list"]) == 0
    names = [row["analysis"] for row in json.loads(capsys.readouterr().out.splitlines()[-1])["analyses"]]
    assert {"e1", "e2", "e3", "e4", "e6"} <= set(names)


def test_a_bare_default_is_a_param_with_a_generic_help_and_the_default_type(toy_analysis):
    spec = analyses()["toy"]
    assert spec.params["size"] == Param(2, registry.GENERIC_HELP, int, name="size")
    assert spec.params["label"].type is str and spec.params["label"].cli_flag == "--label"
    assert spec.defaults == {"size": 2, "label": "x"}
    assert resolve_params(spec, {"size": 3, "label": None}) == {"size": 3, "label": "x"}


def test_a_param_declares_its_help_type_and_command_line_flag():
    register_analysis(
        "toyparams",
        params={
            "encoders": Param(None, "Encoder to include (repeatable).", list[str], "--encoder", "-e"),
            "min_count": Param(3, "Smallest count."),
            "level": Param(1, "A level, an int accepted as a float.", float),
            "names": Param(("a", "b"), "Names."),
        },
    )(lambda wh, params: None)
    try:
        params = analyses()["toyparams"].params
        assert params["encoders"].cli_flag == "--encoder" and params["encoders"].short == "-e"
        assert params["encoders"].repeatable and params["names"].type == list[str] and params["names"].repeatable
        assert params["min_count"].cli_flag == "--min-count" and params["min_count"].type is int
        assert not params["min_count"].repeatable and params["min_count"].help == "Smallest count."
        assert params["level"].type is float and params["encoders"].name == "encoders"
    finally:
        registry.ANALYSES.remove("toyparams")


@pytest.mark.parametrize("param", [Param("3", "A count.", int), Param(1, "A switch.", bool), Param(True, "N.", int)])
def test_a_default_not_of_the_declared_type_is_refused(param):
    with pytest.raises(ValueError, match="not of its declared type"):
        register_analysis("toybadparam", params={"n": param})
    assert "toybadparam" not in analyses()


def test_builtin_params_are_explained_and_shared_names_read_alike():
    declared: dict[str, set[tuple[object, str, str | None]]] = {}
    for name, spec in analyses().items():
        for key, param in spec.params.items():
            assert param.help != registry.GENERIC_HELP and param.help.endswith("."), (name, key)
            declared.setdefault(key, set()).add((param.type, param.cli_flag, param.short))
    assert {"seed", "panel", "dataset", "encoders", "replicates", "depth"} <= set(declared)
    assert {k: v for k, v in declared.items() if len(v) > 1} == {}


def test_the_analyze_options_are_the_declared_flags():
    """Each param option `crsbench analyze` has names a declared param by its flag and short name."""
    import typer.main

    from crsbench.cli.app import app

    root = typer.main.get_command(app)
    command = root.get_command(type(root.context_class(root))(root, info_name="crsbench"), "analyze")
    flags = {p.cli_flag: p for spec in analyses().values() for p in spec.params.values()}
    options = [o for o in command.params if o.opts[0] not in ("--set", "--replace-all", "--db") and o.opts[0][0] == "-"]
    assert len(options) >= 10
    for option in options:
        long = next(o for o in option.opts if o.startswith("--"))
        assert long in flags, long
        assert [o for o in option.opts if not o.startswith("--")] == ([flags[long].short] if flags[long].short else [])
