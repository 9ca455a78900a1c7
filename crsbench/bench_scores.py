"""The scoring half of `crsbench.Bench`: panels, the leaderboard, analyses, the successor test
and the report. Bench inherits it; every method opens the warehouse for its own call."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from crsbench.core import ProgressFn
from crsbench.reads.leaderboard import Leaderboard
from crsbench.warehouse.connection import Warehouse

if TYPE_CHECKING:
    from crsbench.analyses.agreement.successor import SuccessorOptions, SuccessorReport
    from crsbench.analyses.registry import AnalysisResult
    from crsbench.reads.card_model import Card
    from crsbench.reads.screen import ScreenReport
    from crsbench.report import ReportResult
    from crsbench.warehouse.panels import Panel


class Scores:
    """Bench's methods over panels, scores, analyses and the report (`self.db` is the warehouse)."""

    db: Path
    store: str

    # -- panels, scores, analyses, report -----------------------------------------------------

    def freeze_panel(self, name: str, encoders: Sequence[str], allow_small: bool = False) -> Panel:
        """Freeze a reference panel: its members and their anchors per dataset and `global`.
        Fewer than 4 members are refused unless `allow_small` (min-max anchors over so few
        members make the CRS say little; METHODS.md §8.1)."""
        from crsbench.warehouse.panels import freeze_panel

        with Warehouse.open(self.db, lean=True) as wh:
            return freeze_panel(wh, name, list(encoders), allow_small=allow_small)

    def panels(self) -> pd.DataFrame:
        """The frozen panels, oldest first."""
        from crsbench.warehouse.panels import list_panels

        with Warehouse.open(self.db, read_only=True, lean=True) as wh:
            return list_panels(wh)

    def panel(self, name: str) -> Panel:
        """One frozen panel: members and anchors."""
        from crsbench.warehouse.panels import get_panel

        with Warehouse.open(self.db, read_only=True, lean=True) as wh:
            return get_panel(wh, name)

    def leaderboard(
        self,
        panel: str | None = None,
        resample: str | None = None,
        allow_partial: bool = False,
        subgroup: str | None = None,
        exclude_overlap: bool = False,
        cost: bool = False,
        with_screen: bool = False,
        as_published: bool = False,
        with_retrieval: bool = False,
    ) -> Leaderboard:
        """The CRS leaderboard beside the AUROC ranking (latest panel by default, else cohort mode),
        with the 95 % intervals and tiers of a stored bootstrap (`resample`, default images+seeds
        if stored, else seeds), anchor-noise warnings and the runs incomplete cells lack.

        An encoder whose complete cells miss some of the panel's datasets is shown partial and
        unranked; `allow_partial` (needs `panel`) ranks it with the marker '*'. `subgroup` adds the
        column worst_auroc_<key>: the worst-group AUROC of a stored subgroups analysis (CRS unchanged).
        Column overlap names the datasets each encoder was pretrained on (view
        encoder_dataset_overlap); `exclude_overlap` ranks with those cells left out, at read time
        (partial-coverage rules; the panel's stored anchors and scores are unchanged). `cost` adds
        each encoder's measured cost (view encoder_cost; NaN where not measured); `with_screen` adds its
        overall pre-screen rank (view screen_ranking; `screen`); `with_retrieval` its mean clean mAP@R
        and rank from analysis retrieval (`retrieval`). `as_published` (team warehouse) reads
        every input as of the snapshot the panel was frozen at (docs/METHODS.md §23)."""
        from crsbench.reads.leaderboard import read_leaderboard
        from crsbench.warehouse.lake_snapshots import published_snapshot

        at = None
        if as_published:
            with Warehouse.open(self.db, read_only=True, lean=True) as wh:
                panel, at = published_snapshot(wh, panel)
        with Warehouse.open(self.db, read_only=True, lean=True, as_of=at) as wh, wh.snapshot():
            return read_leaderboard(
                wh, panel, resample, allow_partial, subgroup, exclude_overlap, cost, with_screen, with_retrieval
            )

    def anchor_noise(self, panel: str) -> tuple[bool, list[str]]:
        """(whether any bootstrap informs the panel's anchor noise, one warning per bootstrap naming
        the scopes and axes whose anchor range is below 2x their noise; METHODS.md §10.3)."""
        from crsbench.reads.leaderboard import anchor_noise_warnings

        with Warehouse.open(self.db, read_only=True, lean=True) as wh:
            known = bool(len(wh.sql("select 1 from panel_anchor_noise where panel = ? limit 1", [panel])))
            return known, anchor_noise_warnings(wh, panel)

    def analyze(
        self, name: str, *, replace_all: bool = False, progress: ProgressFn | None = None, **params: Any
    ) -> AnalysisResult:
        """Run a registered analysis (params None mean its defaults) and store its tables. A run
        restricted to datasets (`dataset=`) replaces only their rows of the stored tables, unless
        `replace_all` (every table replaced by this run's output). Inner steps go to `progress`."""
        from crsbench.analyses import run_analysis

        with Warehouse.open(self.db) as wh:
            return run_analysis(wh, name, params, replace_all=replace_all, progress=progress)

    def analyze_many(
        self,
        requests: Sequence[tuple[str, Mapping[str, Any]]],
        *,
        workers: int | None = None,
        progress: ProgressFn | None = None,
    ) -> list[AnalysisResult]:
        """Run several registered analyses, each (name, params) as `analyze(name, **params)` would, and
        store their tables in the order given. They are computed at once in up to `workers` processes
        (default: one per core), each reading the warehouse read-only; the stored tables are those of
        the same analyses run one after the other. `progress` counts the analyses computed."""
        from crsbench.analyses.processes import run_many

        return run_many(self.db, requests, workers or os.cpu_count() or 1, progress)

    def screen(
        self,
        encoders: Sequence[str] = (),
        dataset: str | None = None,
        rank_by: str | None = None,
        keep: int | None = None,
        replicates: int | None = None,
        seed: int | None = None,
        progress: ProgressFn | None = None,
    ) -> ScreenReport:
        """The pre-screen (METHODS.md §21): every transferability estimator on each encoder's cached
        clean train features at every depth (complete or `extract --screen` sets), stored as
        analysis `screen` (a `dataset` run replaces only its rows); returned with its ranking per
        dataset and overall, its measured agreement with the full grid (view screen_trust) and
        a verdict per dataset. None means the analysis's declared default; `progress` hears of each
        cell scored."""
        from crsbench.analyses import run_analysis
        from crsbench.reads.screen import read_screen

        params = {
            "encoders": list(encoders) or None,
            "dataset": dataset,
            "rank_by": rank_by,
            "keep": keep,
            "replicates": replicates,
            "seed": seed,
        }
        with Warehouse.open(self.db) as wh:
            result = run_analysis(wh, "screen", {k: v for k, v in params.items() if v is not None}, progress=progress)
            return read_screen(wh, result.notes)

    def successor(
        self, current: str, candidate: str, dataset: str | None = None, options: SuccessorOptions | None = None
    ) -> SuccessorReport:
        """Will `candidate` return `current`'s nearest neighbours and keep its classifiers? Per dataset
        with features of both (or `dataset`): mutual k-NN with interval and chance, the random-init
        floor, CKA, transfer retention where labels exist, and a one-line reading. Reads only."""
        from crsbench.analyses.agreement.successor import SuccessorOptions, successor

        with Warehouse.open(self.db, read_only=True) as wh:
            return successor(wh, current, candidate, dataset, options or SuccessorOptions())

    def card(self, panel: str | None = None) -> Card:
        """The reporting card: eight items, each with its number from this warehouse (`.markdown()`)."""
        from crsbench.reads.card import card_for

        with Warehouse.open(self.db, read_only=True) as wh:
            return card_for(wh, panel)

    def report(
        self,
        out: Path | str = "report.html",
        panel: str | None = None,
        figures: Path | str | None = None,
        progress: ProgressFn | None = None,
        force: bool = False,
    ) -> ReportResult:
        """Write the self-contained HTML report (and, with `figures`, every figure as PNG).

        `out` and `figures` are checked before any rendering: never the warehouse, its WAL, parts
        folder or feature store, never a device or FIFO; `out` not a folder, `figures` a folder;
        an existing `out`, or PNGs already in `figures`, are replaced only with `force`."""
        from crsbench.core import CrsbenchError, check_write_folder, check_write_target, no_progress
        from crsbench.pipeline.stores import warehouse_paths
        from crsbench.report import build_report

        protected = warehouse_paths(self.db, self.store)
        check_write_target(Path(out), force=force, protected=protected, example="report.html")
        if figures:
            if Path(figures).absolute() == Path(out).absolute():
                raise CrsbenchError(f"--out and --figures both name {out}; give the figures their own folder")
            check_write_folder(Path(figures), force=force, protected=protected)
        with Warehouse.open(self.db, read_only=True) as wh:
            return build_report(
                wh,
                Path(out),
                panel=panel,
                figures_dir=Path(figures) if figures else None,
                progress=progress or no_progress,
            )
