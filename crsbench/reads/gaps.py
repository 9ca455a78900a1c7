"""What incomplete cells lack, as the lines `status`, `leaderboard` and the report print.

A cell of a panel member (or of any encoder while no panel is frozen) is listed with the runs it
lacks (`missing_lines`). An encoder outside every frozen panel, probed in part on purpose (the
demo's zero-shot encoder, a quick look at a candidate), gets one line instead (`outside_lines`):
how many of the declared probe settings it has runs of; view grid_missing lists every run it lacks.
"""

from __future__ import annotations

from crsbench.warehouse.connection import Warehouse

PARTS_SHOWN = 8  # what one cell's line names before "... and N more"


def outside_panels(wh: Warehouse) -> set[str]:
    """Encoders with cells that no frozen panel holds; none while no panel is frozen (then every
    encoder's cells count)."""
    rows = wh.sql(
        "select distinct encoder_id from grid_missing where exists (select 1 from reference_panels) "
        "and encoder_id not in (select encoder_id from reference_panels)"
    )
    return {str(e) for e in rows["encoder_id"]}


def outside_lines(wh: Warehouse, regime: str | None = "frozen") -> list[str]:
    """One line per encoder outside every panel with incomplete cells, e.g.
    'tiny-clip: zero-shot plus 2 of 30 probe settings; outside every panel'. The settings are the
    (probe, depth, label fraction) keys of the declared grid of its cells' datasets; one counts
    when the encoder has any run of it. A declared zero-shot cell lacking runs says how many."""
    outside = sorted(outside_panels(wh))
    if not outside:
        return []
    counts = wh.sql(
        "with cells as (select distinct encoder_id, dataset_id, regime from grid_missing "
        "  where list_contains(?, encoder_id) and (? is null or regime = ?)), "
        "declared as (select distinct c.encoder_id, c.regime, g.probe, g.depth, g.label_fraction "
        "  from cells c join grid_declared g using (dataset_id, regime)), "
        "held as (select distinct r.encoder_id, r.regime, r.probe, r.depth, r.label_fraction "
        "  from runs_grid r join cells c using (encoder_id, dataset_id, regime) where r.in_grid), "
        "zeroshot as (select distinct encoder_id, regime from held where probe = 'zeroshot'), "
        "zeroshot_gaps as (select encoder_id, regime, count(*) as n from grid_missing "
        "  where probe = 'zeroshot' and list_contains(?, encoder_id) group by all) "
        "select d.encoder_id, d.regime, count(*) as n_settings, count(h.probe) as n_held, "
        "  any_value(z.encoder_id) is not null as zeroshot, coalesce(any_value(g.n), 0) as zeroshot_lacks "
        "from declared d left join held h using (encoder_id, regime, probe, depth, label_fraction) "
        "left join zeroshot z using (encoder_id, regime) left join zeroshot_gaps g using (encoder_id, regime) "
        "group by all order by all",
        [outside, regime, regime, outside],
    )
    lines = []
    for r in counts.itertuples():
        zeroshot = "zero-shot plus " if bool(r.zeroshot) else ""
        if r.zeroshot_lacks:
            zeroshot = f"zero-shot lacking {int(r.zeroshot_lacks)} runs plus "
        suffix = "" if r.regime == "frozen" else f" ({r.regime})"
        lines.append(
            f"{r.encoder_id}{suffix}: {zeroshot}{int(r.n_held)} of {int(r.n_settings)} probe settings; "
            "outside every panel"
        )
    return lines


def _seed_ranges(seeds: list[int]) -> str:
    seeds = sorted(set(seeds))
    runs: list[tuple[int, int]] = []
    for s in seeds:
        if runs and s == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], s)
        else:
            runs.append((s, s))
    parts = [f"{a}" if a == b else f"{a}-{b}" for a, b in runs]
    return ("seed " if len(seeds) == 1 else "seeds ") + ",".join(parts)


def missing_lines(wh: Warehouse, regime: str | None = "frozen", limit: int = 20) -> list[str]:
    """What incomplete cells lack, one line per cell, e.g.
    'isic2019 x tiny-vit: fraction 0.05 seeds 3-4 missing'. A fit lacking every evaluation
    counts as its seed missing; a fit lacking some is named with its conditions. Encoders outside
    every panel are left to `outside_lines`; a line names PARTS_SHOWN gaps, then how many more."""
    gaps = wh.sql(
        "select * from grid_missing where (? is null or regime = ?) and not list_contains(?, encoder_id) "
        "and not contains(condition, '.')",  # a corruption suite's runs never keep a cell out of the CRS
        [regime, regime, sorted(outside_panels(wh))],
    )
    if gaps.empty:
        return []
    per_fit = wh.sql(
        "select dataset_id, regime, probe, depth, label_fraction, seed, "
        "count(distinct (condition, eval_dataset_id)) as n_evals from ("
        "select * exclude (declared) from grid_declared union all "
        "select * exclude (encoder_id, prompt_hash) from grid_declared_zeroshot) "
        "group by all"
    )
    expected = (
        per_fit.groupby(["dataset_id", "regime", "probe", "depth", "label_fraction"])["n_evals"]
        .max()
        .rename("n_expected")
    )
    lines = []
    keys = ["encoder_id", "dataset_id", "regime"]
    for (encoder, dataset, reg), cell in gaps.groupby(keys, sort=True):
        parts = []
        fits = cell.groupby(["probe", "depth", "label_fraction", "seed"]).size().rename("n").reset_index()
        groups = sorted(fits.groupby(["probe", "depth", "label_fraction"]), key=lambda g: g[0][0] != "zeroshot")
        for (probe, depth, fraction), group in groups:  # zero-shot first: a cap never hides it
            want = expected.get((dataset, reg, probe, depth, fraction), 1)
            what = "" if (probe, depth) == ("logreg", 1.0) else f"{probe} depth {depth:g} "
            whole = group[group["n"] >= want]["seed"].tolist()
            if whole:
                parts.append(f"{what}fraction {fraction:g} {_seed_ranges(whole)} missing")
            for row in group[group["n"] < want].itertuples():
                conds = cell[
                    (cell["probe"] == probe)
                    & (cell["depth"] == depth)
                    & (cell["label_fraction"] == fraction)
                    & (cell["seed"] == row.seed)
                ]
                names = sorted(conds["condition"])
                parts.append(
                    f"{what}fraction {fraction:g} seed {row.seed}: {len(names)} "
                    f"condition(s) missing ({', '.join(names[:3])}" + (", ..." if len(names) > 3 else "") + ")"
                )
        suffix = "" if reg == "frozen" else f" ({reg})"
        more = [f"... and {len(parts) - PARTS_SHOWN} more"] if len(parts) > PARTS_SHOWN else []
        lines.append(f"{dataset} x {encoder}{suffix}: " + "; ".join([*parts[:PARTS_SHOWN], *more]))
    if len(lines) > limit:
        lines = [*lines[:limit], f"... and {len(lines) - limit} more incomplete cells (see the grid_missing view)"]
    return lines


def suite_lines(wh: Warehouse) -> list[str]:
    """One line per cell still owed runs of a corruption suite its grid declares (METHODS.md §25), e.g.
    'isic2019 x tiny-vit: suite medmnistc-derm lacks 42 runs'. The cell's CRS does not wait for them;
    view suite_robustness leaves the cell unranked until they are in."""
    owed = wh.sql(
        "select dataset_id, encoder_id, regime, split_part(condition, '.', 1) as suite, count(*) as n "
        "from grid_missing where contains(condition, '.') group by all order by all"
    )
    return [
        f"{r.dataset_id} x {r.encoder_id}{'' if r.regime == 'frozen' else f' ({r.regime})'}: "
        f"suite {r.suite} lacks {int(r.n)} runs"
        for r in owed.itertuples()
    ]
