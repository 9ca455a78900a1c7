"""Analyses over the warehouse (METHODS.md §11 and 7), each registered by name.

Add one by writing a module in this package:

    @register_analysis(
        "e3",
        params={"probe": "logreg"},
        outputs={"sweeps": ("encoder_id", "best_depth"), "summary": ("encoder_id", "best_depth")},
        columns={"best_depth": "Depth with the highest seed-mean clean AUROC; 0.25 .. 1.0."},
        section="§12",
    )
    def depth_sweep(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult: ...

`outputs` names each table part's columns, `columns` says what each holds (the tables' column
COMMENTs). Every module here is imported when the registry is first asked for its contents, so
`crsbench analyze NAME` finds it with no other edit.
"""

from crsbench.analyses.registry import (
    AnalysisFn,
    AnalysisResult,
    AnalysisSpec,
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
    "analyses",
    "get_analysis",
    "register_analysis",
    "resolve_params",
    "run_analysis",
    "store_result",
    "table_name",
]
