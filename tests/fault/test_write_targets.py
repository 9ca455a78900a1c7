"""Commands that write a user-named file cannot destroy the warehouse, a device or their own input,
and `weights convert` runs no pickle's code without --trust-pickle (issue 40 points 1, 2, 3 and the
export half of 5). Each case runs the CLI in a subprocess and shows exit 1, one line `error: ...`,
and the warehouse byte-identical afterwards (the file, its WAL and every file of its parts folder).

Refusals happen before any work: the report cases run with `build_report` replaced by a stub that
leaves a marker file, so a refusal after rendering started would show.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from support.fault_support import env, one_line_user_error
from support.runs_factory import encoder_runs, frame

from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.parts import parts_dir_for

RUN_CLI = "import sys\nfrom crsbench.cli import main\nsys.exit(main())\n"
# Rendering must never start for a refused target: the stub marks it and fails loudly.
NO_RENDERING = """import crsbench.report as report
def _rendered(*args, **kw):
    open("RENDERED", "w").close()
    raise SystemExit(3)
report.build_report = _rendered
"""


def cli(args: list[str], cwd: Path, prelude: str = "") -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-c", prelude + RUN_CLI, *args],
        cwd=cwd,
        env={k: v for k, v in env().items() if k not in ("CRSBENCH_DEBUG", "CRSBENCH_DB", "CRSBENCH_STORE")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, proc.stderr


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def warehouse_state(db: Path) -> dict[str, str]:
    """Every file of the warehouse (the DuckDB file, a WAL, each part and sidecar) -> its SHA-256."""
    files = [db, db.with_name(db.name + ".wal"), *sorted(p for p in parts_dir_for(db).rglob("*") if p.is_file())]
    return {str(p.relative_to(db.parent)): digest(p) for p in files if p.exists()}


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("targets") / "crsbench.duckdb"
    with Warehouse.open(db) as wh:
        wh.append_runs(frame(encoder_runs("e1")))  # run parts pending beside the file
    return db


@pytest.fixture
def db(template, tmp_path) -> Path:
    shutil.copytree(template.parent, tmp_path / "w")
    return tmp_path / "w" / template.name


# -- 1. export over the warehouse ------------------------------------------------------------------


def test_export_over_the_warehouse_is_refused_even_with_force(db):
    before = warehouse_state(db)
    assert len([k for k in before if "/runs/part-" in k and not k.endswith((".sha256", "empty.parquet"))]) == 1
    for out in (db.name, f"sub/../{db.name}"):
        rc, err = cli(["export", "runs", "-o", out, "--force", "--db", db.name], db.parent)
        one_line_user_error(rc, err, out, "is the warehouse file", "name a file outside it")
    assert warehouse_state(db) == before


# -- 5. export into the parts folder ------------------------------------------------------------------


def test_export_into_the_parts_folder_is_refused(db):
    before = warehouse_state(db)
    parts = parts_dir_for(db)
    existing = next(p for p in (parts / "runs").glob("part-*.parquet") if "empty" not in p.name)
    forged = [
        parts / "runs" / "part-99999999-forged.parquet",  # a new part with new run ids
        parts / "batches" / "part-99999999-forged.parquet",  # and its matching batches part
        existing,  # a part already there, replaced
    ]
    for out in forged:
        rc, err = cli(["export", "runs", "-f", "parquet", "-o", str(out), "--force", "--db", str(db)], db.parent)
        one_line_user_error(rc, err, str(out), "inside the warehouse's parts folder")
    assert warehouse_state(db) == before


# -- 2. report --out / --figures --------------------------------------------------------------------


def test_report_over_the_warehouse_is_refused_before_rendering(db):
    before = warehouse_state(db)
    for out in (db, db.with_name(db.name + ".wal"), parts_dir_for(db) / "runs" / "r.html"):
        rc, err = cli(["report", "--out", str(out), "--force", "--db", str(db)], db.parent, NO_RENDERING)
        one_line_user_error(rc, err, str(out), "which no command may write")
    assert warehouse_state(db) == before
    assert not (db.parent / "RENDERED").exists()


def test_report_over_an_existing_file_needs_force(db):
    precious = db.parent / "precious.txt"
    precious.write_text("notes I keep\n")
    before = warehouse_state(db)
    rc, err = cli(["report", "--out", precious.name, "--db", db.name], db.parent, NO_RENDERING)
    one_line_user_error(rc, err, "precious.txt already exists; give --force")
    assert precious.read_text() == "notes I keep\n" and not (db.parent / "RENDERED").exists()
    rc, err = cli(["report", "--out", precious.name, "--force", "--db", db.name], db.parent)
    assert rc == 0, err
    assert precious.read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")
    assert warehouse_state(db) == before


def test_report_into_a_fifo_is_refused_and_the_fifo_stays(db):
    fifo = db.parent / "pipe.html"
    os.mkfifo(fifo)
    rc, err = cli(["report", "--out", str(fifo), "--force", "--db", str(db)], db.parent, NO_RENDERING)
    one_line_user_error(rc, err, str(fifo), "is a FIFO (named pipe), not a regular file")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert not (db.parent / "RENDERED").exists()


def test_report_into_a_folder_or_figures_onto_a_file_fails_at_once(db):
    folder = db.parent / "out"
    folder.mkdir()
    (db.parent / "figs.png").write_bytes(b"not a folder")
    cases = {
        ("--out", str(folder)): f"--out {folder} is a folder; name a file, e.g. {folder / 'report.html'}",
        ("--out", "r.html", "--figures", "figs.png"): "--figures figs.png is a file, not a folder",
    }
    for args, message in cases.items():
        start = time.monotonic()
        rc, err = cli(["report", *args, "--db", str(db)], db.parent, NO_RENDERING)
        one_line_user_error(rc, err, message)
        assert time.monotonic() - start < 30  # the start-up of a process, not 40-60 s of rendering
    assert not (db.parent / "RENDERED").exists() and not (db.parent / "r.html").exists()
    assert (db.parent / "figs.png").read_bytes() == b"not a folder" and not any(folder.iterdir())


# -- 3. weights convert ---------------------------------------------------------------------------


class _RunsCode:
    """A pickled object whose unpickling calls os.system (what a hostile checkpoint's `args` does)."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (self.command,)


def _hostile_checkpoint(folder: Path) -> tuple[Path, Path]:
    marker = folder / "MARKER"
    path = folder / "ckpt.pth"
    torch.save({"model": {"w": torch.ones(3)}, "args": _RunsCode(f"echo RAN >&2; touch {marker}")}, path)
    return path, marker


def test_convert_refuses_a_pickle_that_runs_code(tmp_path):
    path, marker = _hostile_checkpoint(tmp_path)
    source = digest(path)
    rc, err = cli(["weights", "convert", path.name, "out.safetensors"], tmp_path)
    one_line_user_error(rc, err, "ckpt.pth hold pickled Python objects", "system", "--trust-pickle")
    assert "posix.system" in err or "os.system" in err
    assert not marker.exists() and not (tmp_path / "out.safetensors").exists()
    assert digest(path) == source


def test_convert_with_trust_pickle_warns_before_loading(tmp_path):
    path, marker = _hostile_checkpoint(tmp_path)
    rc, err = cli(["weights", "convert", "--trust-pickle", path.name, "out.safetensors"], tmp_path)
    assert rc == 0, err
    lines = err.splitlines()
    warning = next(i for i, line in enumerate(lines) if line.startswith("warning: loading ckpt.pth"))
    assert "system" in lines[warning] and lines.index("RAN") > warning  # the warning came first
    assert marker.exists() and (tmp_path / "out.safetensors").is_file()


def test_convert_onto_its_own_source_is_refused(tmp_path):
    path = tmp_path / "self.pth"
    torch.save({"w": torch.arange(4.0)}, path)
    source = digest(path)
    for out in ("self.pth", "./self.pth"):
        rc, err = cli(["weights", "convert", "--force", "self.pth", out], tmp_path)
        one_line_user_error(rc, err, "is also the input self.pth")
    assert digest(path) == source


def test_convert_over_an_existing_output_needs_force(tmp_path):
    torch.save({"w": torch.arange(4.0)}, tmp_path / "a.pth")
    out = tmp_path / "a.safetensors"
    out.write_bytes(b"an earlier conversion")
    rc, err = cli(["weights", "convert", "a.pth", out.name], tmp_path)
    one_line_user_error(rc, err, "a.safetensors already exists; give --force")
    assert out.read_bytes() == b"an earlier conversion"
    rc, err = cli(["weights", "convert", "--force", "a.pth", out.name], tmp_path)
    assert rc == 0, err
    from safetensors.torch import load_file

    assert torch.equal(load_file(out)["w"], torch.arange(4.0))


# -- the protected paths of a Bench -------------------------------------------------------------------


def test_bench_protects_its_feature_store_and_adapters(db, tmp_path):
    from crsbench.bench import Bench
    from crsbench.core import CrsbenchError
    from crsbench.pipeline.stores import warehouse_paths

    store = tmp_path / "elsewhere" / "features.zarr"  # a store away from the warehouse file
    bench = Bench(db, store=str(store))
    before = warehouse_state(db)
    with pytest.raises(CrsbenchError, match="is inside the feature store"):
        bench.export("runs", "csv", store / "x.csv", force=True)
    with pytest.raises(CrsbenchError, match="is inside the adapters folder"):
        bench.report(tmp_path / "elsewhere" / "features.zarr.adapters" / "r.html", force=True)
    with pytest.raises(CrsbenchError, match="is the warehouse file"):
        bench.convert_weights(tmp_path / "a.pth", db, force=True)
    assert warehouse_state(db) == before and not store.exists()
    remote = [what for _, what in warehouse_paths(db, "s3://bucket/features.zarr")]
    assert remote == ["the warehouse file", "the warehouse's write-ahead log", "the warehouse's parts folder"]
