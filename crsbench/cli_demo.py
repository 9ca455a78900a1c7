"""CLI: `crsbench demo` — the whole chain on the embedded suite, with no downloads.

suite generation -> ingest (4 datasets, CheXpert -> MIMIC-CXR shift pair) -> one-pass
extraction (the tiny random-init encoders) -> probe grid -> panel freeze -> CRS
leaderboard next to the AUROC ranking -> paired-seed bootstrap -> E1-E4, E6 -> HTML report.
Every step reuses what an earlier run left (datasets, complete feature sets, done
fits, the frozen panel), so a rerun is quick and an interrupted run resumes.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from crsbench.cli import app
from crsbench.output import console, emit, progress

# (adapter, dataset name); the last two form the demo's shift pair.
DEMO_DATASETS: tuple[tuple[str, str], ...] = (
    ("isic2019", "isic2019"),
    ("aptos2019", "aptos2019"),
    ("mimic-cxr", "mimic-cxr"),
    ("chexpert", "chexpert"),
)
DEMO_SHIFT = ("chexpert", "mimic-cxr")
DEMO_PANEL = "demo"


def _step(title: str) -> float:
    console.print(f"\n[bold cyan]== {title}[/]")
    return time.perf_counter()


def _ingest_suite(db: Path, suite: Path, scale: float, image_size: int) -> list[str]:
    from crsbench.ingest import ingest, make_suite
    from crsbench.warehouse.connection import Warehouse
    from crsbench.warehouse.datasets import declare_shift, list_datasets, load_dataset, shift_targets

    with Warehouse.open(db) as wh:
        present = set(list_datasets(wh))
    missing = [(adapter, name) for adapter, name in DEMO_DATASETS if name not in present]
    if missing:
        with progress() as bar:
            paths = make_suite(suite, scale=scale, image_size=image_size, progress=bar)
            datasets = [ingest(adapter, paths[adapter], name, progress=bar) for adapter, name in missing]
        with Warehouse.open(db) as wh:
            for ds in datasets:
                load_dataset(wh, ds)
    with Warehouse.open(db) as wh:
        source, target = DEMO_SHIFT
        if target not in shift_targets(wh, source):
            declare_shift(wh, source, target)
        summary = wh.sql("select dataset_id, task, n_images from datasets order by dataset_id")
    for row in summary.itertuples():
        console.print(f"  {row.dataset_id}: {row.task}, {row.n_images} images")
    console.print(f"  shift pair: {DEMO_SHIFT[0]} -> {DEMO_SHIFT[1]}")
    return [name for _, name in DEMO_DATASETS]


@app.command("demo")
def demo(
    out: Annotated[Path, typer.Option("--out", help="Folder for the suite, warehouse, feature store and report.")]
    = Path("demo-out"),
    scale: Annotated[float, typer.Option(help="Suite size factor (1.0 is about 200 images per dataset).")] = 1.0,
    image_size: Annotated[int, typer.Option("--image-size", help="Side of the generated images in pixels.")] = 128,
    encoder: Annotated[list[str], typer.Option("--encoder", "-e", help="Encoders to run (repeatable); "
                                                "default every tiny random-init entry.")] = [],
    replicates: Annotated[int, typer.Option(help="Bootstrap replicates (the paper uses 10,000).")] = 10_000,
    report: Annotated[bool, typer.Option("--report/--no-report", help="Also write OUT/report.html.")] = True,
) -> None:
    """Run the whole chain on the embedded toy suite (no downloads) and print the CRS leaderboard."""
    from crsbench.cli_analyses import analyze
    from crsbench.cli_features import extract_command
    from crsbench.cli_panels import leaderboard
    from crsbench.cli_probes import probe_command
    from crsbench.features.registry import tiny_encoder_ids
    from crsbench.warehouse.connection import Warehouse
    from crsbench.warehouse.panels import freeze_panel, list_panels

    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    db = out / "crsbench.duckdb"
    encoders = encoder or tiny_encoder_ids()
    console.print(f"[bold]crsbench demo[/] -> {out}/ (warehouse {db.name}); encoders: {', '.join(encoders)}")
    console.print("[yellow]All encoders here are random-init (pretrained = false): the numbers show the "
                  "machinery, not real encoder quality.[/]")

    _step("1/6 generate the embedded suite and ingest it")
    datasets = _ingest_suite(db, out / "suite", scale, image_size)

    _step("2/6 extract features once: 4 depths x 16 conditions per encoder and dataset")
    extract_command(encoder=encoders, dataset=datasets, store=None, db=db, device="cpu", batch_size=64,
                    force=False, weights=None, dtype="float16", compute_dtype="float32", chunk_rows=256)

    _step("3/6 probe grid: logreg x 4 depths, mlp and knn at full depth, 5 fractions x 5 seeds")
    probe_command(encoder=encoders, dataset=[], probe=[], depth=[], fraction=[], seed=[], scheduler=None,
                  batch_size=32, store=None, db=db)
    with Warehouse.open(db) as wh:
        wh.compact_parts()  # runs in the file keep the analyses' queries fast

    _step(f"4/6 freeze the reference panel '{DEMO_PANEL}' and rank by CRS")
    with Warehouse.open(db) as wh:
        if DEMO_PANEL not in set(list_panels(wh)["panel"]):
            freeze_panel(wh, DEMO_PANEL, encoders)
            console.print(f"  froze panel {DEMO_PANEL}: {', '.join(encoders)}")
        else:
            console.print(f"  panel {DEMO_PANEL} already frozen (frozen panels never move)")
    leaderboard(panel=DEMO_PANEL, db=db)

    _step(f"5/6 paired-seed bootstrap ({replicates:,} replicates): the leading tier")
    analyze(name="bootstrap", panel=DEMO_PANEL, reference=None,
            settings=[f"replicates={replicates}"], db=db)

    report_path = out / "report.html"
    if report:
        _step("6/6 analyses E1/E2/E3/E4/E6 and the HTML report")
        for name in ("e1", "e2", "e3", "e4", "e6"):
            analyze(name=name, panel=None, reference=None, settings=[], db=db)
        from crsbench.cli_report import report as report_command

        report_command(panel=DEMO_PANEL, out=report_path, figures=None, db=db)
    with Warehouse.open(db) as wh:
        wh.compact_parts()  # the file alone now answers every view (copy it, open it in any DuckDB)
    elapsed = time.perf_counter() - started
    emit({"out": str(out), "db": str(db), "report": str(report_path) if report else None,
          "seconds": round(elapsed, 1)},
         f"\n[bold green]demo finished in {elapsed:.0f} s.[/] Query it with: "
         f"crsbench sql --db {db} \"select * from crs_encoder\"  (or: duckdb {db})")
