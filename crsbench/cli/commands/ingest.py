"""CLI: `crsbench make-suite`, `ingest`, `shift`, `datasets`, `adapters` (owned by the ingest stage)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import pandas as pd
import typer
from rich.markup import escape

from crsbench.bench import Bench, IngestConfig
from crsbench.cli.app import DbOption, app
from crsbench.cli.output import emit, print_frame, progress
from crsbench.core import CrsbenchError, default_db_path
from crsbench.ingest import ADAPTERS, make_suite


def _adapter_help() -> str:
    lines = [
        "Adapters (use --option KEY=VALUE for their options; every adapter also takes domain=derm|eye|rad|none "
        "and bins=KEY=E1,E2,... for numeric metadata, age default 0,40,60,80):"
    ]
    for entry in ADAPTERS.values():
        opts = ", ".join(f"{k}={'(required)' if o.default is None else o.default}" for k, o in entry.options.items())
        lines.append(f"  {entry.name}: {entry.description}" + (f" (options: {opts})" if opts else ""))
    return "\n\n".join(lines)


@app.command(
    "make-suite",
    help=(
        "Generate the embedded demo suite: toy ISIC 2019, APTOS 2019, CheXpert and MIMIC-CXR-JPG stand-ins "
        "in their real published layouts, ready for `crsbench ingest`."
    ),
)
def make_suite_command(
    out_dir: Annotated[Path, typer.Argument(help="Folder to write the four toy datasets into.")],
    scale: Annotated[
        float, typer.Option(help="Multiply the number of images per class (floors keep every class in every split).")
    ] = 1.0,
    image_size: Annotated[int, typer.Option(help="Side of the square images, in pixels.")] = 128,
    seed: Annotated[int, typer.Option(help="Random seed; the same arguments give byte-identical files.")] = 0,
) -> None:
    with progress() as bar:
        paths = make_suite(out_dir, scale=scale, image_size=image_size, seed=seed, progress=bar)
    lines = [f"wrote the demo suite to {out_dir}:"]
    lines += [f"  crsbench ingest {name} {path} --name {name}" for name, path in paths.items()]
    emit({"out_dir": str(out_dir), "datasets": {k: str(v) for k, v in paths.items()}}, "\n".join(lines))


def _parse_options(pairs: list[str]) -> dict[str, str]:
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise CrsbenchError(f"--option expects KEY=VALUE, got {pair!r}")
        options[key.strip()] = value.strip()
    return options


ReplaceOption = Annotated[
    bool,
    typer.Option(
        "--replace",
        help="Overwrite a dataset of the same name; runs and "
        "feature sets of other data are retired (kept in retired_* archives), after asking.",
    ),
]
SkipBadOption = Annotated[
    bool,
    typer.Option(
        "--skip-bad", help="Record bad rows in ingest_errors and ingest the rest, instead of stopping at the first."
    ),
]
ShiftTargetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--shift-target",
        help="Declare a shift pair NAME -> TARGET (an ingested dataset with the same labels). Repeatable.",
    ),
]
ShiftSourceOption = Annotated[
    list[str] | None, typer.Option("--shift-source", help="Declare a shift pair SOURCE -> NAME. Repeatable.")
]
OptionOption = Annotated[
    list[str] | None,
    typer.Option("--option", "-o", help="Adapter option KEY=VALUE, e.g. uncertainty=ones. Repeatable."),
]
UnlabeledOption = Annotated[
    bool,
    typer.Option(
        "--unlabeled",
        help="Ingest images without labels (adapters folder and manifest): enough for extract and "
        "agreement (crsbench successor), not for probes.",
    ),
]

SourceOption = Annotated[
    str | None,
    typer.Option(
        "--source",
        help="What the data is, a known dataset name such as chexpert or mimic-cxr (an unknown one is kept, with a warning), "
        "matched against encoders' declared pretraining data; default: the adapter's own dataset, none for "
        "folder and manifest (unknown).",
    ),
]


@app.command("ingest", epilog=_adapter_help())
def ingest_command(
    adapter: Annotated[str, typer.Argument(help=f"Source layout: {', '.join(ADAPTERS)}.")],
    path: Annotated[Path, typer.Argument(help="The dataset folder (or its label CSV / .npz file).")],
    name: Annotated[str, typer.Option("--name", help="Name of the dataset in the warehouse.")],
    db: DbOption = default_db_path(),
    replace: ReplaceOption = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Retire without asking (with --replace).")] = False,
    skip_bad: SkipBadOption = False,
    shift_target: ShiftTargetOption = None,
    shift_source: ShiftSourceOption = None,
    option: OptionOption = None,
    unlabeled: UnlabeledOption = False,
    source: SourceOption = None,
    suite: Annotated[
        list[str] | None,
        typer.Option(
            "--suite",
            help="Corruption suite to declare on the new grid's full-label fits, e.g. medmnistc-derm (as "
            "'crsbench grid extend --suite' does; the dataset's domain must be the suite's). Repeatable.",
        ),
    ] = None,
) -> None:
    """Ingest a dataset into the warehouse: images (id, path, SHA-256, group), labels, splits, label fractions.

    Everything is validated first and written in one transaction, so a bad input leaves the warehouse unchanged.
    """
    config = IngestConfig(
        replace=replace,
        skip_bad=skip_bad,
        shift_targets=tuple(shift_target or ()),
        shift_sources=tuple(shift_source or ()),
        options=_parse_options(option or []),
        yes=yes,
        unlabeled=unlabeled,
        source=source,
        suites=tuple(suite or ()),
    )
    # Asked only on a terminal; elsewhere retiring needs --yes (the error says so).
    confirm = (lambda text: typer.confirm(f"{text}. Continue?", err=True)) if sys.stdin.isatty() else None
    with progress() as bar:
        ds = Bench(db).ingest(adapter, path, name, config, progress=bar, confirm=confirm)
    counts = ds.images["split"].value_counts()
    split_text = ", ".join(f"{s} {int(counts.get(s, 0))}" for s in ("train", "calib", "test"))
    human = (
        f"ingested {ds.name} ({ds.adapter}, {ds.task.value}, {len(ds.label_names)} labels): "
        f"{ds.n_images} images ({split_text}) into {db}"
    )
    if len(ds.errors):
        human += f"; skipped {len(ds.errors)} bad rows (see table ingest_errors)"
    for target in shift_target or []:
        human += f"; shift {ds.name} -> {target}"
    for source in shift_source or []:
        human += f"; shift {source} -> {ds.name}"
    for name in suite or []:
        human += f"; suite {name} declared on the full-label fits ('crsbench grid show' lists its conditions)"
    emit(
        {
            "dataset": ds.name,
            "adapter": ds.adapter,
            "source": ds.source,
            "task": ds.task.value,
            "n_images": ds.n_images,
            "splits": {k: int(v) for k, v in counts.items()},
            "skipped": len(ds.errors),
            "db": str(db),
            "warnings": ds.warnings,
            "suites": list(suite or []),
        },
        "\n".join([human, *(f"warning: {escape(w)}" for w in ds.warnings)]),
    )


@app.command("shift")
def shift_command(
    source: Annotated[str, typer.Argument(help="Dataset the probes are fitted on (e.g. chexpert).")],
    target: Annotated[str, typer.Argument(help="Dataset they are also evaluated on, unretrained (e.g. mimic-cxr).")],
    db: DbOption = default_db_path(),
) -> None:
    """Declare a distribution-shift pair SOURCE -> TARGET (both ingested, same label names)."""
    Bench(db).declare_shift(source, target)
    emit({"source": source, "target": target}, f"declared shift {source} -> {target}")


@app.command("datasets")
def datasets_command(db: DbOption = default_db_path()) -> None:
    """List the ingested datasets with their task, split sizes and shift targets."""
    frame = Bench(db).datasets()
    print_frame(frame, title=f"datasets in {db}", key="datasets")


@app.command("adapters")
def adapters_command() -> None:
    """List the dataset adapters: options, the dataset each one reads (matched against encoders'
    pretraining data), zero-shot prompts, and the data's licence and citation."""
    frame = pd.DataFrame(
        [
            {
                "adapter": e.name,
                "task": e.task.value if e.task else "declared",
                "domain": e.domain,
                "dataset": e.dataset or "unknown (--source)",
                "options": ", ".join(
                    f"{k}={o.default if o.default is not None else '?'}" for k, o in e.options.items()
                ),
                "layout": e.description,
                "zero-shot prompts": f"{len(e.prompts['templates'])} templates" if e.prompts else "generic",
                "licence": e.licence,
                "citation": e.citation,
            }
            for e in ADAPTERS.values()
        ]
    )
    print_frame(frame, title="dataset adapters", key="adapters")


dataset_app = typer.Typer(help="Manage one ingested dataset.", no_args_is_help=True)
app.add_typer(dataset_app, name="dataset")


@dataset_app.command("relocate")
def relocate_command(
    name: Annotated[str, typer.Argument(help="The ingested dataset whose images moved.")],
    path: Annotated[Path, typer.Argument(help="Its new root folder (or label CSV / .npz file).")],
    db: DbOption = default_db_path(),
) -> None:
    """Point a dataset at the folder its images moved to; every image's SHA-256 is checked first."""
    with progress() as bar:
        checked = Bench(db).relocate(name, path, progress=bar)
    emit(
        {"dataset": name, "root": str(path), "images_checked": checked},
        f"relocated {name} to {path} ({checked} images match their ingested SHA-256)",
    )


@dataset_app.command("metadata")
def metadata_command(
    name: Annotated[str, typer.Argument(help="The ingested dataset.")],
    csv: Annotated[
        Path | None,
        typer.Argument(help="CSV with image_id and one column per key (default: re-read the dataset's source)."),
    ] = None,
    bins: Annotated[
        str, typer.Option("--bins", help="Edges of numeric keys, e.g. 'age=0,40,60,80;bmi=0,25,30' (age default).")
    ] = "",
    db: DbOption = default_db_path(),
) -> None:
    """Attach per-image metadata (age, sex, view, ...) to an ingested dataset for subgroup analyses."""
    counts = Bench(db).attach_metadata(name, csv, bins)
    emit(
        {"dataset": name, "rows": counts},
        f"{name}: metadata stored ({', '.join(f'{k}: {n} images' for k, n in counts.items())})",
    )
