"""Contract of every analysis (crsbench.analyses.registry.ANALYSES): complete metadata (description,
declared outputs with documented columns, declared inputs) and unknown params refused by name
before the warehouse is touched. Full runs are the analyses' own tests (tests/analyses)."""

from __future__ import annotations

import re

import pytest

from crsbench.analyses.inputs import READS
from crsbench.analyses.registry import ANALYSES, AnalysisSpec, resolve_params, run_analysis, table_name
from tests.contract.support import names, refused_naming

ANALYSIS_NAMES = names(ANALYSES)
IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]*$")


class Untouchable:
    """A warehouse stand-in that fails on any use: the params are checked before any read."""

    def __getattr__(self, attr: str) -> object:
        raise AssertionError(f"the warehouse was used ({attr}) before the params were checked")


@pytest.mark.parametrize("name", ANALYSIS_NAMES)
def test_metadata_is_complete(name):
    spec = ANALYSES.get(name)
    assert isinstance(spec, AnalysisSpec) and spec.name == name
    assert len(spec.description.split()) >= 3
    assert "summary" in spec.outputs, "the CLI prints the summary part: declare its columns"
    for part, columns in spec.outputs.items():
        assert IDENTIFIER.match(part) and table_name(name, part) == f"analysis_{name}_{part}"
        assert columns and len(set(columns)) == len(columns), f"{part}: columns declared once each"
        for column in columns:
            doc = spec.column_doc(part, column)
            assert doc and doc.strip(), f"{name}.{part}.{column} has no description"
    assert spec.reads and set(spec.reads) <= set(READS)
    assert all(IDENTIFIER.match(p) for p in spec.params)


@pytest.mark.parametrize("name", ANALYSIS_NAMES)
def test_unknown_param_is_refused_by_name_before_any_read(name):
    with refused_naming("no_such_param", name):
        run_analysis(Untouchable(), name, {"no_such_param": 1})  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ANALYSIS_NAMES)
def test_declared_params_resolve_to_their_defaults(name):
    spec = ANALYSES.get(name)
    declared = {p: param.default for p, param in spec.params.items()}
    assert resolve_params(spec, None) == declared
    # None for a param means 'the default' (the CLI passes unset options so)
    assert resolve_params(spec, {p: None for p in spec.params}) == declared
