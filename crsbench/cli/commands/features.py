"""CLI: `crsbench extract`, `crsbench encoders`, `crsbench feature-sets` (owned by the features stage)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pandas as pd
import typer

from crsbench.bench import Bench, ExtractConfig, ExtractOptions
from crsbench.cli.app import DbOption, StoreOption, app
from crsbench.cli.output import console, emit, fitted_table, print_frame, progress
from crsbench.core import default_db_path

DEFAULTS = ExtractOptions()  # the extraction defaults live in ExtractOptions alone
# The columns `encoders` shows first when the terminal cannot hold them all.
ENCODER_COLUMNS = ("id", "weights", "text_tower", "family", "scope", "input_size", "pretrained", "loader", "domain")

EncodersFileOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--encoders",
        help="TOML file of [encoder.<id>] tables (repeatable); also $CRSBENCH_ENCODERS "
        "and crsbench.toml beside the warehouse (library models only, never code).",
    ),
]
AllowCodeOption = Annotated[
    bool,
    typer.Option(
        "--allow-code",
        help="Let the --encoders files (and $CRSBENCH_ENCODERS) name Python code: source = "
        "'python', trust_remote_code (also CRSBENCH_ALLOW_CODE=1). Never crsbench.toml's.",
    ),
]


def render_extract(store_url: str, frame: pd.DataFrame) -> None:
    rows = frame.to_dict("records")
    emit(
        {"store": store_url, "feature_sets": frame},
        f"feature store {store_url}:\n"
        + "\n".join(
            f"  {r['encoder']} x {r['dataset']}: {r['status']}"
            + (f" in {r['seconds']:.1f} s" if r["status"].startswith(("extracted", "screened")) else "")
            + (f" (weights: {r['weights']})" if r.get("weights") and r["status"].startswith("extracted") else "")
            + (f"; {r['retired_fits']} probe fits of the old weights retired" if r.get("retired_fits") else "")
            for r in rows
        ),
    )


EncoderOption = Annotated[
    list[str],
    typer.Option(
        "--encoder",
        "-e",
        help="Encoder id (see 'crsbench encoders'), "
        "or timm:<name>, hf:<repo or folder>, open_clip:<arch>; "
        "repeatable; 'all-tiny' for every random-init entry.",
    ),
]
ForceOption = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Redo feature sets that are already complete; one made with other weights is replaced "
        "and the probe fits trained on it are retired. New weights for an encoder must replace "
        "every set of it: name all its datasets (-d all).",
    ),
]
WeightsOption = Annotated[
    Path | None, typer.Option(help="Local weights (file or model folder) for a single pretrained encoder.")
]
ComputeDtypeOption = Annotated[str, typer.Option("--compute-dtype", help="Model dtype: float32, bfloat16 or float16.")]
ChunkRowsOption = Annotated[int, typer.Option("--chunk-rows", help="Rows per Zarr chunk (the resume unit).")]
RepairOption = Annotated[
    bool,
    typer.Option(
        "--repair",
        help="Re-extract only the damaged or missing chunks of complete sets (see 'crsbench verify'), "
        "under the settings they were made with; retires the fits that read them.",
    ),
]
ThreadsOption = Annotated[
    int | None,
    typer.Option(
        "--threads",
        min=1,
        help="CPU: forwards run at once, one torch thread each, with decoding and perturbing in "
        "worker processes when above 1 (default: one per core, as torch counts them). Stored bytes do not depend on it.",
    ),
]
TrustPickleOption = Annotated[
    bool,
    typer.Option(
        "--trust-pickle",
        help="Load checkpoints that hold pickled Python objects (training checkpoints) with "
        "weights_only=False; only for files you trust (or convert once: crsbench weights convert --trust-pickle).",
    ),
]
AllowDownloadOption = Annotated[
    bool,
    typer.Option(
        "--allow-download",
        help="Let hub ids fetch missing weights into the Hugging Face cache "
        "(default: offline; also CRSBENCH_ALLOW_DOWNLOAD=1).",
    ),
]
ScreenOption = Annotated[
    bool,
    typer.Option(
        "--screen",
        help="Write only the clean condition (every depth, every row) for a cheap first screen "
        "('crsbench screen'); probes never read such a set, and a later plain extract completes "
        "it reusing those features, byte for byte as one run would. Not with --scheduler.",
    ),
]
SchedulerOption = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        help="A dask.distributed scheduler (tcp://host:8786): its workers extract the row chunks "
        "into the shared store (S3, GCS, NFS); GPU workers need --resources GPU=1.",
    ),
]


@app.command("extract")
def extract_command(
    encoder: EncoderOption,
    dataset: Annotated[list[str], typer.Option("--dataset", "-d", help="Dataset name; repeatable; 'all'.")],
    store: StoreOption = None,
    db: DbOption = default_db_path(),
    device: Annotated[str, typer.Option(help="cpu or cuda (cuda:N).")] = DEFAULTS.device,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Images per forward pass.")] = DEFAULTS.batch_size,
    force: ForceOption = False,
    weights: WeightsOption = None,
    dtype: Annotated[str, typer.Option(help="Stored dtype: float16 or float32.")] = DEFAULTS.dtype,
    compute_dtype: ComputeDtypeOption = DEFAULTS.compute_dtype,
    chunk_rows: ChunkRowsOption = DEFAULTS.chunk_rows,
    repair: RepairOption = False,
    threads: ThreadsOption = None,
    encoders_file: EncodersFileOption = None,
    allow_code: AllowCodeOption = False,
    trust_pickle: TrustPickleOption = False,
    allow_download: AllowDownloadOption = False,
    scheduler: SchedulerOption = None,
    screen: ScreenOption = False,
) -> None:
    """Extract features for every depth and condition, once per encoder and dataset (resumable)."""
    bench = Bench(db, store)
    options = ExtractOptions(
        device=device,
        batch_size=batch_size,
        force=force,
        weights=weights,
        dtype=dtype,
        compute_dtype=compute_dtype,
        chunk_rows=chunk_rows,
        allow_download=allow_download,
        threads=threads,
        trust_pickle=trust_pickle,
        repair=repair,
        screen=screen,
    )
    config = ExtractConfig(options, tuple(encoders_file or ()), allow_code, scheduler)
    with progress() as bar:
        frame = bench.extract(encoder, dataset, config, progress=bar)
    render_extract(bench.store, frame)


@app.command("verify")
def verify_command(
    encoder: Annotated[list[str] | None, typer.Option("--encoder", "-e", help="Only this encoder; repeatable.")] = None,
    dataset: Annotated[list[str] | None, typer.Option("--dataset", "-d", help="Only this dataset; repeatable.")] = None,
    store: StoreOption = None,
    db: DbOption = default_db_path(),
) -> None:
    """Check every feature chunk (checksum, content manifest) and Parquet part; exit 1 if any is damaged."""
    bench = Bench(db, store)
    report = bench.verify(encoder or [], dataset or [])
    shown = report.damaged.drop(columns=["fit_ids"])
    if not report.ok and not console.json_mode:
        print_frame(shown, title="damaged objects (repair: the command shown; fits: that read them)", key="damaged")
    emit(
        {
            "store": bench.store,
            "feature_sets": report.sets,
            "damaged": report.damaged,
            "parts": report.parts_checked,
            "parts_unverifiable": report.parts_unverifiable,
        },
        "\n".join(
            [
                *(
                    f"  {r['encoder']} x {r['dataset']}: {r['status']} ({r['chunks']} chunks)"
                    for _, r in report.sets.iterrows()
                ),
                f"  parquet parts: {report.parts_checked} checked"
                + (f", {report.parts_unverifiable} unverifiable (no checksums)" if report.parts_unverifiable else ""),
                "damaged objects found: see the table above" if not report.ok else "no damage found",
            ]
        ),
    )
    if not report.ok:
        raise typer.Exit(1)


@app.command("encoders")
def encoders_command(
    check_weights: Annotated[
        bool,
        typer.Option(
            "--check-weights",
            help="Also say whether each pretrained encoder's weights, and each image-text encoder's text "
            "tower (weights and tokenizer files), are available locally.",
        ),
    ] = False,
    encoders_file: EncodersFileOption = None,
    allow_code: AllowCodeOption = False,
    db: DbOption = default_db_path(),
) -> None:
    """List every encoder (built-in, TOML, plugin) with its origin, family, scope, loader, input size."""
    rows = Bench(db).encoders(encoders_file or [], allow_code, check_weights)
    if console.json_mode:
        emit({"encoders": rows})
        return
    frame = pd.DataFrame(rows).drop(columns="weights_needed", errors="ignore")
    title = "encoders (also: timm:<name>, hf:<repo or folder>, open_clip:<arch>)"
    # The ids (and what is missing) are what one types or acts on: never wrapped or cut.
    console.print(fitted_table(frame, title, ENCODER_COLUMNS, console.out.width))
    if check_weights and any(str(r[k]).startswith("missing") for r in rows for k in ("weights", "text_tower")):
        console.print(Bench.missing_weights_hint())


@app.command("feature-sets")
def feature_sets_command(
    store: StoreOption = None,
    db: DbOption = default_db_path(),
    sync: Annotated[bool, typer.Option("--sync", help="Rescan the store and update the catalog first.")] = False,
    confirm: Annotated[
        tuple[str, str] | None,
        typer.Option(
            "--confirm",
            metavar="ENCODER DATASET",
            help="Accept the feature set of ENCODER on DATASET that extraction flagged degenerate "
            "(constant features, or a rank far below its width), so the encoder is ranked again.",
        ),
    ] = None,
) -> None:
    """List the feature-set catalog (dataset, encoder, regime, dims, complete, screened, degenerate)."""
    bench = Bench(db, store)
    if confirm is not None:
        reason = bench.confirm_feature_set(*confirm)
        emit(
            {"encoder": confirm[0], "dataset": confirm[1], "confirmed": reason},
            f"confirmed feature set {confirm[0]} x {confirm[1]} as it is ({reason}); it is ranked again",
        )
        return
    frame = bench.feature_sets(sync=sync)
    cols = ["dataset_id", "encoder_id", "regime", "dim", "dtype", "n_images", "complete", "screened"]
    cols += ["pretrained", "store_url"]
    cols += [c for c in ("degenerate", "degenerate_confirmed_at") if c in frame.columns]
    print_frame(frame[cols] if not frame.empty else frame, title="feature sets", key="feature_sets")
