"""The analysis registry and the one writer every analysis result goes through.

An analysis is a function `(wh, params) -> AnalysisResult`, registered by name with
`@register_analysis(name, params={"seed": Param(0, "Random seed."), ...})`. Running one
(`run_analysis`) merges the caller's params over the declared defaults (an unknown param is a user error),
calls the function and stores every output frame as the warehouse table
`analysis_<name>_<part>` (plus `analysis_<name>_summary`), all in one transaction,
with one row per table in the `analyses` table and a COMMENT on each table and column.
An analysis describes its columns where it is registered (`columns=`, `section=`); names that
mean the same in every analysis fall back to `columns.GENERIC`.
"""

from __future__ import annotations

import dataclasses
import json
import pkgutil
import re
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any, get_origin

import pandas as pd

from crsbench.analyses import merge
from crsbench.analyses.columns import column_doc
from crsbench.analyses.inputs import READS, current_digests, described_inputs
from crsbench.analyses.side_tables import Replacement, write_deferred
from crsbench.core import CrsbenchError, ProgressFn, Registry, __version__, no_progress
from crsbench.core.schema import sql_identifier, sql_literal
from crsbench.warehouse.connection import Warehouse

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_RESERVED = {"list", "all"}


@dataclasses.dataclass
class AnalysisResult:
    """What an analysis returns: named output frames, a summary frame and notes.

    `tables` maps a part name (lower-case identifier) to its frame; it is stored as
    `analysis_<name>_<part>`. `summary` is the short table the CLI prints (also stored,
    as part `summary`). `notes` are one-line remarks (skipped cells, missing inputs).
    """

    tables: dict[str, pd.DataFrame]
    summary: pd.DataFrame
    notes: list[str] = dataclasses.field(default_factory=list)


AnalysisFn = Callable[[Warehouse, Mapping[str, Any]], AnalysisResult]


# The help of a param declared by its bare default (a plugin's): the analysis's own docs explain it.
GENERIC_HELP = "A parameter of the analysis (see its documentation)."


@dataclasses.dataclass(frozen=True)
class Param:
    """One declared analysis parameter: `Param(1000, "Bootstrap replicates; at least 100.")`.

    `type` is what a command line reads the value as: str, int, float, bool, or list[str] for a
    repeatable option (None: taken from the default, str when that is None). `flag` and `short`
    name the command-line option where it is not `--<name-with-dashes>` (encoders: --encoder, -e).
    `name` is the key it is declared under, filled in at registration. A param shared by several
    analyses (seed, panel, dataset, ...) declares the same type, flag and short everywhere.
    """

    default: Any = None
    help: str = GENERIC_HELP
    type: Any = None
    flag: str | None = None
    short: str | None = None
    name: str = ""

    @property
    def cli_flag(self) -> str:
        """The command-line option: `flag`, else --<name-with-dashes>."""
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def repeatable(self) -> bool:
        """A list-valued param: its option may be given several times."""
        return get_origin(self.type) is list


def panel_param(whose: str) -> Param:
    """The `panel` param of the analyses that read a frozen panel, e.g. panel_param("members are
    compared"): one wording of its default, which every such analysis shares."""
    return Param(
        None,
        f"Reference panel whose {whose} (default: the latest frozen panel, else every frozen-regime encoder).",
        str,
    )


def _type_of(default: Any) -> Any:
    if default is None:
        return str
    if isinstance(default, (list, tuple)):
        return list[str]
    return type(default)


def _fits(default: Any, kind: Any) -> bool:
    """Whether `default` is a value of type `kind` (None always is: 'not given'; an int is a float)."""
    check = get_origin(kind) or kind
    if default is None or not isinstance(check, type):
        return True
    if isinstance(default, bool) or check is bool:
        return isinstance(default, bool) and check is bool
    if check is list:
        return isinstance(default, (list, tuple))
    return isinstance(default, check) or (check is float and isinstance(default, int))


def declared_param(analysis: str, name: str, value: Any) -> Param:
    """`value` (a Param, or a plugin's bare default) as the Param declared under `name`, its type resolved."""
    param = value if isinstance(value, Param) else Param(value)
    if param.name not in ("", name):
        raise ValueError(f"analysis {analysis!r} declares param {name!r} as Param(name={param.name!r})")
    kind = param.type if param.type is not None else _type_of(param.default)
    if not _fits(param.default, kind):
        raise ValueError(
            f"analysis {analysis!r} param {name!r}: default {param.default!r} is not of its declared type {kind}"
        )
    return dataclasses.replace(param, type=kind, name=name)


# An analysis's declared output: part name -> the columns of table `analysis_<name>_<part>`
# (part "summary" included). Readers (the report, notebooks) may rely on exactly these names.
Outputs = Mapping[str, Sequence[str]]


@dataclasses.dataclass(frozen=True)
class AnalysisSpec:
    name: str
    fn: AnalysisFn
    description: str
    params: Mapping[str, Param]  # name -> its declaration (default, help, type, CLI flag)
    outputs: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    # Column or 'part.column' -> one-sentence description; section: its docs/METHODS.md section.
    column_docs: Mapping[str, str] = dataclasses.field(default_factory=dict)
    section: str | None = None
    reads: tuple[str, ...] = ("runs",)  # the inputs whose change makes its stored tables stale (inputs.READS)

    @property
    def defaults(self) -> dict[str, Any]:
        """Every param's default, by name."""
        return {name: p.default for name, p in self.params.items()}

    def column_doc(self, part: str, column: str) -> str | None:
        """The COMMENT of `column` of table analysis_<name>_<part> (see `columns.column_doc`)."""
        return column_doc(part, column, self.column_docs, self.section)

    def columns(self, part: str, *names: str) -> tuple[str, ...]:
        """The declared columns of `part`, after checking `names` are among them (a reader's bug if not)."""
        if part not in self.outputs:
            raise KeyError(
                f"analysis {self.name!r} declares no output part {part!r} "
                f"(declared: {', '.join(self.outputs) or 'none'})"
            )
        missing = [n for n in names if n not in self.outputs[part]]
        if missing:
            raise KeyError(f"analysis {self.name!r} part {part!r} declares no column {missing[0]!r}")
        return self.outputs[part]


def _spec(
    name: str,
    fn: AnalysisFn,
    *,
    params: Mapping[str, Any] | None = None,
    description: str | None = None,
    outputs: Outputs | None = None,
    columns: Mapping[str, str] | None = None,
    section: str | None = None,
    reads: Sequence[str] = ("runs",),
) -> AnalysisSpec:
    doc = (fn.__doc__ or "").strip().splitlines()
    return AnalysisSpec(
        name,
        fn,
        description or (doc[0] if doc else ""),
        {key: declared_param(name, key, value) for key, value in (params or {}).items()},
        {part: tuple(cols) for part, cols in (outputs or {}).items()},
        dict(columns or {}),
        section,
        tuple(reads),
    )


# Every module of this package and its family sub-packages registers its analyses on import; discovering them (the
# builtins) means adding an analysis never touches a shared list.
ANALYSIS_PLUGINS = "crsbench.analyses"  # the entry-point group of installed analysis plugins
ANALYSES: Registry[AnalysisSpec] = Registry(
    "analysis",
    make=_spec,
    entry_point_group=ANALYSIS_PLUGINS,
    builtins=tuple(
        m.name for m in pkgutil.walk_packages([str(Path(__file__).parent)], "crsbench.analyses.") if not m.ispkg
    ),
)


def register_analysis(
    name: str,
    *,
    params: Mapping[str, Any] | None = None,
    description: str | None = None,
    outputs: Outputs | None = None,
    columns: Mapping[str, str] | None = None,
    section: str | None = None,
    reads: Sequence[str] = ("runs",),
) -> Callable[[AnalysisFn], AnalysisFn]:
    """Register `fn` as analysis `name`; `params` declares every accepted param (`Param`: its
    default, help and type; a bare default is accepted, with a generic help),
    `outputs` every table part it may write and that part's columns (see `check_outputs`),
    `columns` what each column holds (keyed by column, or 'part.column' where one part differs;
    one sentence each, the COMMENT ON COLUMN of its table), `section` the docs/METHODS.md
    section (e.g. "§11") the comments cite and `reads` the inputs (`inputs.READS`: runs, images)
    whose change makes its stored tables stale."""
    if not _NAME.match(name) or name in _RESERVED:
        raise ValueError(f"invalid analysis name {name!r}")
    if not reads or set(reads) - set(READS):
        raise ValueError(f"analysis {name!r} reads {list(reads)!r}; declare some of {list(READS)!r}")
    declared = {key: declared_param(name, key, value) for key, value in (params or {}).items()}
    parts = set(outputs or {})
    for key in columns or {}:
        if "." in key and key.split(".")[0] not in parts:
            raise ValueError(f"analysis {name!r} describes column {key!r} of a part it does not declare")
    return ANALYSES.register(
        name, params=declared, description=description, outputs=outputs, columns=columns, section=section, reads=reads
    )


def analyses() -> dict[str, AnalysisSpec]:
    """All registered analyses by name, sorted."""
    return dict(sorted(ANALYSES.items()))


def get_analysis(name: str) -> AnalysisSpec:
    return ANALYSES.get(name)


def check_outputs(spec: AnalysisSpec, result: AnalysisResult) -> None:
    """Every part written is declared, with exactly its declared columns (optional parts may be absent).

    A column written but not declared is refused too, so a declaration cannot drift behind
    its code and readers never meet a name they cannot look up. A mismatch is a bug in the
    analysis, not the user's: ValueError (exit 2) naming the analysis, part and column.
    """
    if not spec.outputs:
        return  # an analysis that declares nothing (tests/analyses/test_outputs.py flags built-in ones)
    frames = {**result.tables, "summary": result.summary}
    undeclared = sorted(set(frames) - set(spec.outputs))
    if undeclared:
        raise ValueError(f"analysis {spec.name!r} wrote undeclared part(s) {', '.join(undeclared)}")
    for part, frame in frames.items():
        missing = [c for c in spec.outputs[part] if c not in frame.columns]
        if missing:
            raise ValueError(
                f"analysis {spec.name!r} part {part!r} lacks declared column(s) "
                f"{', '.join(missing)} (it has {', '.join(map(str, frame.columns))})"
            )
        extra = [str(c) for c in frame.columns if str(c) not in spec.outputs[part]]
        if extra:
            raise ValueError(
                f"analysis {spec.name!r} part {part!r} wrote undeclared column(s) "
                f"{', '.join(extra)} (declared: {', '.join(spec.outputs[part])})"
            )


def resolve_params(spec: AnalysisSpec, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """Declared defaults overlaid with the given params (None means 'use the default')."""
    given = {k: v for k, v in (params or {}).items() if v is not None}
    unknown = sorted(set(given) - set(spec.params))
    if unknown:
        accepted = ", ".join(spec.params) or "none"
        raise CrsbenchError(f"analysis {spec.name} does not take {', '.join(unknown)} (accepted params: {accepted})")
    return {**spec.defaults, **given}


def table_name(analysis: str, part: str) -> str:
    name = f"analysis_{analysis}_{part}"
    if not _NAME.match(part) or not _NAME.match(name):
        raise ValueError(f"invalid output part {part!r} of analysis {analysis!r}")
    return name


def store_result(
    wh: Warehouse,
    name: str,
    result: AnalysisResult,
    params: Mapping[str, Any],
    digest: tuple[str | None, list[str] | None] = (None, None),
    *,
    replace_all: bool = False,
    digests: Mapping[str, str] | None = None,
) -> list[str]:
    """Write every output frame as `analysis_<name>_<part>` in one transaction; returns the table names.

    An unrestricted run (or `replace_all`) replaces every table, and tables an earlier run wrote
    but this one did not are dropped. A run restricted to datasets (its `dataset` param) replaces
    only those datasets' rows where it can (`merge.py`, with a note where it cannot). Either way
    the `analyses` table describes exactly what is there. Each table and each described column
    (`AnalysisSpec.column_doc`) gets its COMMENT in the same transaction. `digests` is the
    encoder_run_digest snapshot taken before the run (default: now).
    """
    frames = {**result.tables, "summary": result.summary}
    names = {table_name(name, part): (part, frame) for part, frame in frames.items()}
    scope = None if replace_all else merge.restricted_datasets(params)
    spec = get_analysis(name)
    with wh.transaction() as con:
        snapshot = dict(digests) if digests is not None else current_digests(con)
        rows = con.execute(
            "select table_name, params, input_digest, input_encoders from analyses where analysis = ?", [name]
        ).fetchall()
        previous = {str(r[0]): (str(r[1]), r[2], r[3]) for r in rows}
        writer = _Writer(con, spec, params, digest, snapshot, scope, previous)
        for table, (part, frame) in names.items():
            writer.write(table, part, frame)
        for table in sorted(set(previous) - set(names)):
            writer.keep_or_drop(table)
        con.execute("delete from analyses where analysis = ?", [name])
        for table, record in writer.records.items():
            con.execute(
                "insert into analyses (analysis, table_name, params, code_version, created_at, input_digest, "
                "input_encoders) values (?, ?, ?, ?, current_timestamp, ?, ?)",
                [name, table, record[0], __version__, record[1], record[2]],
            )
    result.notes.extend(writer.notes())
    return list(names)


class _Writer:
    """Writes one run's tables inside store_result's transaction and keeps their `analyses` records."""

    def __init__(
        self,
        con: Any,
        spec: AnalysisSpec,
        params: Mapping[str, Any],
        digest: tuple[str | None, list[str] | None],
        snapshot: Mapping[str, str],
        scope: list[str] | None,
        previous: Mapping[str, tuple[str, str | None, list[str] | None]],
    ) -> None:
        self.con, self.spec, self.params, self.snapshot = con, spec, dict(params), snapshot
        self.scope, self.previous = scope, previous
        self.run = merge.Provenance(self.params, digest[0], digest[1])
        self.records: dict[str, tuple[str, str | None, list[str] | None]] = {}
        self.kept: set[str] = set()
        self.replaced: list[str] = []

    def write(self, table: str, part: str, frame: pd.DataFrame) -> None:
        view = f"_analysis_frame_{table}"
        self.con.register(view, _storable(frame))
        try:
            why = self._why_not_merged(table, view, len(frame))
            if why is None:
                self._merge(table, view)
            else:
                if self.scope is not None and table in self.previous and why != "no stored table":
                    self.replaced.append(f"{table}: replaced whole ({why}); it holds this run's datasets only")
                self.con.execute(f'create or replace table "{table}" as select * from "{view}"')
                self.records[table] = (
                    json.dumps(self.params, sort_keys=True, default=str),
                    *dataclasses.astuple(self.run)[1:],
                )
        finally:
            self.con.unregister(view)
        for statement in output_comments(self.spec, part, table, [str(c) for c in frame.columns]):
            self.con.execute(statement)

    def keep_or_drop(self, table: str) -> None:
        """A table an earlier run wrote and this one did not: a restricted run keeps its other
        datasets' rows (when it has a dataset column); otherwise it is dropped."""
        if self.scope is not None and merge.dataset_column([c for c, _ in merge.table_columns(self.con, table) or []]):
            self._merge(table, None)
        elif _NAME.match(table):  # identifiers cannot be bound; every stored name passed table_name()'s check
            self.con.execute(f'drop table if exists "{table}"')

    def _why_not_merged(self, table: str, view: str, rows: int) -> str | None:
        if self.scope is None or table not in self.previous:
            return "no stored table"
        new = merge.table_columns(self.con, view) or []
        return merge.why_not_mergeable(merge.table_columns(self.con, table), new, rows)

    def _merge(self, table: str, view: str | None) -> None:
        assert self.scope is not None
        entries = merge.stored_entries(self.previous[table], merge.kept_datasets(self.con, table))
        merge.merge_into(self.con, table, view, self.scope)
        kept = {d: e for d, e in entries.items() if d not in self.scope}
        self.kept |= set(kept)
        self.records[table] = merge.merged_record(
            {**kept, **dict.fromkeys(self.scope, self.run)}, self.snapshot, self.params
        )

    def notes(self) -> list[str]:
        out: list[str] = []
        if self.scope is not None and self.kept:
            out.append(
                f"kept the stored rows of {', '.join(sorted(self.kept))}; replaced those of "
                f"{', '.join(self.scope)} (--replace-all replaces the whole tables)"
            )
        out += self.replaced
        return out


def output_comments(spec: AnalysisSpec, part: str, table: str, columns: Sequence[str]) -> list[str]:
    """COMMENT ON the table and its described columns (crsbench describe); COMMENT takes no parameters."""
    name = spec.name
    doc = (
        f"Output '{part}' of analysis {name} (crsbench analyze {name}): {spec.description} "
        f"Parameters and code version: table analyses. docs/METHODS.md §10-§12, §16-§17."
    )
    statements = [f"comment on table {sql_identifier(table)} is {sql_literal(doc)}"]
    for column in columns:
        text = spec.column_doc(part, column)
        if text is not None:
            statements.append(
                f"comment on column {sql_identifier(table)}.{sql_identifier(column)} is {sql_literal(text)}"
            )
    return statements


def _storable(frame: pd.DataFrame) -> pd.DataFrame:
    # An all-empty frame has object columns DuckDB cannot type; store them as text.
    out = frame.reset_index(drop=True).copy()
    for col in out.columns:
        if out[col].dtype == object and out[col].isna().all():
            out[col] = out[col].astype("string")
    return out


_PROGRESS: ContextVar[ProgressFn] = ContextVar("analysis_progress", default=no_progress)


def report_progress(description: str, done: int, total: int) -> None:
    """How far the running analysis is, for its caller's progress bar (nothing without one)."""
    _PROGRESS.get()(description, done, total)


@dataclasses.dataclass(frozen=True)
class ComputedAnalysis:
    """One analysis's result before it is stored (`store_computed`): its resolved params and the
    encoder_run_digest snapshot taken before it read anything."""

    name: str
    result: AnalysisResult
    params: dict[str, Any]
    digests: dict[str, str]
    # Side tables recorded instead of written (`side_tables.deferring_writes`), for the caller to write.
    side_tables: tuple[Replacement, ...] = ()


def compute_analysis(
    wh: Warehouse,
    name: str,
    params: Mapping[str, Any] | None = None,
    replace_all: bool = False,
    progress: ProgressFn | None = None,
) -> ComputedAnalysis:
    """A registered analysis with validated params, computed from `wh` (which may be read-only) and
    checked against its declared outputs; nothing is written."""
    spec = get_analysis(name)
    resolved = resolve_params(spec, params)
    # Taken before reading, so a run landing meanwhile makes the result stale rather than fresh.
    digests = dict(current_digests(wh.con))
    token = _PROGRESS.set(progress or no_progress)
    try:
        with merge.replacing_all(replace_all):
            result = spec.fn(wh, resolved)
    finally:
        _PROGRESS.reset(token)
    check_outputs(spec, result)
    return ComputedAnalysis(name, result, dict(resolved), digests)


def store_computed(wh: Warehouse, computed: ComputedAnalysis, replace_all: bool = False) -> list[str]:
    """Store a computed analysis's side tables it deferred, then its tables (`store_result`),
    described by the inputs it read."""
    spec = get_analysis(computed.name)
    write_deferred(wh, list(computed.side_tables))
    return store_result(
        wh,
        computed.name,
        computed.result,
        computed.params,
        input_digest(computed.digests, computed.result, spec.reads),
        replace_all=replace_all,
        digests=computed.digests,
    )


def run_analysis(
    wh: Warehouse,
    name: str,
    params: Mapping[str, Any] | None = None,
    store: bool = True,
    replace_all: bool = False,
    progress: ProgressFn | None = None,
) -> AnalysisResult:
    """Run a registered analysis with validated params and (by default) store its tables: a run
    restricted to datasets replaces only their rows unless `replace_all` (`store_result`). An
    analysis with inner steps reports them to `progress` (`report_progress`)."""
    computed = compute_analysis(wh, name, params, replace_all, progress)
    if store:
        store_computed(wh, computed, replace_all=replace_all)
    return computed.result


def input_digest(
    digests: Mapping[str, str], result: AnalysisResult, reads: Sequence[str] = ("runs",)
) -> tuple[str | None, list[str] | None]:
    """(digest, inputs) of what `result` describes (`inputs.described_inputs`)."""
    return described_inputs((*result.tables.values(), result.summary), digests, reads)
