"""CLI: `crsbench results keygen|export|import|board` — results that travel between sites (METHODS.md §22)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from crsbench.bench import Bench
from crsbench.cli.app import DbOption, app
from crsbench.cli.output import console, emit, print_frame, progress
from crsbench.core import CrsbenchError, default_db_path

if TYPE_CHECKING:
    from crsbench.exchange.importing import ImportPlan

results_app = typer.Typer(
    help="Results that travel between sites: signed bundles of metrics, never images (export, import, board).",
    no_args_is_help=True,
)
app.add_typer(results_app, name="results")

TRUSTED_ENV = "CRSBENCH_TRUSTED_KEYS"
TrustedOption = Annotated[
    Path | None,
    typer.Option(
        "--trusted-keys",
        help=f"File of trusted public keys ('ed25519 <base64> [name]' lines, e.g. a site's .pub); default ${TRUSTED_ENV}.",
    ),
]
UnsignedOption = Annotated[
    bool,
    typer.Option("--allow-unsigned", help="Accept an unsigned bundle or one from a key not trusted, marked untrusted."),
]


def _trusted(option: Path | None) -> Path | None:
    return option or (Path(os.environ[TRUSTED_ENV]) if os.environ.get(TRUSTED_ENV) else None)


@results_app.command("keygen")
def keygen_command(
    name: Annotated[str, typer.Option("--name", help="Key name: the files <name>.key and <name>.pub.")],
    folder: Annotated[Path, typer.Option("--dir", help="Folder to write the key pair to.")] = Path("."),
) -> None:
    """Create an Ed25519 key pair for signing bundles; share the .pub, keep the .key."""
    private, public = Bench(default_db_path()).results_keygen(folder, name)
    emit({"private_key": str(private), "public_key": str(public)}, f"wrote {private} (keep it) and {public} (share it)")


@results_app.command("export")
def export_command(
    panel: Annotated[str, typer.Option("--panel", help="Frozen panel whose members' results are exported.")],
    site: Annotated[str, typer.Option("--site", help="This site's name, as other sites will see it.")],
    out: Annotated[Path, typer.Option("--out", help="Bundle file to write (.zip).")],
    key: Annotated[Path | None, typer.Option("--key", help="Private key (.key from keygen) to sign with.")] = None,
    include_predictions: Annotated[
        bool,
        typer.Option(
            "--include-predictions", help="Also ship per-image predictions with image ids (only where that may leave)."
        ),
    ] = False,
    replicates: Annotated[int, typer.Option("--replicates", help="Bootstrap replicates shipped per cell.")] = 200,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap draws.")] = 0,
    db: DbOption = default_db_path(),
) -> None:
    """Export a site's results for one frozen panel as a bundle: metrics, cells, bootstrap replicates,
    the panel and the protocol; no image ids, paths, predictions, embeddings or labels by default."""
    with progress() as bar:
        summary = Bench(db).results_export(
            panel, site, out, key=key, include_predictions=include_predictions, replicates=replicates, seed=seed,
            progress=bar,
        )  # fmt: skip
    signed = f"signed by {summary.signed_by}" if summary.signed_by else "unsigned (sign with --key)"
    parts = ", ".join(f"{k} {v:,}" for k, v in summary.parts.items())
    lines = [f"wrote {summary.path} ({signed}): site {summary.site}, panel {summary.panel}; rows: {parts}"]
    if summary.added_by_predictions:
        lines.append(f"--include-predictions added {summary.added_by_predictions}")
    emit({**summary.__dict__, "path": str(summary.path)}, "\n".join(escape(x) for x in lines))


def _show(plan: ImportPlan) -> None:
    trust = f"signed by {plan.signed_by}" + ("" if plan.trusted else " (untrusted)") if plan.signed_by else "unsigned"
    console.print(f"bundle {plan.bundle.digest[:16]} from site {plan.site!r}, panel {plan.panel!r}, {trust}")
    for note in plan.notes:
        console.print(f"  {escape(note)}")
    print_frame(plan.preview, title="what it adds: the site's scores against this warehouse's anchors, and ours")


def _confirm(yes: bool, dry_run: bool) -> Callable[[ImportPlan], bool]:
    def ask(plan: ImportPlan) -> bool:
        if not console.json_mode:
            _show(plan)
        if dry_run:
            return False
        if yes:
            return True
        if sys.stdin.isatty():
            return typer.confirm("Import it?", err=True)
        raise CrsbenchError("nothing imported: confirm with --yes (or run on a terminal to be asked)")

    return ask


@results_app.command("import")
def import_command(
    bundle: Annotated[Path, typer.Argument(help="Bundle file from `crsbench results export`.")],
    trusted_keys: TrustedOption = None,
    allow_unsigned: UnsignedOption = False,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Import without asking, after showing what it adds.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Check and show what it would add; write nothing.")
    ] = False,
    db: DbOption = default_db_path(),
) -> None:
    """Check a bundle (digests, signature, panel, protocol), show what it adds, then add it apart from
    this warehouse's own results; the same bundle twice adds nothing."""
    result = Bench(db).results_import(
        bundle, trusted_keys=_trusted(trusted_keys), allow_unsigned=allow_unsigned, confirm=_confirm(yes, dry_run)
    )
    if result.plan.already:
        human = f"bundle {result.plan.bundle.digest[:16]} is already imported: nothing added"
    elif result.declined:
        human = "nothing imported" + (" (dry run)" if dry_run else "")
    else:
        human = "imported: " + ", ".join(f"{t} {n:,}" for t, n in result.added.items())
    emit(
        {"bundle_digest": result.plan.bundle.digest, "site": result.plan.site, "added": result.added,
         "already": result.plan.already, "preview": result.plan.preview},
        human,
    )  # fmt: skip


@results_app.command("board")
def board_command(
    folder: Annotated[Path, typer.Argument(help="Folder of bundle files (*.zip).")],
    trusted_keys: TrustedOption = None,
    allow_unsigned: UnsignedOption = False,
    db: DbOption = default_db_path(),
) -> None:
    """Build one warehouse from a folder of validated bundles: a results board any DuckDB client reads
    (view site_scores); re-running adds only new bundles."""
    summary = Bench(db).results_board(folder, trusted_keys=_trusted(trusted_keys), allow_unsigned=allow_unsigned)
    print_frame(summary.scores, title=f"board {db}: panel {summary.panel} (anchors from {summary.anchors_from})")
    emit(
        {"db": str(summary.db), "panel": summary.panel, "added": summary.added, "already": summary.already},
        f"added {len(summary.added)} bundle(s), {len(summary.already)} already there; query it: "
        f'crsbench sql --db {db} "select * from site_scores"',
    )
