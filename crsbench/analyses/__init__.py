"""Analyses over the warehouse (METHODS.md §11 and 7), each registered by name.

Add one by writing a module in this package:

    @register_analysis(
        "e3",
        params={"probe": Param("logreg", "Probe whose runs are swept.")},
        outputs={"sweeps": ("encoder_id", "best_depth"), "summary": ("encoder_id", "best_depth")},
        columns={"best_depth": "Depth with the highest seed-mean clean AUROC; 0.25 .. 1.0."},
        section="§12",
    )
    def depth_sweep(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult: ...

`params` declares every accepted param (`Param`: default, help, CLI type and flag), `outputs`
names each table part's columns, `columns` says what each holds (the tables' column COMMENTs) and
`section` the docs/METHODS.md section that defines them. Every module here is imported when the
registry is first asked for its contents, so `crsbench analyze NAME` finds it with no other edit.
"""

from crsbench.analyses.registry import (
    AnalysisFn,
    AnalysisResult,
    AnalysisSpec,
    Param,
    analyses,
    get_analysis,
    register_analysis,
    resolve_params,
    run_analysis,
    store_result,
    table_name,
)

__all__ = [
    "AnalysisFn",
    "AnalysisResult",
    "AnalysisSpec",
    "Param",
    "analyses",
    "get_analysis",
    "register_analysis",
    "resolve_params",
    "run_analysis",
    "store_result",
    "table_name",
]
