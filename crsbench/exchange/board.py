"""`crsbench results board DIR` (docs/METHODS.md §22.5): a folder of bundles as one warehouse, a
results repository any DuckDB client reads. Every bundle is validated as an import is; the board's
panel is adopted from the bundles (all must name the same panel and members; the anchors are the
first bundle's, by file name, which the board says). Re-running it adds only new bundles."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from crsbench.core import CrsbenchError
from crsbench.exchange.bundle import Bundle, read_bundle
from crsbench.exchange.importing import apply_import, plan_import
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import adopt_panel


@dataclass(frozen=True)
class BoardSummary:
    db: Path
    panel: str
    anchors_from: str  # the bundle file the panel's anchors were adopted from
    added: list[str] = field(default_factory=list)  # bundle files imported now
    already: list[str] = field(default_factory=list)  # bundle files already on the board
    scores: pd.DataFrame = field(default_factory=pd.DataFrame)  # view site_scores


def _bundles(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise CrsbenchError(f"{folder}: not a folder of results bundles")
    found = sorted(p for p in folder.iterdir() if p.suffix == ".zip" and p.is_file())
    if not found:
        raise CrsbenchError(f"{folder}: no results bundle (*.zip) in it")
    return found


def _panel_of(bundles: list[Bundle]) -> tuple[str, list[str]]:
    first = bundles[0].manifest.get("panel", {})
    for b in bundles[1:]:
        spec = b.manifest.get("panel", {})
        if spec.get("name") != first.get("name") or sorted(spec.get("members", [])) != sorted(first.get("members", [])):
            raise CrsbenchError(
                f"{b.path}: panel {spec.get('name')!r} ({', '.join(spec.get('members', []))}) differs from "
                f"{bundles[0].path.name}'s {first.get('name')!r}; a board holds one panel"
            )
    return str(first.get("name")), list(first.get("members", []))


def build_board(db: Path, folder: Path, trusted_file: Path | None = None, allow_unsigned: bool = False) -> BoardSummary:
    """Create or update the board warehouse `db` from every bundle in `folder`."""
    paths = _bundles(folder)
    bundles = [read_bundle(p) for p in paths]
    name, members = _panel_of(bundles)
    conditions = sorted(bundles[0].manifest.get("protocol", {}).get("conditions", {}))
    datasets = sorted(bundles[0].manifest.get("protocol", {}).get("datasets", {}))
    added: list[str] = []
    already: list[str] = []
    with Warehouse.open(db) as wh:
        adopt_panel(wh, name, members, bundles[0].parts["anchors"], {d: conditions for d in datasets})
        for path in paths:
            plan = plan_import(wh, path, trusted_file, allow_unsigned)
            (already if plan.already else added).append(path.name)
            if not plan.already:
                apply_import(wh, plan)
        scores = wh.sql("select * from site_scores where panel = ? order by site, crs_rank", [name])
    return BoardSummary(db, name, paths[0].name, added, already, scores)
