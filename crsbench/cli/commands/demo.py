"""CLI: `crsbench demo` — the whole chain on the embedded suite, with no downloads.

suite generation -> ingest (4 datasets, CheXpert -> MIMIC-CXR shift pair) -> one-pass
extraction (the tiny random-init encoders) -> probe grid -> panel freeze -> CRS
leaderboard next to the AUROC ranking -> paired-seed bootstrap -> E1-E4, E6 and the other
analyses -> zero-shot (the image-text encoder, outside the panel) -> HTML report.
Every step reuses what an earlier run left (datasets, complete feature sets, done
fits, the frozen panel), so a rerun is quick and an interrupted run resumes. Each step is
one `crsbench.Bench` call (docs/API.md shows the same chain as a script) and its rendering.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from crsbench.bench import Bench, ExtractConfig, ProbeConfig
from crsbench.cli.app import app
from crsbench.cli.output import console, emit, print_frame, progress
from crsbench.core import DEPTHS

DEMO_PANEL = "demo"
DEMO_ANALYSES = (
    "e1",
    "e2",
    "e3",
    "e4",
    "e6",
    "subgroups",
    "operating_points",
    "agreement",
    "partition",
    "resplit",
    "shortcuts",
)
DEMO_PARAMS: dict[str, dict[str, int]] = {"resplit": {"repeats": 5}}  # the least that shows a selection spread
DEMO_PROBE_BATCH = 32


class _Steps:
    """The demo's steps: a heading each, and the wall time of each for the closing summary."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.title: str | None = None
        self.started = time.perf_counter()

    def start(self, title: str) -> str:
        """Open the next step, numbered in order (which steps run depends on the options)."""
        self.stop()
        title = f"{len(self.seconds) + 1}. {title}"
        console.print(f"\n[bold cyan]== {title}[/]")
        self.title, self.started = title, time.perf_counter()
        return title

    def stop(self) -> None:
        if self.title is not None:
            self.seconds[self.title] = time.perf_counter() - self.started
            self.title = None

    def summary(self) -> str:
        self.stop()
        width = max(len(t) for t in self.seconds)
        return "\n".join(f"  {t:<{width}}  {s:7.1f} s" for t, s in self.seconds.items())


def _zero_shot(bench: Bench, encoders: list[str], datasets: list[str]) -> None:
    """Extract, probe (logreg at full depth, 1 % and 100 % of the labels, seed 0) and classify
    zero-shot; the CRS panel stays the image encoders' (zero-shot runs are grid extras)."""
    bench.extract(encoders, datasets, ExtractConfig())
    only = ProbeConfig(probes=("logreg",), depths=(1.0,), fractions=(0.01, 1.0), seeds=(0,), compact=False)
    bench.probe(encoders, (), only)
    bench.zeroshot(encoders, (), compact=False)  # the demo folds every part in at its end
    view = bench.sql("select * from zeroshot_vs_probe order by encoder_id, dataset_id")
    print_frame(view, title="zero-shot vs logreg probe (random-init: machinery, not quality)", key="zeroshot_vs_probe")


def _freeze_demo_panel(bench: Bench, encoders: list[str]) -> None:
    """Freeze the demo's panel once (a rerun keeps it: frozen panels never move)."""
    from crsbench.core import MIN_PANEL_MEMBERS, small_panel_reason

    if DEMO_PANEL in set(bench.panels()["panel"]):
        console.print(f"  panel {DEMO_PANEL} already frozen (frozen panels never move)")
        return
    small = len(encoders) < MIN_PANEL_MEMBERS  # the user picked so few: a demo still runs
    bench.freeze_panel(DEMO_PANEL, encoders, allow_small=small)
    console.print(f"  froze panel {DEMO_PANEL}: {', '.join(encoders)}")
    if small:
        console.print(f"  warning: {small_panel_reason(len(encoders))}")


def _analyses(bench: Bench) -> None:
    """The demo's analyses, computed at once on every core, then printed in order."""
    from crsbench.analyses.registry import get_analysis
    from crsbench.cli.commands.analyses import render_analysis

    with progress() as bar:
        results = bench.analyze_many([(name, DEMO_PARAMS.get(name, {})) for name in DEMO_ANALYSES], progress=bar)
    for name, result in zip(DEMO_ANALYSES, results, strict=True):
        render_analysis(name, get_analysis(name).description, result)


def _analyses_zero_shot_report(
    bench: Bench, steps: _Steps, image_text: list[str], datasets: list[str], report_path: Path | None
) -> None:
    """The demo's last steps: the analyses and the report (unless `report_path` is None), with
    zero-shot of the `image_text` encoders between them."""
    from crsbench.cli.commands.report import report_and_render
    from crsbench.cli.commands.screen import render_screen

    if report_path is not None:
        steps.start("analyses (E1-E4, E6, subgroups, operating points, agreement, split shift, resplit, shortcuts)")
        _analyses(bench)
        steps.start("pre-screen from the cached features alone, and how far its ranking agrees with the grid's")
        render_screen(bench.screen(), per_dataset=False)
    # After the analyses, so that they describe the panel's encoders only (the image-text encoder's
    # partial grid would add rows to most of them); before the report, which shows it.
    if image_text:
        steps.start(f"zero-shot: {', '.join(image_text)} (outside the panel) vs its logreg probe at 1 % and 100 %")
        _zero_shot(bench, image_text, datasets)
    bench.compact()  # the file alone now answers every view (copy it, open it in any DuckDB)
    if report_path is not None:
        steps.start("the report")
        report_and_render(bench, report_path, DEMO_PANEL, None, force=True)  # the demo's own folder


def _print_header(out: Path, db: Path, encoders: list[str]) -> None:
    from crsbench.core.backends import backends_line
    from crsbench.core.numerics import canonical

    console.print(f"[bold]crsbench demo[/] -> {out}/ (warehouse {db.name}); encoders: {', '.join(encoders)}")
    console.print(
        "[yellow]All encoders here are random-init (pretrained = false): the numbers show the "
        "machinery, not real encoder quality.[/]"
    )
    console.print(f"numerics: {'canonical' if canonical() else 'native'} ({escape(backends_line())})")


def _finish(out: Path, db: Path, report_path: Path | None, elapsed: float, steps: _Steps) -> None:
    timings = steps.summary()
    console.print("\n[bold]time per step[/]\n" + escape(timings))
    emit(
        {
            "out": str(out),
            "db": str(db),
            "report": str(report_path) if report_path else None,
            "seconds": round(elapsed, 1),
            "step_seconds": {t: round(s, 1) for t, s in steps.seconds.items()},
        },
        f"\n[bold green]demo finished in {elapsed:.0f} s.[/] Query it with: "
        f'crsbench sql --db {db} "select * from crs_encoder"  (or: duckdb {db})',
    )


OutOption = Annotated[Path, typer.Option("--out", help="Folder for the suite, warehouse, feature store and report.")]
EncoderOption = Annotated[
    list[str],
    typer.Option("--encoder", "-e", help="Encoders to run (repeatable); default every tiny random-init entry."),
]


@app.command("demo")
def demo(
    out: OutOption = Path("demo-out"),
    scale: Annotated[float, typer.Option(help="Suite size factor (1.0 is about 200 images per dataset).")] = 1.0,
    image_size: Annotated[int, typer.Option("--image-size", help="Side of the generated images in pixels.")] = 128,
    encoder: EncoderOption = [],
    replicates: Annotated[int, typer.Option(help="Bootstrap replicates (test images + seeds; at least 100).")] = 1_000,
    report: Annotated[bool, typer.Option("--report/--no-report", help="Also write OUT/report.html.")] = True,
) -> None:
    """Run the whole chain on the embedded toy suite (no downloads) and print the CRS leaderboard."""
    from crsbench.cli.commands.analyses import analyze_and_render
    from crsbench.cli.commands.features import render_extract
    from crsbench.cli.commands.panels import render_leaderboard
    from crsbench.cli.commands.probes import render_probe

    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    db = out / "crsbench.duckdb"
    bench = Bench(db)
    plan = bench.demo_plan(encoder)
    encoders, datasets = list(plan.encoders), list(plan.datasets)
    _print_header(out, db, encoders)

    steps = _Steps()
    step = steps.start("generate the embedded suite and ingest it")
    with progress(step) as bar:
        summary = bench.ingest_suite(out / "suite", scale, image_size, progress=bar)
    console.print("\n".join(f"  {r.dataset_id}: {r.task}, {r.n_images} images" for r in summary.itertuples()))
    console.print(f"  shift pair: {plan.shift[0]} -> {plan.shift[1]}")

    step = steps.start(
        f"extract features once: {len(DEPTHS)} depths x {plan.n_conditions} conditions per encoder and dataset"
    )
    with progress(step) as bar:
        extracted = bench.extract(encoders, datasets, ExtractConfig(), progress=bar)
    render_extract(bench.store, extracted)

    step = steps.start("probe grid: logreg x 4 depths, mlp and knn at full depth, 5 fractions x 5 seeds")
    with progress(step) as bar:
        grid = bench.probe(encoders, (), ProbeConfig(batch_size=DEMO_PROBE_BATCH), progress=bar)
    render_probe(bench, grid)
    bench.compact()  # runs in the file keep the analyses' queries fast

    steps.start(f"freeze the reference panel '{DEMO_PANEL}' and rank by CRS")
    _freeze_demo_panel(bench, encoders)
    render_leaderboard(bench.leaderboard(DEMO_PANEL))

    steps.start(f"bootstrap over test images and seeds ({replicates:,} replicates): intervals and ties")
    analyze_and_render(bench, "bootstrap", {"panel": DEMO_PANEL, "replicates": replicates})
    render_leaderboard(bench.leaderboard(DEMO_PANEL))  # now with intervals and ties

    report_path = out / "report.html"
    _analyses_zero_shot_report(bench, steps, list(plan.image_text), datasets, report_path if report else None)
    _finish(out, db, report_path if report else None, time.perf_counter() - started, steps)
