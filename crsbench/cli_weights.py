"""CLI: `crsbench weights convert` (owned by the features stage)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crsbench.cli_app import app
from crsbench.core import default_db_path
from crsbench.output import emit

weights_app = typer.Typer(help="Convert encoder weight files.", no_args_is_help=True)
app.add_typer(weights_app, name="weights")


@weights_app.command("convert")
def weights_convert(
    source: Annotated[Path, typer.Argument(help="A torch checkpoint (.pth, .pt, .bin, .ckpt) or safetensors file.")],
    out: Annotated[Path, typer.Argument(help="The safetensors file to write (tensors only).")],
) -> None:
    """Convert a checkpoint to safetensors: its tensors and state dicts kept, pickled Python objects left behind.

    The checkpoint is unpickled to read it (weights_only=False, after a warning naming it), so
    convert only files you trust; the result loads without --trust-pickle.
    """
    from crsbench.bench import Bench

    kept = Bench(default_db_path()).convert_weights(source, out)
    parts = ", ".join(f"{name} ({n} tensors)" for name, n in kept.items())
    emit({"source": str(source), "out": str(out), "kept": kept}, f"wrote {out}: {parts}")
