"""Declared outputs: every analysis names its tables and columns; results and the report keep to them."""

from __future__ import annotations

import ast
from pathlib import Path

import pandas as pd
import pytest

from crsbench.analyses import AnalysisResult, analyses, register_analysis, registry, run_analysis
from crsbench.warehouse.connection import Warehouse

REPORT = Path(__file__).resolve().parents[2] / "crsbench" / "report"


def test_every_analysis_declares_its_parts_and_columns():
    for name, spec in analyses().items():
        assert "summary" in spec.outputs, name
        assert all(len(cols) == len(set(cols)) > 0 for cols in spec.outputs.values()), name


@pytest.fixture()
def declared(tmp_path):
    @register_analysis(
        "declared_toy",
        params={"drop": "", "extra": ""},
        outputs={"numbers": ("i", "label"), "summary": ("n",)},
    )
    def toy(wh, params):
        numbers = pd.DataFrame({"i": [1, 2], "label": ["a", "b"]}).drop(columns=params["drop"] or [])
        if params["extra"]:
            numbers[params["extra"]] = 0.5
        return AnalysisResult(tables={"numbers": numbers}, summary=pd.DataFrame({"n": [2]}))

    with Warehouse.open(tmp_path / "w.duckdb") as wh:
        yield wh
    registry.ANALYSES.remove("declared_toy")


def test_a_result_missing_a_declared_column_is_a_bug(declared):
    run_analysis(declared, "declared_toy")  # as declared: fine
    with pytest.raises(ValueError, match=r"part 'numbers' lacks declared column.s. label"):
        run_analysis(declared, "declared_toy", {"drop": "label"})
    assert declared.sql("select * from analysis_declared_toy_numbers").columns.tolist() == ["i", "label"]


def test_a_result_with_an_undeclared_column_is_a_bug_and_stores_nothing(declared):
    run_analysis(declared, "declared_toy")
    with pytest.raises(ValueError, match=r"analysis 'declared_toy' part 'numbers' wrote undeclared column.s. secret"):
        run_analysis(declared, "declared_toy", {"extra": "secret"})
    # the earlier run's table stands: a refused result is never written
    assert declared.sql("select * from analysis_declared_toy_numbers").columns.tolist() == ["i", "label"]
    with pytest.raises(ValueError, match=r"undeclared column.s. secret"):
        run_analysis(declared, "declared_toy", {"extra": "secret"}, store=False)


def test_an_analysis_that_declares_nothing_is_not_checked(tmp_path):
    # Third-party analyses may leave `outputs` out; only the declaration test flags built-in ones.
    @register_analysis("undeclared_toy")
    def toy(wh, params):
        return AnalysisResult(tables={"anything": pd.DataFrame({"x": [1]})}, summary=pd.DataFrame({"y": [2]}))

    try:
        with Warehouse.open(tmp_path / "w.duckdb") as wh:
            assert run_analysis(wh, "undeclared_toy").tables["anything"].columns.tolist() == ["x"]
            assert wh.sql("select * from analysis_undeclared_toy_summary").columns.tolist() == ["y"]
    finally:
        registry.ANALYSES.remove("undeclared_toy")


def test_an_undeclared_part_is_a_bug(tmp_path):
    @register_analysis("undeclared_part", outputs={"summary": ("n",)})
    def toy(wh, params):
        return AnalysisResult(tables={"secret": pd.DataFrame({"x": [1]})}, summary=pd.DataFrame({"n": [1]}))

    try:
        with Warehouse.open(tmp_path / "w.duckdb") as wh, pytest.raises(ValueError, match=r"undeclared part.s. secret"):
            run_analysis(wh, "undeclared_part")
    finally:
        registry.ANALYSES.remove("undeclared_part")


def _report_reads() -> list[tuple[str, int, str, str, tuple[str, ...]]]:
    """Every `data.analysis("name", "part", "col", ...)` call in the report, with constant names."""
    reads = []
    for path in sorted(REPORT.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "analysis"
                and node.args
                and all(isinstance(a, ast.Constant) for a in node.args[:2])
            ):
                names = tuple(a.value for a in node.args[2:] if isinstance(a, ast.Constant))
                reads.append((path.name, node.lineno, node.args[0].value, node.args[1].value, names))
    return reads


def test_the_report_reads_only_declared_parts_and_columns():
    reads = _report_reads()
    assert {(a, p) for _, _, a, p, _ in reads} >= {("bootstrap", "encoders"), ("e2", "cells"), ("e6", "scarcity")}
    specs = analyses()
    for where, line, analysis, part, columns in reads:
        declared = specs[analysis].outputs.get(part)
        assert declared is not None, f"{where}:{line} reads undeclared part {analysis}.{part}"
        assert set(columns) <= set(declared), f"{where}:{line} reads undeclared {set(columns) - set(declared)}"


def test_reading_an_undeclared_name_fails_loudly():
    spec = analyses()["bootstrap"]
    with pytest.raises(KeyError, match="declares no column 'p_first'"):
        spec.columns("encoders", "p_rank1", "p_first")
    with pytest.raises(KeyError, match="declares no output part 'ranks'"):
        spec.columns("ranks")
