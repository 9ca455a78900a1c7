"""An analysis defined in one module, its column descriptions declared where it is registered,
gets its tables and their comments with no edit elsewhere (crsbench/analyses/registry.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import pytest

from crsbench.analyses import AnalysisResult, register_analysis, run_analysis
from crsbench.analyses.registry import ANALYSES
from crsbench.warehouse.connection import Warehouse

NAME = "toycount"
OUTPUTS = {"counts": ("encoder_id", "n_runs", "share"), "summary": ("n_encoders", "n_runs")}
COLUMNS = {
    "n_runs": "Run records of the encoder in table runs; count.",
    "summary.n_runs": "Run records of every encoder together; count.",
    "share": "The encoder's n_runs over all run records; [0, 1].",
    "n_encoders": "Encoders with at least one run record; count.",
}


def count_runs(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Run records per encoder."""
    counts = wh.sql("select encoder_id, count(*) as n_runs from runs group by all order by encoder_id")
    counts["share"] = counts["n_runs"] / max(int(counts["n_runs"].sum()), 1)
    summary = pd.DataFrame({"n_encoders": [len(counts)], "n_runs": [int(counts["n_runs"].sum())]})
    return AnalysisResult({"counts": counts}, summary)


@pytest.fixture
def toy():
    """The analysis registered as a plugin module would register it, then forgotten again."""
    ANALYSES.load()
    register_analysis(NAME, outputs=OUTPUTS, columns=COLUMNS, section="§11")(count_runs)
    yield
    ANALYSES.remove(NAME)


def _comments(db, table: str) -> dict[str | None, str]:
    with Warehouse.open(db, read_only=True) as wh:
        columns = wh.sql(
            "select column_name, comment from duckdb_columns() where table_name = ? order by column_index", [table]
        )
        comment = wh.sql("select comment from duckdb_tables() where table_name = ?", [table])["comment"].item()
    return {None: comment, **dict(zip(columns["column_name"], columns["comment"], strict=True))}


def test_an_analysis_declared_in_one_module_gets_its_tables_and_comments(toy, tmp_path):
    db = tmp_path / "w.duckdb"
    with Warehouse.open(db) as wh:
        result = run_analysis(wh, NAME)
        stored = set(wh.sql("select table_name from analyses where analysis = ?", [NAME])["table_name"])
    assert stored == {f"analysis_{NAME}_counts", f"analysis_{NAME}_summary"}
    assert result.summary["n_runs"].tolist() == [0]
    counts = _comments(db, f"analysis_{NAME}_counts")
    summary = _comments(db, f"analysis_{NAME}_summary")
    assert list(counts) == [None, *OUTPUTS["counts"]] and list(summary) == [None, *OUTPUTS["summary"]]
    assert counts[None].startswith(f"Output 'counts' of analysis {NAME}") and "Run records per encoder." in counts[None]
    # the analysis's own sentences, with its section; the part-specific one wins in its part
    assert counts["n_runs"] == "Run records of the encoder in table runs; count. docs/METHODS.md §11."
    assert summary["n_runs"] == "Run records of every encoder together; count. docs/METHODS.md §11."
    assert counts["share"] == "The encoder's n_runs over all run records; [0, 1]. docs/METHODS.md §11."
    # a name that means the same everywhere comes from the shared descriptions
    assert counts["encoder_id"] == "Encoder id (registry name). docs/METHODS.md §11."


def test_a_description_of_an_undeclared_part_is_refused():
    with pytest.raises(ValueError, match="part it does not declare"):
        register_analysis("toybad", outputs=OUTPUTS, columns={"cells.n_runs": "Runs; count."})
    assert "toybad" not in ANALYSES
