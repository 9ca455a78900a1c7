"""The leaderboard read-model (`Bench.leaderboard`, `crsbench leaderboard`), and what it, status
and the report say about uncertainty and gaps: bootstrap intervals and ties (crs_encoder_ci),
interval-carrying rank agreement, anchor-noise warnings (panel_anchor_noise) and the runs
incomplete cells lack (grid_missing), as frames and lines. The report only renders them."""

from __future__ import annotations

import dataclasses

import pandas as pd

from crsbench.core import AXES, EncoderKey
from crsbench.reads.gaps import missing_lines, outside_lines
from crsbench.warehouse.connection import Warehouse

RESAMPLE_PREFERENCE = ("images+seeds", "seeds", "images")
CI_COLUMNS = [
    "encoder_id",
    "tier",
    "crs_lo",
    "crs_hi",
    "auroc_lo",
    "auroc_hi",
    "gap_lo",
    "gap_hi",
    "crs_note",
    "auroc_note",
]


@dataclasses.dataclass(frozen=True)
class Leaderboard:
    panel: str  # the panel used, or 'cohort' when none is frozen
    board: pd.DataFrame  # frozen-regime CRS leaderboard, best first
    agreement: pd.DataFrame  # AUROC ranking vs CRS ranking, one row per population
    resample: str | None = None  # the bootstrap whose intervals the board carries (None: none yet)
    agreement_intervals: pd.DataFrame | None = None  # statistic, estimate, lo, hi
    warnings: list[str] = dataclasses.field(default_factory=list)  # anchor noise
    incomplete: list[str] = dataclasses.field(default_factory=list)  # what incomplete cells lack
    partial: list[str] = dataclasses.field(default_factory=list)  # partial-coverage encoders, why unranked
    stale: list[str] = dataclasses.field(default_factory=list)  # stored intervals whose runs changed
    flagged: list[str] = dataclasses.field(default_factory=list)  # degenerate feature sets, why unranked
    outside: list[str] = dataclasses.field(default_factory=list)  # encoders outside every panel, probed in part
    anchor_noise: pd.DataFrame | None = None  # panel_anchor_noise rows behind the anchor-noise warning
    overlap: list[str] = dataclasses.field(default_factory=list)  # the overlap mark's footnote
    exclude_overlap: bool = False  # ranked with the overlapping cells left out
    cost: bool = False  # the board carries the cost columns (crsbench.reads.cost)
    screen: list[str] | None = None  # with --with-screen: the board carries screen_rank; these lines explain it
    retrieval: list[str] | None = None  # with --with-retrieval: retrieval_map_at_r and retrieval_rank, explained

    @property
    def verdict(self) -> str:
        """One plain sentence: who leads, who is tied with the leader, how wide the intervals are."""
        return verdict_line(self.panel, self.board, self.resample, self.exclude_overlap)

    @property
    def cohort(self) -> bool:
        """Whether no panel is frozen and the board ranks in cohort mode."""
        from crsbench.warehouse.panels import COHORT

        return self.panel == COHORT


def read_leaderboard(
    wh: Warehouse,
    panel: str | None,
    resample: str | None,
    allow_partial: bool,
    subgroup: str | None,
    exclude_overlap: bool = False,
    cost: bool = False,
    with_screen: bool = False,
    with_retrieval: bool = False,
) -> Leaderboard:
    """The leaderboard of `Bench.leaderboard` (run inside a score snapshot). With `exclude_overlap`
    the stored bootstrap intervals (computed with every cell) are not shown; with `cost` the board
    carries each encoder's measured cost (crsbench.reads.cost); with `with_screen` its overall
    pre-screen rank (crsbench.reads.screen); with `with_retrieval` its retrieval mAP@R and rank
    (crsbench.reads.retrieval)."""
    from crsbench.analyses.subgroups.subgroups import with_worst_group
    from crsbench.warehouse.conditions import condition_warnings
    from crsbench.warehouse.panels import leaderboard

    used, board, agreement = leaderboard(wh, panel, allow_partial, exclude_overlap)
    board = with_overlap(wh, with_worst_group(wh, board, subgroup))
    if cost:
        from crsbench.reads.cost import with_cost

        board = with_cost(wh, board)
    screen = None
    if with_screen:
        from crsbench.reads.screen import with_screen_rank

        board, screen = with_screen_rank(wh, board)
    retrieval = None
    if with_retrieval:
        from crsbench.reads.retrieval import with_retrieval as add_retrieval

        board, retrieval = add_retrieval(wh, board)
    boot = None if exclude_overlap else bootstrap_resample(wh, used, resample)
    return Leaderboard(
        used,
        with_intervals(wh, used, board, boot),
        agreement,
        boot,
        agreement_intervals(wh, used, boot),
        anchor_noise_warnings(wh, used, boot) + condition_warnings(wh.con, used),
        missing_lines(wh),
        partial_lines(board, allow_partial),
        stale_lines(wh, used),
        flagged_lines(wh),
        outside_lines(wh),
        anchor_noise_rows(wh, used, boot),
        overlap_lines(board, exclude_overlap),
        exclude_overlap,
        cost,
        screen,
        retrieval,
    )


OVERLAP_MARK = "†"


def with_overlap(wh: Warehouse, board: pd.DataFrame) -> pd.DataFrame:
    """The board with column overlap: the datasets the encoder was pretrained on (declared or
    measured; view encoder_dataset_overlap), a list, empty for none or unknown."""
    rows = wh.sql(
        "select encoder_id, list(dataset_id order by dataset_id) as overlap from encoder_dataset_overlap "
        "where overlap group by encoder_id"
    )
    found = dict(zip(rows["encoder_id"], rows["overlap"], strict=True))
    return board.assign(overlap=[list(found.get(e, [])) for e in board["encoder_id"]])


def overlap_lines(board: pd.DataFrame, excluded: bool = False) -> list[str]:
    """The footnote of the overlap mark, one line, when any encoder on the board carries it."""
    marked = [f"{e} ({', '.join(d)})" for e, d in zip(board["encoder_id"], board["overlap"], strict=True) if len(d)]
    if not marked:
        return []
    how = (
        "those cells are left out of its rank (--exclude-overlap), which makes it partial"
        if excluded
        else "an AUROC on data the encoder has seen is not a transfer result; --exclude-overlap ranks without them"
    )
    return [
        f"{OVERLAP_MARK} pretrained on the evaluation data (declared or measured; view encoder_dataset_overlap): "
        f"{'; '.join(marked)}; {how}"
    ]


# Mean CRS interval width at or above this share of the ranked encoders' CRS spread reads "wide".
WIDE_SHARE = 0.5


# Why a board ranked with --exclude-overlap shows no intervals (and not "run bootstrap").
NO_INTERVALS_EXCLUDED = "no intervals: the stored bootstrap scored every cell, overlapping ones included"


def verdict_line(panel: str, board: pd.DataFrame, resample: str | None, excluded: bool = False) -> str:
    """The leaderboard's verdict, e.g. "tiny-resnet18 leads on CRS (panel demo); tied with it within
    the 95 % intervals: tiny-convnext, tiny-dinov2; mean CRS interval width 0.41 (wide: ...)."

    Only ranked encoders count (not partial or flagged ones); tied = tier "=1" (METHODS.md §10.2);
    the width is the mean of crs_hi - crs_lo over the ranked encoders with an interval, called
    wide when it is at least WIDE_SHARE of the spread of their CRS (best minus worst). `excluded`:
    ranked with --exclude-overlap, where the stored intervals do not apply."""
    ranked = _ranked(board)
    where = "cohort mode" if panel == "cohort" else f"panel {panel}"
    if ranked.empty:
        return f"No encoder is ranked yet ({where})."
    leaders = ranked.loc[ranked["crs_rank"] == ranked["crs_rank"].min(), "encoder_id"].astype(str).tolist()
    head = f"{' and '.join(leaders)} {'lead' if len(leaders) > 1 else 'leads'} on CRS ({where})"
    if excluded:
        return f"{head}, with the overlapping cells left out; {NO_INTERVALS_EXCLUDED}."
    with_ci = ranked.dropna(subset=["crs_lo", "crs_hi"]) if "crs_lo" in ranked.columns else ranked.iloc[:0]
    if resample is None or with_ci.empty:
        return f"{head}; no intervals yet, so ties cannot be told: run 'crsbench analyze bootstrap'."
    tied = [str(e) for e, t in zip(ranked["encoder_id"], ranked["tier"], strict=True) if t == "=1" and e not in leaders]
    ties = (
        f"tied with it within the 95 % intervals: {', '.join(tied)}"
        if tied
        else "no other encoder is within its 95 % interval"
    )
    width = float((with_ci["crs_hi"] - with_ci["crs_lo"]).mean())
    spread = float(ranked["crs"].max() - ranked["crs"].min())
    if len(ranked) > 1 and width >= WIDE_SHARE * spread:
        judged = "wide: more test images would separate them" if tied else "wide beside the spread of the CRS"
    else:
        judged = f"narrow beside the CRS spread of {spread:.2f}" if len(ranked) > 1 else "one encoder ranked"
    return f"{head}; {ties}; mean CRS interval width {width:.2f} ({judged})."


def _ranked(board: pd.DataFrame) -> pd.DataFrame:
    keep = board["crs_rank"].notna()
    if "coverage" in board.columns:
        keep &= board["coverage"].astype(object) != "partial"
    if "flagged" in board.columns:
        keep &= ~board["flagged"].map(lambda v: bool(v) if pd.notna(v) else False).astype(bool)
    return board[keep].sort_values(["crs_rank", "encoder_id"], kind="stable")


def bootstrap_resample(wh: Warehouse, panel: str, resample: str | None = None) -> str | None:
    """The resampling whose intervals to show for `panel`: the given one if stored, else the
    preferred one stored (images+seeds, then seeds, then images); None when there is none."""
    stored = set(wh.sql("select distinct resample from bootstrap_intervals where panel = ?", [panel])["resample"])
    if resample is not None:
        return resample if resample in stored else None
    return next((r for r in RESAMPLE_PREFERENCE if r in stored), None)


def with_intervals(wh: Warehouse, panel: str, board: pd.DataFrame, resample: str | None) -> pd.DataFrame:
    """The leaderboard with tier and 95 % intervals of CRS and AUROC (NULL without a bootstrap)."""
    if resample is None:
        out = board.copy()
        out["tier"] = out["crs_rank"].map(lambda r: None if pd.isna(r) else str(int(r)))
        for col in CI_COLUMNS[2:]:
            out[col] = None if col.endswith("_note") else float("nan")
        return out
    ci = wh.sql(
        f"select {', '.join(CI_COLUMNS)} from crs_encoder_ci where panel = ? and resample = ? and regime = 'frozen'",
        [panel, resample],
    )
    return board.merge(ci, on="encoder_id", how="left")


def agreement_intervals(wh: Warehouse, panel: str, resample: str | None) -> pd.DataFrame:
    """(statistic, estimate, lo, hi) of Kendall tau, Spearman rho and the reversal count."""
    return wh.sql(
        "select metric as statistic, estimate, lo, hi from bootstrap_intervals "
        "where panel = ? and resample = ? and encoder_id is null and dataset_id is null "
        "order by metric",
        [panel, resample],
    )


def agreement_gaps(agreement: pd.DataFrame) -> dict[str, dict[str, str]]:
    """Why a rank-agreement statistic is NULL, per population and statistic: tau and rho need two
    encoders ranked, and are undefined when every pair is tied on CRS or on AUROC."""
    out: dict[str, dict[str, str]] = {}
    for row in agreement.to_dict("records"):
        n = 0 if pd.isna(row.get("n")) else int(row["n"])
        why = (
            f"n/a (needs >= 2 ranked encoders, has {n})"
            if n < 2
            else f"n/a (every pair of the {n} encoders is tied on CRS or on AUROC)"
        )
        gaps = {s: why for s in ("kendall_tau", "spearman_rho") if s in row and pd.isna(row[s])}
        if gaps:
            out[str(row["population"])] = gaps
    return out


ANCHOR_NOISE_DOC = "docs/METHODS.md §10.3"


def anchor_noise_rows(wh: Warehouse, panel: str, resample: str | None = None) -> pd.DataFrame:
    """The panel_anchor_noise rows of `panel` (of `resample`, or every one stored) where the anchor
    range is below 2x the axis's bootstrap noise: the detail behind `anchor_noise_warnings`."""
    return wh.sql(
        "select panel, resample, scope, axis, anchor_range, noise, range_over_noise from panel_anchor_noise "
        "where panel = ? and amplifies_noise and (? is null or resample = ?) "
        "order by resample, scope = 'global' desc, scope, axis",
        [panel, resample, resample],
    )


def anchor_noise_warnings(wh: Warehouse, panel: str, resample: str | None = None) -> list[str]:
    """One line per panel and bootstrap naming the scopes and axes whose anchor range is below 2x
    their noise, compactly (scopes sharing the same axes together), with the docs section that
    explains it; `anchor_noise_rows` (view panel_anchor_noise) holds each range and noise."""
    rows = anchor_noise_rows(wh, panel, resample)
    lines = []
    for res, group in rows.groupby("resample", sort=False):
        lines.append(
            f"panel {panel} ({res} bootstrap): min-max normalisation amplifies noise (anchor range < 2 x "
            f"noise) on {_noisy_axes(group)}; see {ANCHOR_NOISE_DOC}; each range and noise: view "
            "panel_anchor_noise"
        )
    return lines


def _noisy_axes(rows: pd.DataFrame) -> str:
    """E.g. 'every axis of global, aptos2019; calibration, robustness of chexpert'."""
    by_scope = rows.groupby("scope", sort=False)["axis"].agg(lambda a: tuple(x for x in AXES if x in set(a)))
    parts = []
    for axes, scopes in by_scope.groupby(by_scope, sort=False):
        named = "every axis" if set(axes) == set(AXES) else ", ".join(axes)
        parts.append(f"{named} of {', '.join(scopes.index)}")
    return "; ".join(parts)


def partial_lines(board: pd.DataFrame, allow_partial: bool = False) -> list[str]:
    """One line per partial-coverage encoder of a panel leaderboard: what it lacks and why it has
    no aggregate rank (or, with allow_partial, that its rank is marked)."""
    if "coverage" not in board.columns:
        return []
    lines = []
    for row in board[board["coverage"] == "partial"].itertuples():
        lines.append(
            f"partial: {row.encoder_id} has complete cells on {int(row.n_datasets or 0)} of the panel's "
            f"{int(row.n_panel_datasets)} datasets (missing {', '.join(row.missing_datasets)}); its CRS is a "
            "mean over fewer datasets than the members', so "
            + (
                "its rank is marked * and is not comparable"
                if allow_partial
                else "it gets no aggregate rank (--allow-partial ranks it with a marker; per-dataset ranks are in crs_cell)"
            )
        )
    return lines


def flagged_lines(wh: Warehouse) -> list[str]:
    """One line per unconfirmed degenerate feature set: its encoder gets no rank until confirmed."""
    rows = wh.sql("select * from fn_flagged_sets() order by encoder_id, regime, dataset_id")
    return [
        f"flagged: {EncoderKey(r.encoder_id, r.regime)} on {r.dataset_id}: {r.degenerate}; it gets no rank "
        f"until you confirm the set: crsbench feature-sets --confirm {EncoderKey(r.encoder_id, r.regime)} "
        f"{r.dataset_id}"
        for r in rows.itertuples()
    ]


def stale_lines(wh: Warehouse, panel: str) -> list[str]:
    """One line per stored bootstrap of `panel` whose runs changed since it ran (its intervals are
    withheld from crs_encoder_ci and the leaderboard)."""
    rows = wh.sql("select resample from bootstrap_freshness where panel = ? and stale order by 1", [panel])
    return [
        f"the {r} bootstrap intervals of panel {panel} are stale (the runs changed since it ran) and are "
        f"not shown; rerun 'crsbench analyze bootstrap --panel {panel}'"
        for r in rows["resample"]
    ]
