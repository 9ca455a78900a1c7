"""Reference panels (METHODS.md §8): a named, frozen set of encoders and its anchors per scope.

Freezing stores, for every dataset scope the members are observed on and for `global`, the
anchors lo = min and hi = max of each axis over the members' values (regime 'frozen', complete
cells only). The CRS views score every encoder against every frozen panel with these stored
anchors, so adding an encoder later moves no existing score. A frozen panel is immutable.
Cohort mode (anchors and panel = everyone present now) is the `crs_cohort_*` views.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb
import pandas as pd

from crsbench.core import AXES, MIN_PANEL_MEMBERS, NATIVE_SWITCH, CrsbenchError, __version__, small_panel_reason
from crsbench.warehouse.conditions import member_condition_sets, record_panel_conditions
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.lake_snapshots import publication_message, record_publication
from crsbench.warehouse.parts import one_row

GLOBAL_SCOPE = "global"
PANEL_MODE = "fixed"
COHORT = "cohort"

_MEMBER_AXES_SQL = """
    select scope, encoder_id, discrimination, calibration, label_efficiency, robustness
    from axes_scoped
    where regime = 'frozen' and list_contains(?, encoder_id)
    order by scope, encoder_id
"""
# The anchors come from the fn_anchors macro, the same definition cohort mode and the bootstrap use.
_ANCHORS_SQL = """
    with members as (
        select 'panel' as grp, scope, encoder_id, true as in_panel, discrimination, calibration,
               label_efficiency, robustness
        from axes_scoped
        where regime = 'frozen' and list_contains(?, encoder_id)
    )
    select scope, axis, lo, hi, n_members from fn_anchors('members') order by scope, axis
"""


@dataclass(frozen=True)
class Panel:
    name: str
    mode: str
    frozen_at: datetime
    members: tuple[str, ...]
    anchors: pd.DataFrame  # scope, axis, lo, hi


def _clean_members(encoders: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(e.strip() for e in encoders if e and e.strip()))


def check_anchors(anchors: pd.DataFrame, member_axes: pd.DataFrame, panel: str) -> None:
    """Refuse a degenerate anchor (hi = lo), naming its scope and axis (METHODS.md §8)."""
    order = {axis: i for i, axis in enumerate(AXES)}
    for row in sorted(anchors.itertuples(), key=lambda r: (r.scope, order[r.axis])):
        if not row.hi > row.lo:
            observed = member_axes.loc[member_axes.scope == row.scope, "encoder_id"]
            raise CrsbenchError(
                f"panel {panel!r}: degenerate anchor for axis {row.axis!r} in scope {row.scope!r} "
                f"(lo = hi = {row.lo:.6g} over {len(observed)} member(s) observed there: "
                f"{', '.join(observed)}); choose members that differ on it"
            )


def _member_axes_and_anchors(wh: Warehouse, members: tuple[str, ...]) -> tuple[pd.DataFrame, pd.DataFrame]:
    if one_row(wh.con.execute("select count(*) from axes_cell where dataset_id = ?", [GLOBAL_SCOPE]).fetchone())[0]:
        raise CrsbenchError(f"a dataset is named {GLOBAL_SCOPE!r}, which is the aggregate scope; rename it")
    member_axes = wh.sql(_MEMBER_AXES_SQL, [list(members)])
    return member_axes, wh.sql(_ANCHORS_SQL, [list(members)]).drop(columns="n_members")


def _refuse_flagged(wh: Warehouse, name: str, members: tuple[str, ...]) -> None:
    """A member sets the anchors: an unconfirmed degenerate feature set of one is refused (§2.7)."""
    flagged = wh.sql(
        "select encoder_id, dataset_id, degenerate from fn_flagged_sets() where regime = 'frozen' "
        "and list_contains(?, encoder_id) order by encoder_id, dataset_id",
        [list(members)],
    )
    if len(flagged):
        r = flagged.iloc[0]
        raise CrsbenchError(
            f"panel {name!r}: {r.encoder_id} has a degenerate feature set on {r.dataset_id} ({r.degenerate}); "
            f"a member sets the anchors, so confirm the set first (crsbench feature-sets --confirm "
            f"{r.encoder_id} {r.dataset_id}) or leave it out"
        )


def _refuse_mixed_numerics(wh: Warehouse, name: str, members: tuple[str, ...]) -> None:
    """Members' features computed under canonical and native numerics (METHODS.md §4.3) differ in
    the last bits by CPU, so one panel holds one kind; sets recorded before numerics was are not judged."""
    kinds = wh.sql(
        "select p ->> 'numerics' as numerics, list(distinct encoder_id order by encoder_id) as encoders "
        "from (select encoder_id, provenance::json as p from feature_sets "
        "      where regime = 'frozen' and list_contains(?, encoder_id)) "
        "where p ->> 'numerics' is not null group by all order by numerics",
        [list(members)],
    )
    if len(kinds) > 1:
        spread = "; ".join(f"{r.numerics}: {', '.join(r.encoders)}" for r in kinds.itertuples())
        raise CrsbenchError(
            f"panel {name!r} mixes feature sets computed under different numerics ({spread}); their bits "
            "depend on the CPU differently (docs/METHODS.md §4.3): re-extract the native ones without "
            f"{NATIVE_SWITCH}=1 (crsbench extract --force ...) or leave them out"
        )


def freeze_panel(wh: Warehouse, name: str, encoders: Sequence[str], *, allow_small: bool = False) -> Panel:
    """Freeze panel `name` over `encoders` (>= MIN_PANEL_MEMBERS, or >= 2 with `allow_small`;
    each with complete frozen-regime cells)."""
    name = name.strip()
    if not name or name == COHORT:
        raise CrsbenchError(f"panel name {name!r} is not allowed (empty or reserved)")
    members = _clean_members(encoders)
    if len(members) < 2:
        raise CrsbenchError(f"panel {name!r} needs at least 2 distinct encoders, got {len(members)}")
    if len(members) < MIN_PANEL_MEMBERS and not allow_small:
        raise CrsbenchError(
            f"panel {name!r} has {len(members)} members, fewer than {MIN_PANEL_MEMBERS}: "
            f"{small_panel_reason(len(members))}; add members, or pass --allow-small to freeze it anyway"
        )
    _refuse_frozen(wh, name)
    _refuse_flagged(wh, name, members)
    _refuse_mixed_numerics(wh, name, members)
    with wh.snapshot(("axes_cell",)):  # its reads below evaluate the cells once
        member_axes, anchors = _member_axes_and_anchors(wh, members)
        condition_sets = member_condition_sets(wh.con, name, members)  # one set per dataset, else refused
    scored = set(member_axes.loc[member_axes.scope == GLOBAL_SCOPE, "encoder_id"])
    missing = [m for m in members if m not in scored]
    if missing:
        raise CrsbenchError(
            f"panel {name!r}: no complete frozen-regime cell (all four axes) for "
            f"{', '.join(missing)}; probe it first (see the axes_cell view)"
        )
    check_anchors(anchors, member_axes, name)
    frozen_at = datetime.now(UTC).replace(tzinfo=None)
    with _name_held(wh, name):
        _store_panel(wh, name, members, anchors, condition_sets, frozen_at)
    record_publication(wh, name, frozen_at)
    return Panel(name, PANEL_MODE, frozen_at, members, anchors)


def _refuse_frozen(wh: Warehouse, name: str) -> None:
    existing = wh.con.execute("select frozen_at from panels where panel = ?", [name]).fetchone()
    if existing is not None:
        raise CrsbenchError(
            f"panel {name!r} was frozen at {existing[0]} and frozen panels are immutable; "
            "freeze the new membership under a new name"
        )


@contextmanager
def _name_held(wh: Warehouse, name: str) -> Iterator[None]:
    # The lone file's primary key refuses a second freeze of one name; a team warehouse has none, so the
    # name is claimed in its catalog (lake_claims.holding_panel_name) and looked up once more under it.
    if wh.lake is None:
        yield
        return
    from crsbench.warehouse.lake_claims import holding_panel_name

    with holding_panel_name(wh.lake, name):
        _refuse_frozen(wh, name)
        yield


def _store_panel(
    wh: Warehouse,
    name: str,
    members: Sequence[str],
    anchors: pd.DataFrame,
    condition_sets: pd.DataFrame,
    frozen_at: datetime,
) -> None:
    try:
        with wh.transaction(message=publication_message(name, frozen_at)) as con:
            con.execute("insert into panels values (?, ?, ?, ?)", [name, PANEL_MODE, frozen_at, __version__])
            con.executemany("insert into reference_panels values (?, ?)", [[name, m] for m in members])
            con.executemany(
                "insert into reference_anchors values (?, ?, ?, ?, ?, ?)",
                [[name, r.scope, r.axis, r.lo, r.hi, frozen_at] for r in anchors.itertuples()],
            )
            record_panel_conditions(con, name, condition_sets)
    except duckdb.ConstraintException as exc:  # another process froze the same name meanwhile
        raise CrsbenchError(f"panel {name!r} is already frozen; frozen panels are immutable") from exc


def adopt_panel(
    wh: Warehouse, name: str, members: Sequence[str], anchors: pd.DataFrame, conditions: dict[str, list[str]]
) -> Panel:
    """Store a panel frozen elsewhere (a results board's, docs/METHODS.md §22.5): its members,
    anchors (scope, axis, lo, hi) and condition sets as given, not recomputed here. The same
    panel twice is a no-op; another panel under the name is refused."""
    members = _clean_members(members)
    if len(members) < 2:
        raise CrsbenchError(f"panel {name!r} needs at least 2 members to be adopted, got {len(members)}")
    if not len(anchors) or not (anchors["hi"] > anchors["lo"]).all():
        raise CrsbenchError(f"panel {name!r}: its anchors are missing or degenerate (hi <= lo)")
    existing = wh.con.execute("select 1 from panels where panel = ?", [name]).fetchone()
    if existing is not None:
        here = get_panel(wh, name)
        if sorted(here.members) != sorted(members):
            raise CrsbenchError(f"panel {name!r} exists here with other members: {', '.join(here.members)}")
        return here
    frozen_at = datetime.now(UTC).replace(tzinfo=None)
    with wh.transaction() as con:
        con.execute("insert into panels values (?, ?, ?, ?)", [name, PANEL_MODE, frozen_at, __version__])
        con.executemany("insert into reference_panels values (?, ?)", [[name, m] for m in members])
        con.executemany(
            "insert into reference_anchors values (?, ?, ?, ?, ?, ?)",
            [[name, r.scope, r.axis, float(r.lo), float(r.hi), frozen_at] for r in anchors.itertuples()],
        )
        con.executemany(
            "insert into panel_conditions values (?, ?, ?)",
            [[name, s, sorted(c)] for s, c in sorted(conditions.items())],
        )
    return get_panel(wh, name)


def get_panel(wh: Warehouse, name: str) -> Panel:
    row = wh.con.execute("select mode, frozen_at from panels where panel = ?", [name]).fetchone()
    if row is None:
        known = ", ".join(list_panels(wh).panel) or "none"
        raise CrsbenchError(f"no panel named {name!r} (frozen panels: {known})")
    members = tuple(
        wh.sql("select encoder_id from reference_panels where panel = ? order by encoder_id", [name]).encoder_id
    )
    anchors = wh.sql(
        "select scope, axis, lo, hi from reference_anchors where panel = ? order by scope = 'global' desc, scope, axis",
        [name],
    )
    return Panel(name, row[0], row[1], members, anchors)


def list_panels(wh: Warehouse) -> pd.DataFrame:
    return wh.sql(
        """select p.panel, p.mode, p.frozen_at, count(m.encoder_id) as n_members,
                  list(m.encoder_id order by m.encoder_id) as members
           from panels p left join reference_panels m using (panel)
           group by p.panel, p.mode, p.frozen_at
           order by p.frozen_at, p.panel"""
    )


def default_panel(wh: Warehouse) -> str | None:
    """The most recently frozen panel, or None when there is none (then use cohort mode)."""
    panels = list_panels(wh)
    return None if panels.empty else str(panels.panel.iloc[-1])


# crs_encoder with the cells of encoders pretrained on the dataset left out (METHODS.md §20).
_EXCLUDING_OVERLAP = "fn_crs_encoder('axes_cell', exclude_overlap := true)"


def leaderboard(
    wh: Warehouse, panel: str | None = None, allow_partial: bool = False, exclude_overlap: bool = False
) -> tuple[str, pd.DataFrame, pd.DataFrame]:
    """(panel used, frozen-regime CRS leaderboard, rank-agreement rows); cohort mode if no panel.

    A partial-coverage encoder (complete cells missing some of the panel's datasets) has no
    aggregate rank; `allow_partial` gives it the place it would take (column rank_marker '*').
    `exclude_overlap` scores every encoder without its cells on datasets it was pretrained on
    (view encoder_dataset_overlap; fn_crs_encoder), at read time: such an encoder turns partial.
    """
    if allow_partial and panel is None:
        raise CrsbenchError(
            "--allow-partial needs --panel P: coverage is judged against the datasets a frozen panel was frozen with"
        )
    panel = panel if panel is not None else default_panel(wh)
    if exclude_overlap and panel is None:
        raise CrsbenchError(
            "--exclude-overlap needs a frozen panel: a left-out cell makes its encoder partial, which is "
            "judged against the datasets a panel was frozen with (crsbench panel freeze)"
        )
    columns = "encoder_id, crs, crs_rank, auroc, auroc_rank, dominance, ideal, worst, in_panel, n_datasets, pretrained, flagged"
    if panel is None:
        board = wh.sql(
            f"select {columns.replace('n_datasets, ', '')} from crs_cohort_encoder "
            "where regime = 'frozen' order by crs desc nulls last, encoder_id"
        )
        agreement = wh.sql("select 'cohort' as population, * from rank_agreement_cohort")
        return COHORT, board, agreement
    get_panel(wh, panel)  # a clear error for an unknown name
    board = wh.sql(
        f"select {columns}, coverage, n_panel_datasets, missing_datasets, crs_rank_partial, auroc_rank_partial "
        f"from {_EXCLUDING_OVERLAP if exclude_overlap else 'crs_encoder'} "
        "where panel = ? and regime = 'frozen' order by crs desc nulls last, encoder_id",
        [panel],
    )
    board["rank_marker"] = ""
    if allow_partial:
        partial = board["coverage"] == "partial"
        board.loc[partial, "crs_rank"] = board.loc[partial, "crs_rank_partial"]
        board.loc[partial, "auroc_rank"] = board.loc[partial, "auroc_rank_partial"]
        board.loc[partial, "rank_marker"] = "*"
    board = board.drop(columns=["crs_rank_partial", "auroc_rank_partial"])
    agreement = wh.sql("select * exclude (panel) from rank_agreement where panel = ? order by population desc", [panel])
    return panel, board, agreement
