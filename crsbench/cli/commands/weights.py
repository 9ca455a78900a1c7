"""CLI: `crsbench weights convert` (owned by the features stage)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crsbench.cli.app import app
from crsbench.cli.output import emit
from crsbench.core import default_db_path

weights_app = typer.Typer(help="Convert encoder weight files.", no_args_is_help=True)
app.add_typer(weights_app, name="weights")


@weights_app.command("convert")
def weights_convert(
    source: Annotated[Path, typer.Argument(help="A torch checkpoint (.pth, .pt, .bin, .ckpt) or safetensors file.")],
    out: Annotated[Path, typer.Argument(help="The safetensors file to write (tensors only).")],
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing OUT file.")] = False,
    trust_pickle: Annotated[
        bool,
        typer.Option(
            "--trust-pickle",
            help="Unpickle a checkpoint holding pickled Python objects (they run code as they load); "
            "only for files you trust.",
        ),
    ] = False,
) -> None:
    """Convert a checkpoint to safetensors: its tensors and state dicts kept, pickled Python objects left behind.

    A checkpoint holding pickled Python objects (a training checkpoint's args) is refused, naming
    them, unless --trust-pickle: then it is unpickled (weights_only=False) after a warning naming
    it. The result loads without --trust-pickle.
    """
    from crsbench.bench import Bench

    kept = Bench(default_db_path()).convert_weights(source, out, force=force, trust_pickle=trust_pickle)
    parts = ", ".join(f"{name} ({n} tensors)" for name, n in kept.items())
    emit({"source": str(source), "out": str(out), "kept": kept}, f"wrote {out}: {parts}")
