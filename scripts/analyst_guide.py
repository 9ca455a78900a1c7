"""Write docs/ANALYST_GUIDE.md: eleven questions an analyst asks of a warehouse, each with its SQL
and the answer that SQL gives on the given warehouse (normally the demo's).

    python scripts/analyst_guide.py --db demo-out/crsbench.duckdb
    python scripts/analyst_guide.py --db demo-out/crsbench.duckdb --out /tmp/guide.md
    python scripts/analyst_guide.py --db demo-out/crsbench.duckdb --check

The warehouse is opened read-only. Every query uses only the views, the tables and the
analysis outputs a demo warehouse holds; "the panel" is the most recently frozen one, so no
query names a panel, an encoder or a dataset. Every question is about that panel's members
(an encoder probed outside the panel, such as the demo's zero-shot tiny-clip, appears in no
answer), except question 4, which says that it also ranks every encoder scored against the
panel. Question 11 prints no measured speed (images/s is timed, so it differs run to run).
Question 10 names the bootstrap the warehouse holds (its `resample`), read from the
data. Nothing run-dependent (a timestamp, a path) is printed, so a fresh demo gives the same
text; --check regenerates in memory and exits 1 with a diff when the guide differs.
tests/test_analyst_guide.py runs every query on a small generated warehouse and checks the
answers against pandas.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.warehouse.connection import Warehouse

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "docs" / "ANALYST_GUIDE.md"
LATEST_PANEL = "(select panel from panels order by frozen_at desc, panel limit 1)"
# The latest panel's members: the first CTE of every query on per-encoder tables that also hold
# encoders outside the panel (metrics_seed, the analysis outputs).
MEMBERS = f"""members as (
    select panel, encoder_id from reference_panels
    where panel = {LATEST_PANEL}
)"""
IN_PANEL = "encoder_id in (select encoder_id from members)"
BOOTSTRAP_RESAMPLE = (
    "json_extract_string(params, '$.resample') from analyses where table_name = 'analysis_bootstrap_encoders'"
)
# What each bootstrap.RESAMPLE mode draws, in the words of METHODS.md §10.
RESAMPLE_WORDS = {
    "images+seeds": "image-level bootstrap (test images stratified by class and grouped by patient, drawn "
    "jointly with the label-fraction seeds; METHODS.md §10.2)",
    "seeds": "paired-seed bootstrap (the label-fraction seeds alone, the test images fixed; METHODS.md §10.1)",
    "images": "image-level bootstrap of the test images alone, every seed once (METHODS.md §10.2)",
}
MAX_ROWS = 15
MAX_DIFF_LINES = 40


@dataclasses.dataclass(frozen=True)
class Question:
    title: str
    why: str  # may hold {bootstrap}: the bootstrap the warehouse holds (bootstrap_words)
    sql: str


QUESTIONS: tuple[Question, ...] = (
    Question(
        "Which panel member is the most reliable overall, and where would AUROC alone have put it?",
        "The leaderboard of the latest frozen panel's members: aggregate CRS next to the aggregate "
        "AUROC, each with its rank among the panel (METHODS.md §8.4-§8.5).",
        f"""select encoder_id, round(crs, 3) as crs, crs_rank, round(auroc, 3) as auroc, auroc_rank
from crs_encoder
where panel = {LATEST_PANEL} and regime = 'frozen' and in_panel
order by crs desc, encoder_id""",
    ),
    Question(
        "Which panel member is most robust to blur at 50 % depth?",
        "AUROC lost to Gaussian blur (all three severities) by the primary probe on features "
        "taken half-way through the encoder, full labels, seed means, averaged over datasets "
        "(METHODS.md §2.3, §5). A smaller drop is better.",
        f"""with {MEMBERS},
clean as (
    select encoder_id, dataset_id, auroc_mean from metrics_seed
    where probe = 'logreg' and depth = 0.5 and label_fraction = 1.0 and regime = 'frozen'
      and condition = 'clean' and eval_dataset_id = dataset_id and {IN_PANEL}
),
blurred as (
    select encoder_id, dataset_id, condition, auroc_mean from metrics_seed
    where probe = 'logreg' and depth = 0.5 and label_fraction = 1.0 and regime = 'frozen'
      and condition like 'gaussian_blur-s%' and eval_dataset_id = dataset_id and {IN_PANEL}
)
select b.encoder_id, round(avg(c.auroc_mean - b.auroc_mean), 4) as mean_auroc_drop,
       round(max(c.auroc_mean - b.auroc_mean), 4) as worst_auroc_drop,
       count(distinct b.dataset_id) as n_datasets
from blurred b
join clean c using (encoder_id, dataset_id)
group by b.encoder_id
order by mean_auroc_drop, b.encoder_id""",
    ),
    Question(
        "Where do the AUROC and CRS ranks disagree?",
        "Each panel member's rank by aggregate AUROC and by CRS, how many places CRS moves it, and "
        "the members it swaps order with: pairs that AUROC and CRS order in opposite ways "
        "(reversals, METHODS.md §9.1).",
        f"""select a.encoder_id, a.auroc_rank, a.crs_rank, a.auroc_rank - a.crs_rank as places_gained,
       coalesce(list(b.encoder_id order by b.encoder_id) filter (where b.encoder_id is not null),
                []) as reversed_with
from crs_encoder a
left join crs_encoder b on b.panel = a.panel and b.in_panel
    and sign(a.crs - b.crs) * sign(a.auroc - b.auroc) < 0
where a.panel = {LATEST_PANEL} and a.in_panel
group by a.encoder_id, a.auroc_rank, a.crs_rank
order by a.crs_rank, a.encoder_id""",
    ),
    Question(
        "How far do the two rankings agree overall, among the panel and among all encoders?",
        "Kendall tau-b, Spearman rho, reversals out of all pairs, mean rank displacement and "
        "Top-3 overlap between the AUROC and CRS rankings of the panel's members (population "
        "'panel') and, the one question here not limited to the members, of every frozen-regime "
        "encoder scored against the panel with full coverage ('all') (METHODS.md §9.1).",
        f"""select population, n, round(kendall_tau, 3) as kendall_tau,
       round(spearman_rho, 3) as spearman_rho, reversals, pairs,
       round(mean_abs_displacement, 3) as mean_abs_displacement, top3_overlap
from rank_agreement
where panel = {LATEST_PANEL}
order by population desc""",
    ),
    Question(
        "Which axis holds each panel member back?",
        "The weakest of the four normalised aggregate axes (0 = the panel's worst, 1 = its best; "
        "METHODS.md §8.2): the CRS worst-axis term, with the axis it comes from (of equal axes, "
        "the first by name).",
        f"""select encoder_id, arg_min(axis, (value, axis)) as weakest_axis, round(min(value), 3) as weakest_value,
       arg_min(axis, (-value, axis)) as strongest_axis, round(max(value), 3) as strongest_value
from (
    unpivot (
        select encoder_id, discrimination, calibration, label_efficiency, robustness
        from axes_normalised
        where panel = {LATEST_PANEL} and scope = 'global' and regime = 'frozen'
          and in_panel
    )
    on discrimination, calibration, label_efficiency, robustness
    into name axis value value
)
group by encoder_id
order by weakest_value, encoder_id""",
    ),
    Question(
        "Does corruption break confidence before it breaks ranking?",
        "Per panel member and dataset: ECE on clean images and its mean rise over the 15 "
        "corruptions, next to the mean AUROC drop (primary probe, full depth and labels; "
        "METHODS.md §4, §12 E4). A large ECE rise with a small AUROC drop is a model whose "
        "percentages go wrong while its ranking holds.",
        f"""with {MEMBERS},
cells as (
    select encoder_id, dataset_id, condition, auroc_mean, ece_mean from metrics_seed
    where probe = 'logreg' and depth = 1.0 and label_fraction = 1.0 and regime = 'frozen'
      and eval_dataset_id = dataset_id and condition not in ('calib', 'shift') and {IN_PANEL}
)
select c.encoder_id, c.dataset_id, round(c.ece_mean, 4) as ece_clean,
       round(avg(p.ece_mean - c.ece_mean), 4) as mean_ece_rise,
       round(avg(c.auroc_mean - p.auroc_mean), 4) as mean_auroc_drop
from cells c
join cells p on p.encoder_id = c.encoder_id and p.dataset_id = c.dataset_id
    and p.condition <> 'clean'
where c.condition = 'clean'
group by c.encoder_id, c.dataset_id, c.ece_mean
order by mean_ece_rise desc, c.encoder_id, c.dataset_id""",
    ),
    Question(
        "With 1 % of the labels, which panel member keeps the most of its full-label AUROC?",
        "Clean AUROC at 1 % and 100 % of the training labels (primary probe, full depth, seed "
        "means) and the share kept, per dataset (METHODS.md §1, §6 label efficiency).",
        f"""with {MEMBERS},
curve as (
    select encoder_id, dataset_id, label_fraction, auroc_mean from metrics_seed
    where probe = 'logreg' and depth = 1.0 and regime = 'frozen' and condition = 'clean'
      and eval_dataset_id = dataset_id and label_fraction in (0.01, 1.0) and {IN_PANEL}
)
select l.dataset_id, l.encoder_id, round(l.auroc_mean, 4) as auroc_1pct,
       round(f.auroc_mean, 4) as auroc_full, round(l.auroc_mean / f.auroc_mean, 4) as share_kept
from curve l
join curve f on f.encoder_id = l.encoder_id and f.dataset_id = l.dataset_id
    and f.label_fraction = 1.0
where l.label_fraction = 0.01
order by l.dataset_id, share_kept desc, l.encoder_id""",
    ),
    Question(
        "How much does moving to another hospital cost each panel member?",
        "Source-trained probes evaluated on the shift target's test images without retraining "
        "(condition 'shift'), against the same fits on the source's clean test images "
        "(METHODS.md §3, §6 robustness).",
        f"""with {MEMBERS},
source as (
    select encoder_id, dataset_id, auroc_mean from metrics_seed
    where probe = 'logreg' and depth = 1.0 and label_fraction = 1.0 and regime = 'frozen'
      and condition = 'clean' and eval_dataset_id = dataset_id and {IN_PANEL}
)
select t.encoder_id, t.dataset_id as source, t.eval_dataset_id as target,
       round(s.auroc_mean, 4) as auroc_source, round(t.auroc_mean, 4) as auroc_target,
       round(s.auroc_mean - t.auroc_mean, 4) as auroc_gap
from metrics_seed t
join source s using (encoder_id, dataset_id)
where t.probe = 'logreg' and t.depth = 1.0 and t.label_fraction = 1.0 and t.regime = 'frozen'
  and t.condition = 'shift'
order by auroc_gap, t.encoder_id, source, target""",
    ),
    Question(
        "Is the last layer the best one to probe?",
        "For each panel member and dataset, the depth whose features give the highest clean AUROC "
        "(primary probe, full labels, seed means; ties go to the deeper layer) and what it gains "
        "over the final block (METHODS.md §2.2, §12 E3).",
        f"""with {MEMBERS},
sweep as (
    select encoder_id, dataset_id, depth, auroc_mean from metrics_seed
    where probe = 'logreg' and label_fraction = 1.0 and regime = 'frozen' and condition = 'clean'
      and eval_dataset_id = dataset_id and {IN_PANEL}
)
select encoder_id, dataset_id, arg_max(depth, (auroc_mean, depth)) as best_depth,
       round(max(auroc_mean), 4) as best_auroc,
       round(max(auroc_mean) - max(auroc_mean) filter (where depth = 1.0), 4) as gain_over_last
from sweep
group by encoder_id, dataset_id
order by gain_over_last desc, encoder_id, dataset_id""",
    ),
    Question(
        "How sure is the leaderboard's top?",
        "The {bootstrap}, as stored by `crsbench analyze bootstrap` (column resample): each panel "
        "member's chance of ranking first and of being in the top 3, and the 95 % interval of its "
        "CRS. The demo runs it; in another warehouse run the analysis first (on the latest panel).",
        f"""with {MEMBERS}
select e.encoder_id, (select {BOOTSTRAP_RESAMPLE}) as resample,
       round(e.crs, 3) as crs, round(e.crs_lo, 3) as crs_lo, round(e.crs_hi, 3) as crs_hi,
       round(e.p_rank1, 3) as p_rank1, round(e.p_top3, 3) as p_top3, e.leading_tier
from analysis_bootstrap_encoders e
join members m on m.panel = e.panel and m.encoder_id = e.encoder_id
order by e.crs desc, e.encoder_id""",
    ),
    Question(
        "What is the best CRS under 10 GFLOPs per image?",
        "A budget question: the panel members whose forward costs less than 10 GFLOPs per image "
        "(torch's FlopCounterMode on one image at the encoder's input size, a multiply-add is 2 "
        "FLOPs; measured once at extraction, view crs_cost), most reliable first: the first row is "
        "the answer. An encoder whose feature sets were extracted before cost was measured has no "
        'FLOP count (NULL, "not measured") and is left out rather than taken as free. FLOPs do '
        "not depend on the device; `images_per_s` in crs_cost does, and varies run to run "
        "(METHODS.md §2.8).",
        f"""select distinct encoder_id, round(crs, 3) as crs, crs_rank,
       round(gflops_per_image, 4) as gflops_per_image, round(params / 1e6, 3) as params_millions
from crs_cost
where panel = {LATEST_PANEL} and regime = 'frozen' and in_panel and gflops_per_image < 10
order by crs desc, encoder_id""",
    ),
)


def answer(wh: Warehouse, question: Question) -> pd.DataFrame:
    return wh.sql(question.sql)


def bootstrap_words(wh: Warehouse) -> str:
    """The bootstrap whose outputs the warehouse holds, in words (RESAMPLE_WORDS), read from the
    `analyses` record of analysis_bootstrap_encoders; a plain "bootstrap" when none ran."""
    rows = wh.sql(f"select {BOOTSTRAP_RESAMPLE}")
    if rows.empty:
        return "bootstrap (none stored in this warehouse yet; METHODS.md §10)"
    resample = str(rows.iloc[0, 0])
    return RESAMPLE_WORDS.get(resample, f"bootstrap with resample {resample!r} (METHODS.md §10)")


def markdown_table(frame: pd.DataFrame, max_rows: int = MAX_ROWS) -> str:
    """A GitHub Markdown table of the first max_rows rows (no extra dependency)."""

    def cell(value: object) -> str:
        if isinstance(value, (list, tuple, np.ndarray)):
            return ", ".join(map(str, value)) or "(none)"
        if value is None or value is pd.NA or (isinstance(value, float) and value != value):
            return "NULL"
        return str(value).replace("|", "\\|")

    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    lines += [
        "| " + " | ".join(cell(v) for v in row) + " |"
        for row in frame.head(max_rows).itertuples(index=False, name=None)
    ]
    if len(frame) > max_rows:
        lines.append(f"\n({len(frame) - max_rows} more rows)")
    if frame.empty:
        lines.append("\n(no rows)")
    return "\n".join(lines)


def render(db: Path) -> str:
    out = [
        "# Analyst guide",
        "",
        "Eleven questions answered in SQL on the warehouse. Each shows the query and the answer it "
        "gave on the demo warehouse (`crsbench demo`); run any of them with "
        '`crsbench sql "..."`, the `duckdb` shell, or `Warehouse.sql()` in Python. Column '
        "meanings: [DATA_DICTIONARY.md](DATA_DICTIONARY.md) or `crsbench describe NAME`; "
        "formulas: [METHODS.md](METHODS.md). The demo's encoders are tiny random-initialised "
        "stand-ins on toy data, so the numbers show the method, not real encoders.",
        "",
        "Every question is about the members of the latest frozen panel (table `reference_panels`); "
        "an encoder probed outside it, such as the demo's zero-shot `tiny-clip`, is in no answer. "
        "Question 4 alone also ranks every encoder scored against the panel, and says so.",
        "",
        "Regenerate from a demo warehouse: `python scripts/analyst_guide.py --db demo-out/crsbench.duckdb`; "
        "add `--check` to verify this file against a fresh demo instead.",
        "",
    ]
    with Warehouse.open(db, read_only=True) as wh:
        words = {"bootstrap": bootstrap_words(wh)}
        for i, q in enumerate(QUESTIONS, start=1):
            why = q.why.format(**words)
            out += [f"## {i}. {q.title}", "", why, "", "```sql", q.sql, "```", "", markdown_table(answer(wh, q)), ""]
    return "\n".join(out)


def check(text: str, path: Path) -> int:
    """0 when path holds exactly text, else 1 after printing a short unified diff."""
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    if current == text:
        print(f"{path} matches the warehouse")
        return 0
    diff = list(
        difflib.unified_diff(current.splitlines(), text.splitlines(), f"{path}", "regenerated", lineterm="", n=0)
    )
    print("\n".join(diff[:MAX_DIFF_LINES]))
    if len(diff) > MAX_DIFF_LINES:
        print(f"... ({len(diff) - MAX_DIFF_LINES} more diff lines)")
    print(f"{path} differs from what the warehouse gives; regenerate it without --check")
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--db", type=Path, required=True, help="warehouse to query (read-only)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 with a diff when --out differs")
    args = parser.parse_args(argv)
    text = render(args.db)
    if args.check:
        return check(text, args.out)
    partial = args.out.with_name(args.out.name + ".partial")  # a reader never sees half a guide
    partial.write_text(text, encoding="utf-8")
    partial.replace(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
