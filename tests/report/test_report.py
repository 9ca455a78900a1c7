"""The HTML report: data gathering, sections, figures and the self-contained page.

`build_warehouse` makes a small warehouse from hand-built run records (5 encoders, a
multiclass dataset and a multilabel one with a shift target, every depth, fraction and
corruption), freezes a panel and stores hand-made analysis tables, so each section has
data. The browser test (test_report_browser.py) reuses it.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support.runs_factory import schema_row

from crsbench.analyses.registry import AnalysisResult, run_analysis, store_result
from crsbench.core import DEPTHS, LABEL_FRACTIONS, PERTURBED_CONDITIONS, SEVERITIES, CrsbenchError
from crsbench.features.store import FeatureSetRef
from crsbench.report import SECTION_IDS, build_report
from crsbench.report.html import bullet_list
from crsbench.report.sections_curves import nullable_table
from crsbench.warehouse.catalog import record_attrs
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel

# encoder -> (clean full AUROC, ECE, fragility (AUROC lost per corruption severity), label hunger)
PROFILES = {
    "alpha": (0.93, 0.20, 0.050, 0.30),  # best AUROC, badly calibrated, fragile
    "bravo": (0.90, 0.04, 0.010, 0.10),  # slightly lower AUROC, good on every other axis
    "charlie": (0.86, 0.08, 0.020, 0.15),
    "delta": (0.82, 0.06, 0.015, 0.20),
    "echo": (0.70, 0.12, 0.030, 0.40),  # random-init
}
RANDOM_INIT = {"echo"}
DATASETS = {"derm": ("multiclass", ["a", "b", "c"]), "cxr": ("multilabel", ["x", "y"])}
SHIFT = {"cxr": "cxr_b"}
SEEDS = (0, 1)


def _run_rows() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = []
    for encoder, (auroc, ece, fragility, hunger) in PROFILES.items():
        for d_index, dataset in enumerate(DATASETS):
            for seed in SEEDS:
                full = auroc - 0.02 * d_index + rng.normal(0, 0.002)
                fit_ece = ece + rng.normal(0, 0.002)

                def add(
                    depth: float,
                    fraction: float,
                    condition: str,
                    value: float,
                    eval_dataset: str = dataset,
                    calibration_error: float = fit_ece,
                ) -> None:
                    fit = f"{encoder}|{dataset}|{depth}|{fraction}|{seed}"
                    rows.append(
                        schema_row(
                            {
                                "run_id": f"{fit}|{condition}|{eval_dataset}",
                                "fit_id": fit,
                                "encoder_id": encoder,
                                "dataset_id": dataset,
                                "eval_dataset_id": eval_dataset,
                                "regime": "frozen",
                                "probe": "logreg",
                                "depth": depth,
                                "label_fraction": fraction,
                                "seed": seed,
                                "condition": condition,
                                "auroc": value,
                                "ece": calibration_error,
                                "ece_adaptive": calibration_error,
                                "brier": 0.2,
                                "nll": 0.5,
                                "accuracy": value - 0.1,
                                "mean_confidence": 0.8,
                                "n_train": 100,
                                "n_test": 50,
                                "fit_seconds": 0.1,
                                "pretrained": encoder not in RANDOM_INIT,
                                "code_version": "test",
                                "created_at": datetime(2025, 1, 1, tzinfo=UTC),
                            }
                        )
                    )

                for fraction in LABEL_FRACTIONS:
                    add(1.0, fraction, "clean", full - hunger * (1 - fraction) ** 4 * (full - 0.5))
                for depth in DEPTHS[:-1]:
                    add(depth, 1.0, "clean", full - 0.08 * (1 - depth) + 0.02 * (encoder == "charlie"))
                for condition in PERTURBED_CONDITIONS:
                    severity = int(condition[-1])
                    add(1.0, 1.0, condition, full - fragility * severity, calibration_error=fit_ece + 0.02)
                if dataset in SHIFT:
                    add(1.0, 1.0, "shift", full - 3 * fragility, eval_dataset=SHIFT[dataset])
                if dataset == "derm":  # a corruption suite's conditions (section suites; never in the CRS)
                    for corruption in ("speckle_noise", "characters"):
                        for severity in SEVERITIES:
                            add(1.0, 1.0, f"medmnistc-derm.{corruption}-s{severity}", full - 2 * fragility * severity)
    return pd.DataFrame(rows)


def bootstrap_table(panel: str) -> pd.DataFrame:
    """A stand-in for the bootstrap analysis' per-encoder table (probabilities sum as they must)."""
    p_first = {"bravo": 0.7, "alpha": 0.2, "charlie": 0.1, "delta": 0.0, "echo": 0.0}
    p_top3 = {"bravo": 1.0, "alpha": 0.8, "charlie": 0.9, "delta": 0.3, "echo": 0.0}
    crs = {"alpha": 0.55, "bravo": 0.9, "charlie": 0.6, "delta": 0.4, "echo": 0.05}
    return pd.DataFrame(
        [
            {
                "panel": panel,
                "encoder_id": e,
                "crs": crs[e],
                "crs_lo": crs[e] - 0.05,
                "crs_hi": crs[e] + 0.05,
                "p_rank1": p_first[e],
                "p_top3": p_top3[e],
            }
            for e in PROFILES
        ]
    )


def reliability_table() -> pd.DataFrame:
    rows = []
    for encoder in PROFILES:
        for dataset in DATASETS:
            for method, bend in (("uncalibrated", 0.25), ("temperature", 0.05)):
                for b in range(5):
                    confidence = 0.1 + 0.2 * b
                    rows.append(
                        {
                            "encoder_id": encoder,
                            "dataset_id": dataset,
                            "condition": "clean",
                            "method": method,
                            "bin": b,
                            "confidence": confidence,
                            "accuracy": confidence * (1 - bend),
                            "count": 10,
                        }
                    )
    return pd.DataFrame(rows)


def e2_cells() -> pd.DataFrame:
    rows = []
    for encoder, (_, ece, _, _) in PROFILES.items():
        for dataset in DATASETS:
            for method, factor in (("temperature", 0.5), ("isotonic", 0.4)):
                rows.append(
                    {
                        "encoder_id": encoder,
                        "dataset_id": dataset,
                        "eval_dataset_id": dataset,
                        "kind": "clean",
                        "condition": "clean",
                        "method": method,
                        "ece_before": ece,
                        "ece_after": ece * factor,
                    }
                )
    return pd.DataFrame(rows)


def beyond_rows(wh: Warehouse) -> None:
    """Hand-made rows of subgroup_gaps and operating_points (the tables their analyses fill)."""
    for i, encoder in enumerate(PROFILES):
        for seed in SEEDS:
            for key, (worst, gap) in {"sex": (0.8 - 0.02 * i, 0.05 + 0.01 * i), "age": (0.7, 0.1)}.items():
                wh.con.execute(
                    "insert into subgroup_gaps (run_id, encoder_id, dataset_id, eval_dataset_id, condition, key, "
                    "metric, n_groups, worst_group, worst, best, gap, gap_lo, gap_hi, replicates) "
                    "values (?, ?, 'derm', 'derm', 'clean', ?, 'auroc', 2, 'f', ?, ?, ?, ?, ?, 100)",
                    [f"r-{encoder}-{seed}", encoder, key, worst, worst + gap, gap, gap / 2, gap * 2],
                )
            for condition, rule in (("clean", "argmax"), ("clean", "youden_ovr"), ("gaussian_blur-s1", "argmax")):
                wh.con.execute(
                    "insert into operating_points (run_id, encoder_id, dataset_id, eval_dataset_id, condition, "
                    "rule, label_idx, label, sensitivity, specificity, balanced_accuracy, ppv, npv, "
                    "optimal_balanced_accuracy, transfer_gap) "
                    "values (?, ?, 'derm', 'derm', ?, ?, 0, 'a', 0.8, 0.7, 0.75, 0.6, 0.9, 0.8, 0.05)",
                    [f"r-{encoder}-{seed}-{condition}", encoder, condition, rule],
                )


def screen_tables() -> AnalysisResult:
    """Stored pre-screen tables: two estimators' scores per encoder and dataset at full depth, and the
    grid's AUROC under a few image draws (replicate 0: every image once)."""
    from crsbench.analyses.screening.screen import best_depths, ranked

    rng = np.random.default_rng(5)
    scores = pd.DataFrame(
        [
            {"dataset_id": d, "encoder_id": e, "depth": 1.0, "n_train": 40, "pretrained": e not in RANDOM_INIT,
             "estimator": est, "score": float(rng.normal())}
            for d in DATASETS for e in PROFILES for est in ("knn_loo", "logme")
        ]
    )  # fmt: skip
    scores = ranked(scores, "knn_loo", 2)
    replicates = pd.DataFrame(
        [
            {"dataset_id": d, "encoder_id": e, "depth": 1.0, "replicate": r, "auroc": float(rng.uniform(0.6, 0.9))}
            for d in DATASETS for e in PROFILES for r in range(6)
        ]
    )  # fmt: skip
    return AnalysisResult({"screen_scores": scores, "screen_replicates": replicates}, summary=best_depths(scores))


def retrieval_tables() -> AnalysisResult:
    """Stored retrieval scores for the report: mAP@R and precision@5 per encoder and dataset at full depth,
    clean and under two corruptions (the analysis itself is tested on feature sets in
    tests/analyses/test_retrieval.py)."""
    from crsbench.analyses.retrieval.retrieval import summary

    rng = np.random.default_rng(8)
    rows = [
        {"dataset_id": d, "encoder_id": e, "depth": 1.0, "condition": c, "relevance": rel,
         "primary_relevance": rel in ("same_label", "any_shared"), "metric": m, "value": float(rng.uniform(0.3, 0.9)),
         "ci_low": None, "ci_high": None, "n_queries": 30, "n_gallery": 40, "pretrained": e not in RANDOM_INIT}
        for d, (task, _) in DATASETS.items()
        for rel in (("same_label",) if task == "multiclass" else ("any_shared", "jaccard"))
        for e in PROFILES for c in ("clean", "gaussian_blur-s1", "jpeg-s2") for m in ("map@r", "precision@5")
    ]  # fmt: skip
    scores = pd.DataFrame(rows)
    return AnalysisResult({"retrieval_scores": scores}, summary=summary(scores))


def agreement_tables() -> AnalysisResult:
    """Stored tables of analysis agreement for the report: every pair of PROFILES on derm, and
    the transfer retention of alpha's and bravo's probes (the analysis itself is tested on real
    feature sets in tests/analyses/test_agreement.py)."""
    from crsbench.analyses.agreement.agreement import AGREEMENT_COLUMNS, COMPOSITION_COLUMNS, summary_of
    from crsbench.analyses.agreement.transfer import COLUMNS as TRANSFER_COLUMNS

    names = sorted(PROFILES)
    rows, moved = [], []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            value = 0.1 + 0.8 * abs(PROFILES[a][0] - PROFILES[b][0]) / 0.1
            for measure, chance in (("mutual_knn", 10 / 59), ("cka", None)):
                rows.append(["derm", a, b, 1.0, 10, measure, min(value, 1.0), None, None, chance, 60])
    for a in names:
        for b in ("alpha", "bravo"):
            if a != b:
                moved.append(["derm", a, b, 1.0, 0, 36, 0.9, 0.85, 0.85 / 0.9, 0.8, 1.0, 0.05, 0.07, 12])
    pairs = pd.DataFrame(rows, columns=list(AGREEMENT_COLUMNS))
    tables = {
        "encoder_agreement": pairs,
        "neighbour_composition": pd.DataFrame(columns=list(COMPOSITION_COLUMNS)),
        "classifier_transfer": pd.DataFrame(moved, columns=list(TRANSFER_COLUMNS)),
    }
    return AnalysisResult(tables, summary=summary_of(pairs))


UNBOOTSTRAPPED = "delta"  # a member store_bootstrap_intervals leaves without an interval


def store_bootstrap_intervals(wh: Warehouse, panel: str) -> None:
    """Fresh images+seeds rows of bootstrap_intervals for `panel`, as `crsbench analyze bootstrap`
    stores them: each member but UNBOOTSTRAPPED gets CRS, AUROC and CRS-gap intervals (the best two
    tied with the leader, the others separated); Kendall tau cannot vary (n/a, no bounds)."""
    from crsbench.analyses.uncertainty.intervals import COLUMNS, runs_digest, store_intervals

    scored = wh.sql(
        "select encoder_id, crs, auroc from crs_encoder where panel = ? and regime = 'frozen' and in_panel "
        "and encoder_id <> ? order by crs desc",
        [panel, UNBOOTSTRAPPED],
    )
    rows = []
    for place, r in enumerate(scored.itertuples()):
        gap = (-0.02, 0.0) if place == 0 else (-0.01, 0.1) if place == 1 else (0.05 * place, 0.1 + 0.1 * place)
        for metric, estimate, lo, hi in (
            ("crs", r.crs, r.crs - 0.05, r.crs + 0.05),
            ("discrimination", r.auroc, r.auroc - 0.02, r.auroc + 0.02),
            ("crs_gap", sum(gap) / 2, *gap),
        ):
            rows.append([panel, "images+seeds", r.encoder_id, None, metric, estimate, lo, hi, 200, None, None])
    rows.append([panel, "images+seeds", None, None, "spearman_rho", 0.8, 0.4, 1.0, 200, None, None])
    note = "same in every replicate"
    rows.append([panel, "images+seeds", None, None, "kendall_tau", 1.0, None, None, 200, None, note])
    digest = runs_digest(wh, scored["encoder_id"].tolist())
    store_intervals(wh, pd.DataFrame(rows, columns=COLUMNS), panel, "images+seeds", digest)


# GFLOPs per image recorded with each encoder's feature sets; delta's predate cost (not measured).
GFLOPS = {"alpha": 30.0, "bravo": 4.0, "charlie": 1.0, "delta": None, "echo": 0.5}


def record_costs(wh: Warehouse) -> None:
    """A feature set per encoder and dataset, with its cost as extraction records it (features.cost)."""
    for encoder, gflops in GFLOPS.items():
        for dataset in DATASETS:
            attrs: dict = {"image_digest": "d", "dim": 8, "n_images": 60, "complete": True}
            if gflops is not None:
                attrs["cost"] = {
                    "params": int(gflops * 1e6),
                    "flops_per_image": int(gflops * 1e9),
                    "images_per_s": 1000.0 / gflops,
                    "widths": {"d100": 8},
                    "device": "cpu",
                    "dtype": "float32",
                }
            record_attrs(wh, "store.zarr", FeatureSetRef(dataset, encoder), attrs)


def import_sites(wh: Warehouse, panel: str) -> None:
    """Two imported sites (as `crsbench results import` stores them): this warehouse's own complete
    cells at one, the same cells with AUROC nudged at the other, each with 4 replicates; then the
    sites analysis over them."""
    cells = wh.sql(
        "select encoder_id, dataset_id, regime, discrimination, calibration, label_efficiency, robustness, aulc, "
        "n_perturbed, n_shift, complete, pretrained from axes_cell where regime = 'frozen' and complete"
    )
    rng = np.random.default_rng(9)
    for k, site in enumerate(("site-a", "site-b")):
        digest = f"{k:064x}"
        wh.con.execute(
            "insert into site_bundles values (?, ?, ?, null, false, 'test', now()::timestamp, now()::timestamp, '{}')",
            [digest, site, panel],
        )
        ours = cells.assign(discrimination=cells["discrimination"] + k * rng.normal(0, 0.02, len(cells)))
        wh.con.register("_cells", ours.assign(bundle_digest=digest, site=site))
        wh.con.execute("insert into site_cells by name select * from _cells")
        reps = pd.concat(
            [ours.assign(replicate=r, discrimination=ours["discrimination"] + rng.normal(0, 0.01, len(ours)) * (r > 0))
             for r in range(4)]
        )  # fmt: skip
        wh.con.register("_reps", reps.assign(bundle_digest=digest, site=site)[
            ["bundle_digest", "site", "replicate", "encoder_id", "dataset_id", "discrimination", "calibration",
             "label_efficiency", "robustness"]])  # fmt: skip
        wh.con.execute("insert into site_replicates by name select * from _reps")
        wh.con.unregister("_cells")
        wh.con.unregister("_reps")
    run_analysis(wh, "sites", {"panel": panel})


def build_warehouse(
    path: Path,
    panel: str | None = "main",
    analyses: bool = True,
    before_analyses: Callable | None = None,
    intervals: bool = False,
    costs: bool = False,
) -> Path:
    """A warehouse with runs, encoders, datasets, (optionally) a frozen panel and analysis tables.

    `before_analyses(wh)` runs after the panel is frozen and before the analyses (to add encoders);
    `intervals` stores bootstrap intervals for the panel (store_bootstrap_intervals); `costs`
    records a feature set per encoder and dataset with its cost (record_costs)."""
    with Warehouse.open(path) as wh:
        for encoder in PROFILES:
            wh.con.execute(
                "insert into encoders (encoder_id, family, scope, domain, pretrained) "
                "values (?, ?, 'general', 'none', ?)",
                [encoder, encoder.title(), encoder not in RANDOM_INIT],
            )
        for dataset, (task, labels) in {**DATASETS, "cxr_b": DATASETS["cxr"]}.items():
            wh.con.execute(
                "insert into datasets (dataset_id, task, label_names, n_images) values (?, ?, ?, 60)",
                [dataset, task, labels],
            )
        wh.append_runs(_run_rows())
        if panel is not None:
            freeze_panel(wh, panel, ["alpha", "bravo", "charlie", "delta"])
        if before_analyses is not None:
            before_analyses(wh)
        if costs:
            record_costs(wh)
        if analyses:
            run_analysis(wh, "e3")
            run_analysis(wh, "e6", {"reference": "charlie"})
            beyond_rows(wh)
            store_result(wh, "agreement", agreement_tables(), {})
            store_result(wh, "screen", screen_tables(), {})
            store_result(wh, "retrieval", retrieval_tables(), {})
            store_result(
                wh,
                "e2",
                AnalysisResult({"cells": e2_cells(), "reliability": reliability_table()}, summary=e2_cells().head(3)),
                {},
            )
            if panel is not None and intervals:
                store_bootstrap_intervals(wh, panel)
            if panel is not None:
                import_sites(wh, panel)
                store_result(
                    wh,
                    "bootstrap",
                    AnalysisResult({"encoders": bootstrap_table(panel)}, summary=bootstrap_table(panel)),
                    {},
                )
    return path


@pytest.fixture(scope="module")
def full_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, object]:
    root = tmp_path_factory.mktemp("report")
    db = build_warehouse(root / "wh.duckdb", intervals=True, costs=True)
    with Warehouse.open(db, read_only=True) as wh:
        result = build_report(wh, root / "report.html", figures_dir=root / "figures")
    return root / "report.html", root / "figures", result


class _Page(HTMLParser):
    """Collects sections, images and script/link tags of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: dict[str, dict] = {}
        self.images: list[dict] = []
        self.external: list[str] = []
        self._current: str | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "section":
            self._current = a.get("data-section")
            self.sections[self._current] = {"missing": a.get("data-missing") == "true", "images": 0}
        if tag == "img":
            self.images.append(a)
            if self._current:
                self.sections[self._current]["images"] += 1
        if tag in ("script", "link", "iframe", "object") or (tag == "img" and not a.get("src", "").startswith("data:")):
            self.external.append(tag)


def _parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    return page


def test_every_section_has_data_and_figures_decode(full_report):
    out, figures_dir, result = full_report
    page = _parse(out.read_text(encoding="utf-8"))
    assert list(page.sections) == list(SECTION_IDS)
    assert {k: v["missing"] for k, v in page.sections.items()} == {k: False for k in SECTION_IDS}
    assert result.sections == {k: "ok" for k in SECTION_IDS}
    for section_id in (
        "profiles",
        "reordering",
        "bootstrap",
        "cost",
        "recalibration",
        "depth",
        "label-efficiency",
        "subgroups",
        "operating-points",
        "agreement",
    ):
        assert page.sections[section_id]["images"] >= 1, section_id
    assert page.external == []
    for img in page.images:
        png = base64.b64decode(img["src"].split(",", 1)[1])
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert (figures_dir / f"{img['data-figure']}.png").read_bytes() == png
    # one PNG per embedded figure, nothing else
    assert sorted(p.stem for p in figures_dir.glob("*.png")) == sorted(i["data-figure"] for i in page.images)


def test_leaderboard_matches_crs_view_and_marks_random_init(full_report, tmp_path):
    out, _, result = full_report
    html = out.read_text(encoding="utf-8")
    assert result.random_init == ["echo"]
    # the banner names the random-init encoder; every row of it carries the badge
    banner = re.search(r'<div class="banner".*?</div>', html, re.S).group(0)
    assert "echo" in banner and "random-init" in banner
    board = re.search(r'id="leaderboard".*?</table>', html, re.S).group(0)
    rows = re.findall(r"<tr class=\"([^\"]*)\">(.*?)</tr>", board, re.S)
    names = [re.sub(r"<span.*", "", re.findall(r'<td class="text">(.*?)</td>', r)[0]) for _, r in rows]
    # ordered by CRS, as the view says; 'bravo' (calibrated, robust) beats 'alpha' (best AUROC)
    db = out.parent / "wh.duckdb"
    with Warehouse.open(db, read_only=True) as wh:
        expected = wh.sql(
            "select encoder_id from crs_encoder where panel = 'main' and regime = 'frozen' order by crs desc"
        )["encoder_id"].tolist()
        aurocs = wh.sql("select encoder_id from axes_encoder order by discrimination desc")["encoder_id"].tolist()
    assert names == expected
    assert aurocs[0] == "alpha" and names[0] == "bravo"
    for css, row in rows:
        assert ("badge-random" in row) == ("echo" in row) == (css == "random-init")


def test_missing_data_names_the_command(tmp_path):
    db = tmp_path / "empty.duckdb"
    Warehouse.open(db).__enter__().close()
    with Warehouse.open(db, read_only=True) as wh:
        result = build_report(wh, tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    page = _parse(html)
    assert page.images == []
    # The overview and the reporting card always render (the card names each item's command).
    assert [k for k, v in page.sections.items() if v["missing"]] == [
        s for s in SECTION_IDS if s not in ("overview", "card")
    ]
    assert result.sections["bootstrap"] == "crsbench analyze bootstrap"
    assert result.sections["leaderboard"].startswith("crsbench demo")
    assert html.count('class="missing"') == len(SECTION_IDS) - 2
    assert "Run <code>crsbench analyze e2</code>" in html


def test_runs_without_panel_or_analyses_point_to_freeze_and_analyze(tmp_path):
    db = build_warehouse(tmp_path / "wh.duckdb", panel=None, analyses=False)
    with Warehouse.open(db, read_only=True) as wh:
        result = build_report(wh, tmp_path / "r.html")
    assert result.panel is None
    for section_id in ("leaderboard", "profiles", "reordering"):
        assert result.sections[section_id] == "crsbench panel freeze NAME --encoders a,b,c"
    assert result.sections["bootstrap"] == "crsbench analyze bootstrap"
    assert result.sections["recalibration"] == "crsbench analyze e2"
    assert result.sections["agreement"] == "crsbench analyze agreement"
    # curves still come straight from metrics_seed, with a pointer to the analysis
    assert result.sections["depth"] == "ok" and result.sections["label-efficiency"] == "ok"
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "crsbench analyze e3" in html and "crsbench analyze e6" in html


def test_unknown_panel_is_a_user_error(tmp_path):
    db = build_warehouse(tmp_path / "wh.duckdb", analyses=False)
    with Warehouse.open(db, read_only=True) as wh, pytest.raises(CrsbenchError, match="panel 'nope' not found"):
        build_report(wh, tmp_path / "r.html", panel="nope")
    assert not (tmp_path / "r.html").exists()


def test_footer_prints_the_provenance_of_every_batch(full_report):
    import numpy
    import torch

    out, _, _ = full_report
    footer = re.search(r'<footer id="provenance">.*?</footer>', out.read_text(encoding="utf-8"), re.S).group(0)
    cells = re.findall(r"<td>(.*?)</td>", footer)
    # feature sets (record_costs, written before provenance was recorded: blank cells) sort first
    assert cells[0] == "feature set" and "probe batch" in cells
    assert numpy.__version__ in cells and torch.backends.cpu.get_cpu_capability() in cells and "cpu" in cells


def _visible_text(html: str) -> str:
    """The page's text as a reader sees it: no style sheet, no tags or attributes, entities decoded
    once, runs of white space as one space."""
    from html import unescape

    body = re.sub(r"<style>.*?</style>", " ", html, flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", body)).split())


def test_every_entity_is_escaped_once(full_report):
    html = full_report[0].read_text(encoding="utf-8")
    # an entity escaped twice reads as '&ndash;' on the page
    assert re.findall(r"&amp;#?\w+;", html) == []
    text = _visible_text(html)
    assert re.findall(r"&#?\w+;", text) == []
    # Kendall tau could not vary: its missing bounds show as dashes, not as entity names
    assert re.search(r"kendall_tau 1\.000 \[\u2013, \u2013\]", text)


def test_the_report_opens_with_the_verdict_then_the_board_then_the_card(full_report):
    from crsbench.reads import leaderboard as read_models

    out, _, _ = full_report
    html = out.read_text(encoding="utf-8")
    assert SECTION_IDS[:2] == ("leaderboard", "card")
    assert [s for s in re.findall(r'<section id="([^"]+)"', html)][:2] == ["leaderboard", "card"]
    board = re.search(r'id="leaderboard".*?</section>', html, re.S).group(0)
    first = re.search(r"<h2>[^<]*</h2>\s*(<p[^>]*>.*?</p>)", board, re.S).group(1)
    assert 'class="verdict"' in first
    with Warehouse.open(out.parent / "wh.duckdb", read_only=True) as wh:
        shown = read_models.with_intervals(
            wh, "main", wh.sql("select * from crs_encoder where panel = 'main' and regime = 'frozen'"), "images+seeds"
        )
        tied = wh.sql("select encoder_id from crs_encoder_ci where panel = 'main' and tier = '=1' order by crs desc")
    expected = read_models.verdict_line("main", shown, "images+seeds")
    assert _visible_text(first).strip() == expected
    leader, *others = tied["encoder_id"].tolist()
    assert expected.startswith(f"{leader} leads on CRS (panel main); tied with it within the 95 % intervals: ")
    assert others and all(e in expected for e in others)


def test_encoders_without_an_interval_say_why_under_the_table(full_report):
    html = full_report[0].read_text(encoding="utf-8")
    board = re.search(r'id="leaderboard".*?</section>', html, re.S).group(0)
    table, notes = board.split("</table>", 1)
    rows = re.findall(r"<tr class=[^>]*>(.*?)</tr>", table)
    cells = {re.search(r'<td class="text">([^<]*)', r).group(1): _visible_text(r) for r in rows}
    assert "not bootstrapped" in cells[UNBOOTSTRAPPED] and "no interval" in cells["echo"]
    assert "<code>" not in table  # no command squeezed into a cell
    text = _visible_text(notes)
    assert f"Not bootstrapped: {UNBOOTSTRAPPED}. Run crsbench analyze bootstrap --panel main" in text
    assert "No interval for echo: the bootstrap resamples the members of panel main only" in text


# The page's sections as the report rendered them before sections declared their order (read off the
# headings of this file's full report at that commit): the declared orders must keep it.
TODAYS_PAGE = [
    ("leaderboard", "CRS leaderboard next to AUROC"),
    ("card", "Reporting card"),
    ("overview", "What this warehouse holds"),
    ("profiles", "Reliability profiles: the four normalised axes"),
    ("reordering", "From AUROC rank to CRS rank"),
    ("datasets", "Per-dataset results"),
    ("bootstrap", "Bootstrap: how sure is the ranking?"),
    ("cost", "Reliability vs cost"),
    ("screen", "Can the pre-screen be trusted here?"),
    ("agreement", "Representation agreement: will the next encoder agree?"),
    ("recalibration", "Calibration before and after recalibration (E2)"),
    ("depth", "Representation depth (E3)"),
    ("label-efficiency", "Label efficiency and crossover (E6)"),
    ("subgroups", "Subgroup performance (worst group and gap per metadata key)"),
    ("operating-points", "Operating points chosen on the calibration split"),
    ("zeroshot", "Zero-shot, prompting and probing (image-text and generative models)"),
    ("retrieval", "Similar-case retrieval: does the encoder find comparable past cases?"),
    ("suites", "Modality-specific corruptions (MedMNIST-C)"),
    ("sites", "Does the ranking hold at another site?"),
]
_HEADED = re.compile(r'<section id="[^"]*" data-section="([^"]+)"[^>]*><h2>([^<]*)</h2>')


def test_the_declared_section_orders_keep_todays_page(full_report):
    out, _, _ = full_report
    assert _HEADED.findall(out.read_text(encoding="utf-8")) == TODAYS_PAGE
    assert list(SECTION_IDS) == [sid for sid, _ in TODAYS_PAGE]


def test_a_section_from_a_module_outside_the_source_tree_lands_where_it_declares(tmp_path, monkeypatch):
    import importlib
    import sys

    from crsbench.reads.report_data import gather
    from crsbench.report import render_html, sections
    from crsbench.report.html import FigureSink

    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "extra_report_section.py").write_text(
        "from crsbench.report.sections import section\n\n"
        '@section("extra", "An extra section", order=25)\n'
        "def extra(data, sink):\n"
        '    return "<p>extra body</p>"\n',
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(plugin))
    monkeypatch.setattr(sections, "SECTIONS", list(sections.SECTIONS))  # the registration is undone after
    monkeypatch.delitem(sys.modules, "extra_report_section", raising=False)
    importlib.import_module("extra_report_section")
    monkeypatch.delitem(sys.modules, "extra_report_section")
    db = tmp_path / "empty.duckdb"
    Warehouse.open(db).__enter__().close()
    with Warehouse.open(db, read_only=True) as wh:
        html, states = render_html(gather(wh, None), FigureSink(110))
    ids = [sid for sid, _ in TODAYS_PAGE]
    want = [*ids[:2], "extra", *ids[2:]]  # order 25: after the card (20), before the overview (30)
    assert [sid for sid, _ in _HEADED.findall(html)] == want
    assert list(states) == want and states["extra"] == "ok" and "<p>extra body</p>" in html
    with pytest.raises(ValueError, match="clashes with 'extra'"):
        sections.section("another", "Another", order=25)(lambda data, sink: "")


def test_the_cost_section_draws_the_pareto_front_and_names_the_unmeasured(full_report):
    out, figures_dir, _ = full_report
    html = out.read_text(encoding="utf-8")
    body = html.split('data-section="cost"', 1)[1].split("</section>", 1)[0]
    assert (figures_dir / "reliability_vs_cost.png").exists()
    assert "Not measured (extracted before cost was): delta." in body
    with Warehouse.open(out.parent / "wh.duckdb", read_only=True) as wh:
        crs = wh.sql("select encoder_id, crs from crs_encoder where panel = 'main'").set_index("encoder_id")["crs"]
    # independent front: cheapest first, keep an encoder when its CRS beats every cheaper one's
    measured = sorted((g, e) for e, g in GFLOPS.items() if g is not None and e in crs and pd.notna(crs[e]))
    front, best = set(), -np.inf
    for _, encoder in measured:
        if crs[encoder] > best:
            front.add(encoder)
            best = crs[encoder]
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in re.findall(r"<tr[^>]*>(.*?)</tr>", body, flags=re.S)]
    on_front = {re.sub(r"<.*", "", r[0]): r[5] for r in rows if r}
    assert {e for e, on in on_front.items() if on == "yes"} == front
    assert on_front["delta"] == "not measured"


def test_verdict_lists_are_escaped_and_missing_values_show_as_a_dash():
    assert bullet_list(["a < b", "c & d"]) == "<ul><li>a &lt; b</li><li>c &amp; d</li></ul>"
    assert bullet_list([]) == "<ul></ul>"
    frame = pd.DataFrame({"suite": ["x<y", None], "value": [0.5, np.nan], "n": pd.array([3, None], dtype="Int64")})
    table = nullable_table(frame)
    assert "x&lt;y" in table and "0.5" in table and "3" in table
    assert table.count("&ndash;") == 3  # the None, the NaN and the NA
