"""The report's sections. Each is a function registered with `@section`, which declares its place.

A section returns its body HTML, or a `Missing` saying what is absent and which
command fills it; the page shows that message in the section's place. The page shows the
sections by their declared `order` (`SECTIONS` is kept sorted by it), so the order does not
depend on which module is imported first; the report imports every `sections*` module.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pandas as pd

from crsbench.core import AXES
from crsbench.reads import gaps
from crsbench.reads import leaderboard as read_models
from crsbench.reads.report_data import ReportData
from crsbench.report import figures as figs
from crsbench.report.coverage import section_coverage
from crsbench.report.html import Cell, FigureSink, colour_key, encoder_cell, esc, fmt_number, number_cell, table

# Which command fills each kind of gap; one place, so the messages stay in step with the CLI.
FILL: dict[str, str] = {
    "runs": "crsbench demo (or: crsbench ingest, crsbench extract, crsbench probe)",
    "panel": "crsbench panel freeze NAME --encoders a,b,c",
    "bootstrap": "crsbench analyze bootstrap",
    "e2": "crsbench analyze e2",
    "e3": "crsbench analyze e3",
    "e6": "crsbench analyze e6",
    "depths": "crsbench probe (at depths 0.25, 0.5, 0.75 and 1.0)",
}

AXIS_LABELS: dict[str, str] = {
    "discrimination": "Discrimination",
    "calibration": "Calibration",
    "label_efficiency": "Label efficiency",
    "robustness": "Robustness",
}


@dataclasses.dataclass(frozen=True)
class Missing:
    reason: str
    command: str


SectionFn = Callable[[ReportData, FigureSink], "str | Missing"]


@dataclasses.dataclass(frozen=True)
class Section:
    id: str
    title: str
    render: SectionFn
    order: int  # the page shows sections by ascending order; the built-ins are 10 apart, room between


SECTIONS: list[Section] = []  # sorted by order


def section(section_id: str, title: str, *, order: int) -> Callable[[SectionFn], SectionFn]:
    """Register a section at place `order` on the page (two sections may not share an id or an order)."""

    def register(fn: SectionFn) -> SectionFn:
        for other in SECTIONS:
            if other.id == section_id or other.order == order:
                raise ValueError(f"report section {section_id!r} (order {order}) clashes with {other.id!r}")
        SECTIONS.append(Section(section_id, title, fn, order))
        SECTIONS.sort(key=lambda s: s.order)
        return fn

    return register


# What the report shows from the bootstrap's declared `encoders` part: role -> column.
BOOTSTRAP_COLUMNS = {"p_rank1": "p_rank1", "p_top3": "p_top3", "lo": "crs_lo", "hi": "crs_hi"}


def _bootstrap(data: ReportData) -> tuple[pd.DataFrame | None, dict[str, str]]:
    """Per-encoder bootstrap results for the shown panel and the columns that hold each quantity."""
    frame = data.analysis("bootstrap", "encoders", "panel", "encoder_id", "crs", *BOOTSTRAP_COLUMNS.values())
    if frame is None:
        return None, {}
    if data.panel is not None:
        frame = frame[frame["panel"] == data.panel]
    return frame.reset_index(drop=True), dict(BOOTSTRAP_COLUMNS)


def _need_scores(data: ReportData) -> Missing | None:
    if data.n_runs == 0:
        return Missing("The warehouse holds no run records.", FILL["runs"])
    if data.panel is None:
        return Missing("No reference panel has been frozen, so there is no CRS.", FILL["panel"])
    if data.crs_encoder is None or data.crs_encoder.empty:
        return Missing(f"Panel {data.panel!r} scores no encoder yet (no complete axes).", FILL["runs"])
    return None


@section("overview", "What this warehouse holds", order=30)
def overview(data: ReportData, sink: FigureSink) -> str | Missing:
    n_enc, n_ds = len(data.encoders), len(data.datasets)
    items = [
        f"<li>{n_ds} datasets: {esc(', '.join(data.datasets['dataset_id'].astype(str)))}</li>",
        f"<li>{n_enc} encoders registered, {len(data.random_init)} from random-init checkpoints</li>",
        f"<li>{data.n_runs:,} run records</li>",
    ]
    if data.panel is not None:
        others = [p for p in data.panels["panel"] if p != data.panel]
        items.append(
            f"<li>reference panel <code>{esc(data.panel)}</code> "
            f"({len(data.members)} members: {esc(', '.join(data.members))})"
            + (f"; other panels: {esc(', '.join(others))}" if others else "")
            + "</li>"
        )
    done = ", ".join(sorted(data.analysis_tables)) or "none yet"
    items.append(f"<li>analyses stored: {esc(done)}</li>")
    return f"<ul>{''.join(items)}</ul>"


# First: the page opens with the verdict and the board (the reporting card follows it).
@section("leaderboard", "CRS leaderboard next to AUROC", order=10)
def leaderboard(data: ReportData, sink: FigureSink) -> str | Missing:
    gap = _need_scores(data)
    if gap:
        return gap
    assert data.crs_encoder is not None and data.panel is not None  # _need_scores checked both
    board, cols, resample, boot = _board(data, data.panel)
    cells = _BoardCells(cols, set(data.members))
    board_html = table(
        board,
        cells.columns(data, resample is not None),
        text_columns=["Encoder"],
        row_class=lambda r: "random-init" if r["encoder_id"] in data.random_init else "",
        css_class="leaderboard",
    )  # rendered before the notes: the cells collect the members left unbootstrapped
    note = _board_notes(data, data.panel, board, boot is not None, resample, cells.no_interval)
    formula = (
        f'<p class="note">Panel <code>{esc(data.panel)}</code>. CRS = 0.60 dominance + 0.25 ideal point '
        f"+ 0.15 worst axis, against the panel's frozen anchors. Rank change = AUROC rank - CRS rank "
        f"(positive: the encoder rises under CRS).</p>"
    )
    # the verdict first, then the board: both on the page's first screen; the explanations below them
    verdict = read_models.verdict_line(data.panel, board, resample)
    return f'<p class="verdict">{esc(verdict)}</p>' + colour_key(directions=True) + board_html + formula + note


def _board(data: ReportData, panel: str) -> tuple[pd.DataFrame, dict[str, str], str | None, pd.DataFrame | None]:
    """The scored encoders with their intervals and rank probabilities, the column of each quantity
    (role -> column), the bootstrap resample the intervals come from (None: none stored) and the
    per-encoder bootstrap results (None: none)."""
    assert data.crs_encoder is not None
    board = read_models.with_overlap(data.wh, data.crs_encoder.copy())  # the † of pretraining overlap
    boot, cols = _bootstrap(data)
    resample = None
    if "bootstrap_intervals" in data.relations:
        # Intervals and ties of the stored bootstrap_intervals (images+seeds preferred).
        resample = read_models.bootstrap_resample(data.wh, panel)
    if resample is not None:
        board = read_models.with_intervals(data.wh, panel, board, resample)
        cols = {
            "lo": "crs_lo",
            "hi": "crs_hi",
            "auroc_lo": "auroc_lo",
            "auroc_hi": "auroc_hi",
            **{k: v for k, v in cols.items() if k in ("p_rank1", "p_top3")},
        }
        if boot is not None and ("p_rank1" in cols or "p_top3" in cols):
            keep = ["encoder_id", *(cols[k] for k in ("p_rank1", "p_top3") if k in cols)]
            board = board.merge(boot[keep], on="encoder_id", how="left")
    elif boot is not None:
        keep = ["encoder_id", *cols.values()]
        board = board.merge(boot[keep], on="encoder_id", how="left")
    return board, cols, resample, boot


def _fixed(row: pd.Series, column: str) -> str | None:
    """The note of an interval the bootstrap cannot move (crs_encoder_ci), shown as n/a."""
    note = row.get(column)
    return (
        f'<span class="note interval-na" title="{esc(note)}">n/a (same in every replicate)</span>'
        if isinstance(note, str)
        else None
    )


def _interval(lo: object, hi: object) -> str:
    # on its own line under the estimate, so the column is as narrow as "[0.123, 0.456]"
    return f'<span class="note interval">[{fmt_number(lo)}, {fmt_number(hi)}]</span>'


def _overlap_mark(row: pd.Series) -> str:
    """The mark of an encoder pretrained on some of the evaluation data (explained under the board)."""
    datasets = row.get("overlap")
    if datasets is None or not len(datasets):
        return ""
    title = f"pretrained on {', '.join(datasets)}"
    return f'<span class="overlap-mark" title="{esc(title)}">{read_models.OVERLAP_MARK}</span>'


def _partial(row: pd.Series) -> bool:
    return bool(row.get("coverage") == "partial")


class _BoardCells:
    """The leaderboard's cells; rendering them collects the encoders shown without a CRS interval."""

    def __init__(self, cols: dict[str, str], members: set[str]) -> None:
        self.cols, self.members = cols, members
        # encoders the table shows without a CRS interval: members (a bootstrap gives them one), others
        self.no_interval: dict[bool, list[str]] = {True: [], False: []}

    def auroc(self, row: pd.Series) -> str:
        text = fmt_number(row["auroc"])
        if (na := _fixed(row, "auroc_note")) is not None:
            return text + na
        if "auroc_lo" in self.cols and "auroc_hi" in self.cols:
            text += _interval(row[self.cols["auroc_lo"]], row[self.cols["auroc_hi"]])
        return text

    def crs(self, row: pd.Series) -> str:
        text = fmt_number(row["crs"])
        if (na := _fixed(row, "crs_note")) is not None:
            return text + na
        if "lo" in self.cols and "hi" in self.cols:
            if pd.isna(row[self.cols["lo"]]) or pd.isna(row[self.cols["hi"]]):
                # short in the cell; what to do about it is said once, under the table
                member = row["encoder_id"] in self.members
                self.no_interval[member].append(str(row["encoder_id"]))
                why = "not bootstrapped" if member else "no interval (not a member)"
                return text + f'<span class="note interval-na">{why}</span>'
            text += _interval(row[self.cols["lo"]], row[self.cols["hi"]])
        return text

    @staticmethod
    def shift(row: pd.Series) -> str:
        if pd.isna(row["auroc_rank"]) or pd.isna(row["crs_rank"]):
            return "–"
        moved = int(row["auroc_rank"]) - int(row["crs_rank"])
        if moved == 0:
            return "0"
        return f'<span class="{"up" if moved > 0 else "down"}">{"+" if moved > 0 else ""}{moved}</span>'

    @staticmethod
    def rank(row: pd.Series) -> str:
        if _partial(row):
            return '<span class="note">not ranked (partial)</span>'
        return fmt_number(row["crs_rank"], 0)

    @staticmethod
    def tier(row: pd.Series) -> str:
        if _partial(row) or pd.isna(row.get("gap_lo")):
            return "–"
        return esc(str(row["tier"])) if str(row["tier"]) == "=1" or str(row["tier"]) == "1" else ""

    @staticmethod
    def datasets(row: pd.Series) -> str:
        if "n_panel_datasets" not in row or pd.isna(row["n_panel_datasets"]):
            return fmt_number(row.get("n_datasets"), 0)
        text = f"{int(row['n_datasets'] or 0)} of {int(row['n_panel_datasets'])}"
        if _partial(row):
            text += f' <span class="note">(missing {esc(", ".join(row["missing_datasets"]))})</span>'
        return text

    def columns(self, data: ReportData, tiers: bool) -> dict[str, Cell]:
        """Header -> cell of each column, in page order (`tiers`: the intervals come with ties)."""
        cols, members = self.cols, self.members
        columns: dict[str, Cell] = {
            "CRS rank": self.rank,
            **({"tier": self.tier} if tiers else {}),
            "Encoder": lambda r: (
                encoder_cell(r["encoder_id"], data.random_init, r.get("regime"), r["encoder_id"] in members, True)
                + _overlap_mark(r)
            ),
            "CRS" + (" [95% interval]" if "lo" in cols else ""): self.crs,
        }
        if "p_rank1" in cols:
            columns["P(rank 1)"] = lambda r: fmt_number(r[cols["p_rank1"]], 2)
        if "p_top3" in cols:
            columns["P(top 3)"] = lambda r: fmt_number(r[cols["p_top3"]], 2)
        return columns | {
            "AUROC" + (" [95% interval]" if "auroc_lo" in cols else ""): self.auroc,
            "AUROC rank": lambda r: fmt_number(r["auroc_rank"], 0),
            "rank change": self.shift,
            "datasets": self.datasets,
            "Dominance": lambda r: fmt_number(r["dominance"]),
            "Ideal point": lambda r: fmt_number(r["ideal"]),
            "Worst axis": lambda r: fmt_number(r["worst"]),
        }


def _board_notes(
    data: ReportData,
    panel: str,
    board: pd.DataFrame,
    bootstrapped: bool,
    resample: str | None,
    no_interval: dict[bool, list[str]],
) -> str:
    """The notes under the leaderboard: intervals (or how to get them), gaps and partial coverage."""
    note = (
        ""
        if bootstrapped or resample is not None
        else f'<p class="note">No bootstrap intervals yet: run <code>{esc(FILL["bootstrap"])}</code>.</p>'
    )
    note += _no_interval_notes(panel, no_interval[True], no_interval[False])
    if resample is not None:
        agree = read_models.agreement_intervals(data.wh, panel, resample)
        # fmt_number gives HTML already (a dash entity for a missing bound): only the names are escaped
        stats = "; ".join(
            f"{esc(r.statistic)} {fmt_number(r.estimate)} [{fmt_number(r.lo)}, {fmt_number(r.hi)}]"
            for r in agree.itertuples()
        )
        note += (
            f'<p class="note">Intervals: 95 % percentile, {esc(resample)} bootstrap. '
            "CRS rank = 1 + the panel members with a higher CRS; tier =1: the interval of the CRS gap to "
            "the leader contains 0, so the data cannot separate the encoder from the leader (blank: "
            f"separated; &ndash;: no interval). AUROC vs CRS ranking: {stats}.</p>"
        )
        note += _anchor_noise(data, resample)
    note += "".join(
        f'<p class="note warning">Incomplete (left out of the CRS): {esc(m)}</p>' for m in gaps.missing_lines(data.wh)
    )
    note += "".join(f'<p class="note">{esc(m)}.</p>' for m in gaps.outside_lines(data.wh))
    note += "".join(f'<p class="note warning">{esc(line)}</p>' for line in read_models.partial_lines(board))
    note += "".join(f'<p class="note warning">{esc(line)}</p>' for line in read_models.overlap_lines(board))
    return note


def _no_interval_notes(panel: str, unbootstrapped: list[str], outside: list[str]) -> str:
    """Why a scored encoder shows no CRS interval, and the command that gives one where there is one."""
    out = ""
    if unbootstrapped:
        out += (
            f'<p class="note">Not bootstrapped: {esc(", ".join(unbootstrapped))}. Run '
            f"<code>crsbench analyze bootstrap --panel {esc(panel)}</code> for their intervals.</p>"
        )
    if outside:
        out += (
            f'<p class="note">No interval for {esc(", ".join(outside))}: the bootstrap resamples the '
            f"members of panel <code>{esc(panel)}</code> only.</p>"
        )
    return out


def _anchor_noise(data: ReportData, resample: str) -> str:
    """The one-line anchor-noise warning, each scope's range and noise folded under it."""
    if data.panel is None:
        return ""
    rows = read_models.anchor_noise_rows(data.wh, data.panel, resample)
    if rows.empty:
        return ""
    (line,) = read_models.anchor_noise_warnings(data.wh, data.panel, resample)
    columns: dict[str, Cell] = {
        "scope": lambda r: esc(r["scope"]),
        "axis": lambda r: esc(r["axis"]),
        "anchor range": number_cell("anchor_range", 4),
        "noise": number_cell("noise", 4),
        "range / noise": number_cell("range_over_noise", 2),
    }
    detail = table(rows, columns, text_columns=["scope", "axis"])
    return (
        f'<p class="note warning">Warning: {esc(line)}.</p>'
        f"<details><summary>Anchor range and noise per scope and axis</summary>{detail}</details>"
    )


@section("profiles", "Reliability profiles: the four normalised axes", order=40)
def profiles(data: ReportData, sink: FigureSink) -> str | Missing:
    gap = _need_scores(data)
    if gap:
        return gap
    assert data.crs_encoder is not None  # _need_scores checked it
    if data.axes_norm is None or data.axes_norm.empty:
        return Missing("The panel has no global anchors to normalise the axes with.", FILL["panel"])
    order = data.crs_encoder["encoder_id"].tolist()
    norm = data.axes_norm.set_index("encoder_id")
    norm = norm.loc[[e for e in order if e in norm.index]].reset_index()
    norm.insert(0, "label", [data.label(e) for e in norm["encoder_id"]])
    roles = data.roles(norm["encoder_id"])
    colors = figs.palette(norm["label"].tolist(), roles)
    fig = figs.profile_chart(norm, AXES, AXIS_LABELS, colors, roles)
    raw = (
        data.axes_encoder[data.axes_encoder["encoder_id"].isin(order)]
        if data.axes_encoder is not None
        else norm.iloc[0:0]
    )
    columns: dict[str, Cell] = {"Encoder": lambda r: encoder_cell(r["encoder_id"], data.random_init, r.get("regime"))}
    columns |= {AXIS_LABELS[a]: number_cell(a) for a in AXES}
    if "n_datasets" in raw.columns:
        columns["datasets"] = lambda r: fmt_number(r["n_datasets"], 0)
    return (
        sink.embed("profiles", fig, "Normalised axes per encoder, ordered by CRS rank")
        + section_coverage(data, norm, scored=True)
        + "<h3>Raw aggregate axes (mean over the encoder's datasets)</h3>"
        + table(raw, columns, text_columns=["Encoder"])
    )


@section("reordering", "From AUROC rank to CRS rank", order=50)
def reordering(data: ReportData, sink: FigureSink) -> str | Missing:
    gap = _need_scores(data)
    if gap:
        return gap
    assert data.crs_encoder is not None  # _need_scores checked it
    ranks = data.crs_encoder[["encoder_id", "auroc_rank", "crs_rank"]].dropna().copy()  # partial: unranked
    ranks.insert(0, "label", [data.label(e) for e in ranks["encoder_id"]])
    agreement = data.rank_agreement
    subtitle = f"panel {data.panel}"
    body = ""
    if agreement is not None and len(agreement):
        headline = agreement
        if "population" in agreement.columns:
            # The chart shows every scored encoder, so its caption quotes the 'all' population.
            headline = (
                agreement[agreement["population"] == "all"] if (agreement["population"] == "all").any() else agreement
            )
        row = headline.iloc[0]
        if pd.notna(row.get("kendall_tau")):
            subtitle += (
                f"; Kendall tau = {row['kendall_tau']:.2f}, {int(row['reversals'])} of "
                f"{int(row['pairs'])} pairs reversed"
            )
        stats = {
            "population": "population",
            "encoders": "n",
            "Kendall tau-b": "kendall_tau",
            "Spearman rho": "spearman_rho",
            "pairwise reversals": "reversals",
            "pairs": "pairs",
            "mean |rank displacement|": "mean_abs_displacement",
            "Top-3 overlap": "top3_overlap",
            "Top-5 overlap": "top5_overlap",
        }
        counts = {"n", "reversals", "pairs"}
        stats = {h: c for h, c in stats.items() if c in agreement.columns}

        def stat_cell(c: str) -> Cell:
            return lambda r: esc(r[c]) if c == "population" else fmt_number(r[c], 0 if c in counts else 3)

        body = table(
            agreement,
            {h: stat_cell(c) for h, c in stats.items()},
            text_columns=["population"],
        )
        body += (
            '<p class="note">population <code>panel</code>: the frozen members only; '
            "<code>all</code>: every encoder scored against the panel.</p>"
        )
    else:
        body = '<p class="note">No rank_agreement row for this panel.</p>'
    fig = figs.slope_chart(ranks, subtitle, data.roles(ranks["encoder_id"]))
    chart = sink.embed("reordering", fig, "AUROC rank to CRS rank; line colour: direction of the change")
    return chart + section_coverage(data, ranks, scored=True) + body


@section("datasets", "Per-dataset results", order=60)
def per_dataset(data: ReportData, sink: FigureSink) -> str | Missing:
    if data.axes_cell is None or data.axes_cell.empty:
        return Missing("No complete axes per dataset yet.", FILL["runs"])
    cells = data.axes_cell
    if data.crs_cell is not None:
        keep = [
            c
            for c in ("encoder_id", "dataset_id", "dominance", "ideal", "worst", "crs", "in_panel")
            if c in data.crs_cell.columns
        ]
        cells = cells.merge(data.crs_cell[keep], on=["encoder_id", "dataset_id"], how="left")
    parts = []
    for dataset, frame in cells.groupby("dataset_id", sort=True):
        if "crs" in frame.columns:
            frame = frame.sort_values(["crs", "discrimination"], ascending=False, na_position="last")
        columns: dict[str, Cell] = {
            "Encoder": lambda r: encoder_cell(
                r["encoder_id"], data.random_init, r.get("regime"), bool(r.get("in_panel", False) is True)
            )
        }
        if "crs" in frame.columns:
            columns["CRS"] = lambda r: fmt_number(r["crs"])
        columns |= {AXIS_LABELS[a]: number_cell(a) for a in AXES}
        if "aulc" in frame.columns:
            columns["AULC"] = lambda r: fmt_number(r["aulc"])
        parts.append(
            f"<h3>{esc(dataset)}</h3>"
            + table(
                frame,
                columns,
                text_columns=["Encoder"],
                row_class=lambda r: "random-init" if r["encoder_id"] in data.random_init else "",
            )
        )
    if data.crs_cell is None:
        parts.insert(0, f'<p class="note">No per-dataset CRS: run <code>{esc(FILL["panel"])}</code>.</p>')
    return "".join(parts)


@section("bootstrap", "Bootstrap: how sure is the ranking?", order=70)
def bootstrap(data: ReportData, sink: FigureSink) -> str | Missing:
    boot, cols = _bootstrap(data)
    if boot is None or boot.empty:
        return Missing("No bootstrap results for this panel.", FILL["bootstrap"])
    boot = boot.copy()
    boot["label"] = [data.label(e) for e in boot["encoder_id"]]
    roles = data.roles(boot["encoder_id"])
    colors = figs.palette(boot["label"].tolist(), roles)
    out = []
    out.append(
        sink.embed(
            "bootstrap_ranks",
            figs.rank_probability_chart(boot, cols["p_rank1"], cols["p_top3"], roles),
            "P(rank 1) and P(top 3) over bootstrap replicates",
        )
    )
    out.append(
        sink.embed(
            "bootstrap_intervals",
            figs.interval_chart(boot, "crs", cols["lo"], cols["hi"], "CRS with 95% bootstrap interval", colors, roles),
            "CRS point estimate with its 95% bootstrap interval",
        )
    )
    out.append(section_coverage(data, boot, analysis="bootstrap", scored=True, panel_only=True))
    return "".join(out)
